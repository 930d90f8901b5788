/* gpu.h - the CUDA backend as seen from the host code (implemented in the .cu files of cuda/).
 * All state lives on the device between calls; the host copies only what diagnostics need. */
#ifndef GPU_H
#define GPU_H

#include "phasespace.h"
#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a usable CUDA device exists (its name in name), else 0. */
int gpu_available(char *name, size_t len);
/* Upload fields, particles and cluster tables of S (after the CPU load, Poisson solve and
 * half push back, so both backends start from identical state). 0, or -1 after reporting
 * (no device, too little memory: with the bytes the deck needs). */
int gpu_init(sim *S);
void gpu_free(sim *S);
/* The phases of one step, in the order sim_step calls them (design.md §3). Each adds its
 * device time (cudaEvent) to S->phase_s[]. */
void gpu_b_half(sim *S);                       /* step 1 (and 4) */
/* Steps 2-3 for all species; kinetic[s] = sum w m (gamma-1) dx dy when want_ke. */
void gpu_particles(sim *S, int want_ke, double *kinetic);
/* Right after gpu_particles: the sort's bookkeeping (overflow, leavers per cluster), so that
 * the host's wait for its result overlaps the field kernels (decks that drop no particles). */
void gpu_sort_prepare(sim *S);
void gpu_fields_rest(sim *S);                  /* steps 4-6 */
void gpu_sort(sim *S);                         /* step 7 */
/* The moving window (window.h) on the device: after gpu_fields_rest when window_due, shift
 * fields, PML state and particles one cell (the next gpu_sort drops the back column and
 * sorts every species); after that sort, inject the new column (host-generated with the
 * initial load's RNG keying, so identical to the CPU's). */
void gpu_window_shift(sim *S);
void gpu_window_inject(sim *S);
/* Field energies and max |div E - rho + rho_bg| computed on the device. */
void gpu_field_diag(sim *S, double *energy_e, double *energy_b, double *gauss);
/* Copy device E, B, J (and rho, per-species rho into S->rho_sp when per) to the host. */
void gpu_fetch_fields(sim *S, int with_rho);
/* Copy every species' particles and cluster tables to the host arrays. */
void gpu_fetch_particles(sim *S);
/* Phase-space histogram of species s binned on the device (gpu_diag.cu): sums of w per bin
 * of g into h (n[0] n[1] doubles), as insitu_hist_cpu. */
void gpu_phasespace(sim *S, int s, const ps_grid *g, double *h);
/* Extent of axis `axis` over species s on the device, as insitu_extent_cpu. */
int gpu_phasespace_extent(sim *S, int s, const ps_grid *g, int axis, int positive,
                          double mm[2]);
/* The tracked particles (id != 0) of every species compacted on the device and copied once
 * into a pinned host buffer: out[s] gets species s's cfg, per-cluster start/count and arrays
 * (id NULL where untracked), enough for output_dump; the arrays live until the next call or
 * gpu_free. Returns out; release its tables with gpu_release_tracked. */
species *gpu_fetch_tracked(sim *S, species *out);
void gpu_release_tracked(sim *S, species *out);
/* Device memory bandwidth in bytes/s (read + written, a large device-to-device copy). */
double gpu_bandwidth(void);
/* Device bytes per particle (slack included) for the report. */
double gpu_bytes_per_particle(const sim *S);

#ifdef __cplusplus
}
#endif
#endif
