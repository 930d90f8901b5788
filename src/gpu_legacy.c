/* gpu_legacy.c - TEMPORARY (branch cuda-if): gpu_legacy.h's calls on the CUDA backend's
 * table. Each call builds the pic_state of S, calls the table and does what sim.c will do
 * itself: count the field step and the window cell, update the particle counts, generate the
 * injected columns, settle the timers at the last step. */
#include "gpu_legacy.h"

#ifdef EMPIC_CUDA
#include "empic.h"
#include <stdlib.h>
#include <string.h>

static const backend *cuda;
static int window_moved; /* gpu_window_shift ran this step */

static pic_state state_of(sim *S)
{
    pic_state st = {&S->f, &S->cl, S->sp, S->nsp, {0}, {0}, S->d.window_enabled,
                    S->win.cells, {0}};
    memcpy(st.ext_e, S->ext_e, sizeof st.ext_e);
    memcpy(st.ext_b, S->ext_b, sizeof st.ext_b);
    return st;
}

static void times_back(sim *S, const pic_state *st)
{
    for (int p = 0; p < PH_COUNT; p++)
        S->phase_s[p] += st->phase_s[p];
}

int gpu_available(char *name, size_t len)
{
    cuda = cuda_backend(name, len);
    return cuda != NULL;
}

int gpu_init(sim *S)
{
    char name[128];
    if (!cuda && !gpu_available(name, sizeof name)) {
        empic_report(S->d.file, 0, "backend \"cuda\": %s", name);
        return -1;
    }
    pic_state st = state_of(S);
    void *ctx = NULL;
    int rc = cuda->open(&st, &ctx);
    S->gpu = ctx;
    window_moved = 0;
    return rc;
}

void gpu_free(sim *S)
{
    if (!S->gpu)
        return;
    pic_state st = state_of(S);
    cuda->close(S->gpu, &st);
    S->gpu = NULL;
}

#define CALL(op, ...)                                                                          \
    do {                                                                                       \
        pic_state st_ = state_of(S);                                                           \
        cuda->op(S->gpu, &st_, __VA_ARGS__);                                                   \
        times_back(S, &st_);                                                                   \
    } while (0)

void gpu_b_half(sim *S)
{
    pic_state st = state_of(S);
    cuda->b_half(S->gpu, &st);
    times_back(S, &st);
}

void gpu_particles(sim *S, int want_ke, double *kinetic) { CALL(particles, want_ke, kinetic); }

void gpu_sort_prepare(sim *S) { (void)S; /* enqueued by `particles` */ }

void gpu_fields_rest(sim *S)
{
    pic_state st = state_of(S);
    cuda->fields(S->gpu, &st);
    times_back(S, &st);
    S->f.step++;
}

void gpu_window_shift(sim *S)
{
    pic_state st = state_of(S);
    cuda->window_shift(S->gpu, &st);
    times_back(S, &st);
    S->win.cells++; /* fbnd.shift: the backend's, written back by fetch_fields */
    window_moved = 1;
}

void gpu_sort(sim *S)
{
    long long dropped[DECK_MAX_SPECIES] = {0};
    CALL(sort, window_moved, dropped);
    for (int s = 0; s < S->nsp; s++)
        S->sp[s].np -= dropped[s];
    window_moved = 0;
    if (S->step + 1 >= S->d.steps) {
        pic_state st = state_of(S);
        cuda->finish(S->gpu, &st);
        times_back(S, &st);
    }
}

void gpu_window_inject(sim *S)
{
    const int ncy = S->cl.ncy, i = S->d.nx - 1;
    species col[DECK_MAX_SPECIES];
    int *add = empic_alloc((size_t)S->nsp * (ncy + 1) * sizeof(int), "injection");
    for (int s = 0; s < S->nsp; s++)
        species_column(&S->sp[s], &S->d, &S->cl, i, i + S->win.cells, &col[s],
                       add + s * (ncy + 1));
    CALL(inject, col, add);
    for (int s = 0; s < S->nsp; s++) {
        S->sp[s].np += col[s].np;
        species_free(&col[s]);
    }
    free(add);
}

void gpu_field_diag(sim *S, double *energy_e, double *energy_b, double *gauss)
{
    CALL(field_diag, energy_e, energy_b, gauss);
}

void gpu_fetch_fields(sim *S, int with_rho)
{
    CALL(fetch_fields, with_rho ? S->rho_sp : NULL);
}

void gpu_fetch_particles(sim *S)
{
    pic_state st = state_of(S);
    cuda->fetch_particles(S->gpu, &st);
}

void gpu_phasespace(sim *S, int s, const ps_grid *g, double *h) { CALL(phasespace, s, g, h); }

int gpu_phasespace_extent(sim *S, int s, const ps_grid *g, int axis, int positive,
                          double mm[2])
{
    pic_state st = state_of(S);
    return cuda->phasespace_extent(S->gpu, &st, s, g, axis, positive, mm);
}

species *gpu_fetch_tracked(sim *S, species *out)
{
    pic_state st = state_of(S);
    return cuda->fetch_tracked(S->gpu, &st, out);
}

void gpu_release_tracked(sim *S, species *out) { cuda->release_tracked(S->gpu, out); }

double gpu_bandwidth(void) { return cuda ? cuda->bandwidth(NULL) : 0.0; }

double gpu_bytes_per_particle(const sim *S)
{
    pic_state st = state_of((sim *)S);
    return S->gpu ? cuda->bytes_per_particle(S->gpu, &st) : 0.0;
}
#endif
