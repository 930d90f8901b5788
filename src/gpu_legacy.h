/* gpu_legacy.h - TEMPORARY (branch cuda-if): the former cuda/gpu.h calls, sim-based, kept on
 * top of the CUDA backend's table (backend.h) so that the unconverted sim.c, report.c,
 * insitu.c and tests link until sim.c calls the table itself. Delete with gpu_legacy.c. */
#ifndef GPU_LEGACY_H
#define GPU_LEGACY_H

#include "phasespace.h"
#include "sim.h"

int gpu_available(char *name, size_t len);
int gpu_init(sim *S);
void gpu_free(sim *S);
void gpu_b_half(sim *S);
void gpu_particles(sim *S, int want_ke, double *kinetic);
void gpu_sort_prepare(sim *S);
void gpu_fields_rest(sim *S);
void gpu_sort(sim *S);
void gpu_window_shift(sim *S);
void gpu_window_inject(sim *S);
void gpu_field_diag(sim *S, double *energy_e, double *energy_b, double *gauss);
void gpu_fetch_fields(sim *S, int with_rho);
void gpu_fetch_particles(sim *S);
void gpu_phasespace(sim *S, int s, const ps_grid *g, double *h);
int gpu_phasespace_extent(sim *S, int s, const ps_grid *g, int axis, int positive,
                          double mm[2]);
species *gpu_fetch_tracked(sim *S, species *out);
void gpu_release_tracked(sim *S, species *out);
double gpu_bandwidth(void);
double gpu_bytes_per_particle(const sim *S);

#endif
