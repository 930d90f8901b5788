/* gpu_debug.cu - EMPIC_GPU_CHECK=1: copy the device state back around every phase and
 * verify it on the host (a debugging aid; slow; gpu_debug_at is the only entry). Fields: no
 * NaN or infinity. Push: each particle's new momentum and position equal a host
 * recomputation with the same particle.h functions from the same fields (it shows the nvcc
 * miscompile that gpu_particles.cu's gather_tile works around). After a move: each
 * cluster's 9-bin histogram matches its particles' migration codes and each code matches
 * where the particle went. After a sort: every particle is in its cluster's segment with
 * code 0, no segment overflows, and no particle is lost. The first violations are reported
 * with step, cluster and particle; then the run stops. */
#include "gpu_internal.h"
#include "particle.h"

#include <stdlib.h>

static void *fetch(const void *d, size_t bytes)
{
    void *h = empic_alloc(bytes ? bytes : 1, "debug copy");
    GPU_CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

/* Host copies of the n pairs at d: *a the first values, *b the second (b NULL: only the
 * first). */
static void fetch_pairs(const float2 *d, size_t n, float **a, float **b)
{
    *a = (float *)empic_alloc(n ? n * 4 : 1, "debug copy");
    if (b)
        *b = (float *)empic_alloc(n ? n * 4 : 1, "debug copy");
    gpu_get_pairs(*a, b ? *b : NULL, d, n);
}

/* less: particles the sort just dropped (np is updated by the caller after the sort). */
static void debug_clusters(gpu_state *g, const pic_state *st, int after_sort,
                        const long long *less)
{
    const clusters *cl = st->cl;
    const long step = st->f->step;
    GPU_CK(cudaStreamSynchronize(g->stream));
    long long errors = 0;
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        if (!d->mobile)
            continue;
        const size_t n = d->alloc, nc = (size_t)g->ncl;
        uint32_t *cell = (uint32_t *)fetch(d->cell, n * 4);
        uint8_t *code = (uint8_t *)fetch(d->code, n);
        float *x, *y, *u;
        fetch_pairs(d->xy, n, &x, &y);
        fetch_pairs(d->uxy, n, &u, NULL);
        int *start = (int *)fetch(d->start, nc * 4), *count = (int *)fetch(d->count, nc * 4);
        int *cap = (int *)fetch(d->cap, nc * 4), *hist = (int *)fetch(d->hist, nc * 36);
        long long total = 0, movers = 0;
        for (int c = 0; c < g->ncl && errors < 10; c++) {
            const int cx = c % cl->ncx, cy = c / cl->ncx;
            int h[9] = {0};
            total += count[c];
            if (count[c] > cap[c] || count[c] < 0) {
                empic_report(NULL, 0, "check step %ld: cluster %d count %d cap %d", step, c,
                             count[c], cap[c]);
                errors++;
            }
            if (c + 1 < g->ncl && start[c] + cap[c] > start[c + 1]) {
                empic_report(NULL, 0, "check step %ld: segments %d and %d overlap", step, c,
                             c + 1);
                errors++;
            }
            for (int p = start[c]; p < start[c] + count[c] && errors < 10; p++) {
                int i = cell_i(cell[p]), j = cell_j(cell[p]);
                int ax = cl->cx_of[i < cl->x0[cl->ncx] ? i : 0], ay = cl->cy_of[j < cl->y0[cl->ncy] ? j : 0];
                int dx = mig_dx(code[p]), dy = mig_dy(code[p]);
                h[mig_bin(dx, dy)]++;
                int ok = after_sort ? (ax == cx && ay == cy && code[p] == 0)
                                    : (ax == wrap_index(cx + dx, cl->ncx) && ay == wrap_index(cy + dy, cl->ncy));
                ok = ok && x[p] >= 0.0f && x[p] < 1.0f && y[p] >= 0.0f && y[p] < 1.0f &&
                     isfinite(u[p]);
                if (!ok) {
                    empic_report(NULL, 0, "check step %ld (%s): species %d cluster %d (%d,%d) "
                                 "start %d count %d cap %d: slot %d cell (%d,%d) is in cluster "
                                 "(%d,%d), code %u (%d,%d), offset (%a, %a) ux %g", step,
                                 after_sort ? "sort" : "move", s, c, cx, cy, start[c], count[c],
                                 cap[c], p - start[c], i, j, ax, ay, code[p], dx, dy, x[p], y[p], u[p]);
                    errors++;
                }
            }
            for (int b = 0; b < 9; b++)
                movers += b == 4 ? 0 : h[b];
            if (!after_sort && cl->own[c]) /* another rank's: the halo's, or stale */
                for (int b = 0; b < 9; b++)
                    if (h[b] != hist[9 * c + b] && errors < 10) {
                        empic_report(NULL, 0, "check step %ld: cluster %d bin %d: histogram %d, "
                                     "codes %d", step, c, b, hist[9 * c + b], h[b]);
                        errors++;
                    }
        }
        if (!after_sort)
            fprintf(stderr, "check step %ld: species %d: %lld of %lld particles cross a cluster "
                    "border\n", step, s, movers, total);
        const long long np = st->sp[s].np - (less ? less[s] : 0);
        if (total != np) {
            empic_report(NULL, 0, "check step %ld: species %d has %lld particles, not %lld",
                         step, s, total, np);
            errors++;
        }
        free(cell);
        free(code);
        free(x);
        free(u);
        free(y);
        free(start);
        free(count);
        free(cap);
        free(hist);
    }
    if (errors)
        EMPIC_DIE("EMPIC_GPU_CHECK: %lld violations at step %ld", errors, step);
}

/* Non-finite values in the device's fields (guards included), reported after `phase`. */
static void debug_fields(gpu_state *g, const pic_state *st, const char *phase)
{
    const long step = st->f->step;
    GPU_CK(cudaStreamSynchronize(g->stream));
    const float *dev[10] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1],
                            g->b[2], g->j[0], g->j[1], g->j[2], g->rho};
    static const char *names[10] = {"Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy", "Jz", "rho"};
    long long bad = 0;
    for (int c = 0; c < 10; c++) {
        float *a = (float *)fetch(dev[c], g->size * sizeof(float));
        for (size_t k = 0; k < g->size; k++)
            if (!isfinite(a[k]) && bad++ < 5)
                empic_report(NULL, 0, "check step %ld after %s: %s(%d,%d) = %g", step, phase,
                             names[c], (int)(k % g->stride) - EMF_GUARD,
                             (int)(k / g->stride) - EMF_GUARD, a[k]);
        free(a);
    }
    if (bad)
        EMPIC_DIE("EMPIC_GPU_CHECK: %lld non-finite field values at step %ld", bad, step);
}

/* Push verification: before the particle kernels, keep the particles and fields; after them,
 * recompute each particle's push and move on the host with the same particle.h functions and
 * report the first particles that differ. */
typedef struct {
    size_t n;
    uint32_t *cell;
    float *x, *y, *u[3];
    uint8_t *z;                /* charge states of an ionizing species, else NULL */
    int *start, *count;
    float *f[6];
} snapshot;

static snapshot snap[DECK_MAX_SPECIES];

static void debug_snapshot(gpu_state *g)
{
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        snapshot *p = &snap[s];
        p->n = d->alloc;
        p->cell = (uint32_t *)fetch(d->cell, p->n * 4);
        fetch_pairs(d->xy, p->n, &p->x, &p->y);
        fetch_pairs(d->uxy, p->n, &p->u[0], &p->u[1]);
        fetch_pairs(d->uzw, p->n, &p->u[2], NULL);
        p->z = d->z ? (uint8_t *)fetch(d->z, p->n) : NULL;
        p->start = (int *)fetch(d->start, (size_t)g->ncl * 4);
        p->count = (int *)fetch(d->count, (size_t)g->ncl * 4);
        for (int c = 0; c < 3; c++) {
            p->f[c] = (float *)fetch(g->e[c], g->size * 4);
            p->f[3 + c] = (float *)fetch(g->b[c], g->size * 4);
        }
    }
}

static void debug_verify(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    GPU_CK(cudaStreamSynchronize(g->stream));
    int shown = 0;
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        snapshot *p = &snap[s];
        if (d->mobile) {
            float *u[3], *x;
            fetch_pairs(d->uxy, p->n, &u[0], &u[1]);
            fetch_pairs(d->uzw, p->n, &u[2], NULL);
            fetch_pairs(d->xy, p->n, &x, NULL);
            const float qdt2m = boris_qdt2m(f->dt, d->qm);
            const move_step ms = move_step_of(f->dt, f->dx, f->dy, d->q);
            long long bad = 0;
            for (int c = 0; c < g->ncl; c++)
                for (int q = p->start[c]; q < p->start[c] + p->count[c]; q++) {
                    float e[6], v[3] = {p->u[0][q], p->u[1][q], p->u[2][q]};
                    int i = cell_i(p->cell[q]), j = cell_j(p->cell[q]);
                    for (int m = 0; m < 6; m++) /* with the external fields, as the push */
                        e[m] = gather_yee_ext(p->f[m], st->ext.a[m], m, emf_idx(f, i, j),
                                              f->stride, p->x[q], p->y[q]) + st->ext.u[m];
                    const float *b = e + 3;
                    boris_push(v, e, b, p->z ? qdt2m * (float)p->z[q] : qdt2m);
                    const cluster_tile T = cluster_tile_of(st->cl->x0, st->cl->y0, st->cl->ncx, c);
                    uint32_t c1 = p->cell[q];
                    float x1 = p->x[q], y1 = p->y[q], w[24];
                    int o[3], dcx, dcy;
                    particle_move(&ms, &T, f->nx, f->ny, T.w, v[0], v[1], v[2], 1.0f, &c1, &x1,
                                  &y1, &dcx, &dcy, o, w, 1);
                    int ok = 1;
                    for (int a = 0; a < 3; a++)
                        ok &= fabsf(u[a][q] - v[a]) <= 1e-5f * (1.0f + fabsf(v[a]));
                    ok &= fabsf(x[q] - x1) < 1e-5f || fabsf(fabsf(x[q] - x1) - 1.0f) < 1e-5f;
                    if (!ok && bad++ < 4 && shown++ < 8) {
                        int cx = c % g->ncx, cy = c / g->ncx;
                        empic_report(NULL, 0, "verify step %ld: species %d cluster %d (%d,%d) "
                                     "slot %d of %d, cell (%d,%d) = tile (%d,%d), x (%g,%g): u "
                                     "(%g,%g,%g) -> device (%g,%g,%g), host (%g,%g,%g); E (%g,%g,%g) "
                                     "B (%g,%g,%g); x1 device %g host %g",
                                     f->step, s, c, cx, cy, q - p->start[c], p->count[c], i, j,
                                     i - st->cl->x0[cx] + 1, j - st->cl->y0[cy] + 1, p->x[q], p->y[q],
                                     p->u[0][q], p->u[1][q], p->u[2][q], u[0][q], u[1][q], u[2][q],
                                     v[0], v[1], v[2], e[0], e[1], e[2], b[0], b[1], b[2], x[q], x1);
                    }
                }
            if (bad)
                empic_report(NULL, 0, "verify step %ld: species %d: %lld particles differ", f->step,
                             s, bad);
            for (int a = 0; a < 3; a++)
                free(u[a]);
            free(x);
        }
        free(p->cell);
        free(p->x);
        free(p->y);
        free(p->z);
        for (int a = 0; a < 3; a++)
            free(p->u[a]);
        free(p->start);
        free(p->count);
        for (int c = 0; c < 6; c++)
            free(p->f[c]);
    }
}

void gpu_debug_at(gpu_state *g, const pic_state *st, enum gpu_debug_point at)
{
    gpu_fields_join(g); /* the state checked is the one the field phase leaves */
    switch (at) {
    case DBG_BEFORE_MOVE:
        debug_clusters(g, st, 1, NULL);
        debug_snapshot(g);
        break;
    case DBG_AFTER_MOVE:
        debug_verify(g, st);
        debug_fields(g, st, "move and deposit");
        debug_clusters(g, st, 0, NULL);
        break;
    case DBG_B_HALF:
        debug_fields(g, st, "B half step");
        break;
    case DBG_FIELDS:
        debug_fields(g, st, "field advance");
        break;
    case DBG_RHO:
        debug_fields(g, st, "charge deposit");
        break;
    case DBG_AFTER_SORT:
        debug_clusters(g, st, 1, g->dropped);
        break;
    }
}
