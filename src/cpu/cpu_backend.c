/* cpu_backend.c - the CPU backend's table (backend.h): the host arrays are the live state;
 * each phase is an OpenMP loop over clusters (cpu_particles.c, cpu_sort.c, cpu_walls.c,
 * cpu_window.c) or over the mesh (cpu_fields.c, cpu_fbnd.c), timed here with the wall clock. */
#include "backend.h"
#include "cpu_walls.h"
#include "average.h"
#include "comm.h"
#include "empic.h"
#include "fbnd.h"
#include "memory.h"
#include "particle.h"
#include "cpu_deposit.h"
#include "cpu_particles.h"
#include "cpu_sort.h"
#include "cpu_collide.h"
#include "cpu_window.h"
#include "cpu_fields.h"
#include "cpu_fbnd.h"
#include "cpu_ionize.h"
#include "yee.h"
#include "laser.h"

#include <float.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The particle loops' two instances (cpu_avx512), timed against each other where both can
 * run: the first SIMD_STEPS particle phases alternate them (the first one not counted: it
 * touches the memory first), then the one with the shorter best phase is kept. */
#define SIMD_STEPS 7

typedef struct {
    int steps;      /* particle phases run so far, up to SIMD_STEPS */
    double best[2]; /* the shortest phase of each instance: the build's own, AVX-512 */
} cpu_ctx;

static int cpu_open(pic_state *st, void **ctx)
{
    cpu_ctx *c = empic_alloc(sizeof *c, "CPU backend");
    c->steps = cpu_simd_measured() ? 0 : SIMD_STEPS;
    c->best[0] = c->best[1] = DBL_MAX;
    *ctx = c;
    st->simd = cpu_avx512() ? "avx512" : "build";
    for (int k = 0; k < 3 && comm_size() > 1; k++) /* as the neighbours hold them: b_half */
        emf_guard_fill(st->f, st->f->b[k]);          /* may keep them so */
    return 0;
}

static void cpu_close(void *ctx, pic_state *st)
{
    (void)st;
    free(ctx);
}

/* B -= dt/2 curl E, the boundary terms (PML, laser B sources), guards refreshed. Over
 * several ranks of a box without field boundaries the update runs over the guards instead
 * of an exchange: from E and B guards equal to the cells they stand for, the same
 * operations give the neighbour's values bit for bit (the boundaries' updates hold state
 * for this rank's cells only). */
static void b_half(emf *f)
{
    const int wide = comm_size() > 1 && !f->fb;
    fields_b_half(f, wide);
    if (f->fb)
        fbnd_b(f);
    for (int c = 0; c < 3 && !wide; c++)
        emf_guard_fill(f, f->b[c]);
}

/* The seconds since t0 into `phase`, less those of the exchanges with the neighbour ranks
 * since c0 (comm_exchange_s), which go to PH_EXCHANGE. */
static void timed(pic_state *st, int phase, double t0, double c0)
{
    const double c = comm_exchange_s() - c0;
    st->phase_s[PH_EXCHANGE] += c;
    st->phase_s[phase] += omp_get_wtime() - t0 - c;
}

static void cpu_b_half(void *ctx, pic_state *st)
{
    (void)ctx;
    double t0 = omp_get_wtime(), c0 = comm_exchange_s();
    b_half(st->f);
    timed(st, PH_FIELD, t0, c0);
}

/* The fixed-point sums of J and rho (emf.acc), made at the first use. */
static long long *acc_of(emf *f)
{
    if (!f->acc)
        f->acc = empic_calloc(4 * f->size, sizeof(long long), "current sums");
    return f->acc;
}

/* n sums zeroed by all threads (a serial memset of the current's 3 x 8 bytes per node took
 * a few per cent of a step at 16 threads); the static split also places each page, at the
 * first step, with the thread that zeroes it every step. */
static void acc_zero(long long *a, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < n; k++)
        a[k] = 0;
}

static void cpu_particles(void *ctx, pic_state *st, int want_ke, double *kinetic)
{
    cpu_ctx *c = ctx;
    emf *f = st->f;
    const int trial = c->steps < SIMD_STEPS, which = c->steps % 2;
    if (trial)
        cpu_simd_take(which);
    const double t0 = omp_get_wtime();
    acc_zero(acc_of(f), 3 * f->size);
    for (int s = 0; s < st->nsp; s++) {
        particles_stats ps = {0};
        particles_advance(&st->sp[s], f, st->cl, &st->ext, want_ke,
                          st->lost + (size_t)s * st->cl->n, &ps);
        kinetic[s] = ps.kinetic;
        st->phase_s[PH_PUSH] += ps.t_push;
        st->phase_s[PH_DEPOSIT] += ps.t_deposit;
    }
    if (!trial)
        return;
    const double t = omp_get_wtime() - t0;
    if (c->steps > 0 && t < c->best[which])
        c->best[which] = t;
    if (++c->steps == SIMD_STEPS) {
        cpu_simd_take(c->best[1] <= c->best[0]);
        st->simd = cpu_avx512() ? "avx512" : "build";
    }
}

static int cpu_ionize(void *ctx, pic_state *st, long long step, int sums, ionize_stats *out)
{
    (void)ctx;
    for (int s = 0; s < st->nsp; s++) /* untimed: the "other" phase, as on the GPU */
        if (st->sp[s].ion)
            out[s] = ionize_species(&st->sp[s], &st->sp[st->sp[s].ion_to], st->f, st->cl,
                                    &st->ext, step, st->window_cells, sums);
    return 1;
}

static void cpu_fields(void *ctx, pic_state *st)
{
    (void)ctx;
    emf *f = st->f;
    double t0 = omp_get_wtime(), c0 = comm_exchange_s();
    b_half(f);
    fields_current_finish(f);
    if (f->fb) {
        fbnd_e_save(f); /* what Mur needs of E(n) */
        fbnd_flows(f, st->cl, &st->reg, st->flow, st->nslot, 0);
    }
    fields_e_advance(f);
    if (f->fb) {
        fbnd_e(f);      /* PML terms, laser E sources, Mur edges at E's time level n */
        fbnd_flows(f, st->cl, &st->reg, st->flow, st->nslot, 1);
    }
    for (int c = 0; c < 3; c++)
        emf_guard_fill(f, f->e[c]);
    timed(st, PH_FIELD, t0, c0);
}

static void cpu_window_shift(void *ctx, pic_state *st)
{
    (void)ctx;
    double t0 = omp_get_wtime(), c0 = comm_exchange_s();
    if (st->f->fb)
        fbnd_shift_flows(st->f, st->cl, &st->reg, st->flow, st->nslot);
    window_shift(st->f, st->sp, st->nsp, st->cl, st->lost);
    timed(st, PH_SORT, t0, c0);
}

static void cpu_sort(void *ctx, pic_state *st, int window, long long *dropped)
{
    (void)ctx;
    double t0 = omp_get_wtime(), c0 = comm_exchange_s();
    for (int s = 0; s < st->nsp; s++) {
        dropped[s] = 0;
        if (st->sp[s].immobile && !window)
            continue;
        dropped[s] = walls_drop(&st->sp[s], st->cl, window);
        dropped[s] += sort_clusters(&st->sp[s], st->cl); /* those sent to other ranks */
    }
    timed(st, PH_SORT, t0, c0);
}

static void cpu_inject(void *ctx, pic_state *st, species *col, const int *add)
{
    (void)ctx;
    double t0 = omp_get_wtime();
    const int i = st->f->nx - 1, stride = st->cl->ncy + 1;
    for (int s = 0; s < st->nsp; s++)
        species_inject(&st->sp[s], st->cl, i, &col[s], add + s * stride);
    st->phase_s[PH_SORT] += omp_get_wtime() - t0;
}

static void cpu_rho(void *ctx, pic_state *st, float *per)
{
    (void)ctx;
    emf *f = st->f;
    long long *a = acc_of(f) + 3 * f->size;
    emf_zero(f, f->rho);
    acc_zero(a, f->size);
    for (int s = 0; s < st->nsp; s++) {
        particles_rho(&st->sp[s], f, st->cl);
        if (per) { /* each species' own density, folded and filtered like J */
            float *r = per + (size_t)s * f->size;
            emf_acc_finish(f, a, r);
            fields_filter(f, r);
            for (size_t k = 0; k < f->size; k++)
                f->rho[k] += r[k];
            acc_zero(a, f->size);
        }
    }
    if (!per) { /* all species deposited together: fold and filter once */
        emf_acc_finish(f, a, f->rho);
        fields_filter(f, f->rho);
    }
    emf_guard_fill(f, f->rho);
}

/* The balance's field terms (ebal.h): the field energy outside the balance region r (E and
 * B) into out[0], the stagger term inside it into out[1]; per cluster (its cells row by row,
 * the components in order), summed over the ranks exactly, in cluster order. */
static void energy_layers(const emf *f, const clusters *cl, const ebal_region *r, double *out)
{
    double sum = 0.0, sum2 = 0.0;
    double *part = empic_calloc(2 * (size_t)cl->n, sizeof(double), "energy sums");
    const float hx = (float)(0.5 * f->dt / f->dx), hy = (float)(0.5 * f->dt / f->dy);
    laser_line ln[DECK_MAX_LASERS];
    const int nl = f->fb ? f->fb->nlasers : 0;
    for (int l = 0; l < nl; l++)
        ln[l] = laser_line_of(&f->fb->lasers[l], 0, f->step, f->dt, f->dx, f->dy,
                              f->fb->shift);
    float *const a[6] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2]};
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++) {
        if (!cl->own[c])
            continue;
        const int cx = c % cl->ncx, cy = c / cl->ncx;
        double v = 0.0, v2 = 0.0;
        for (int j = cl->y0[cy]; j < cl->y0[cy + 1]; j++)
            for (int i = cl->x0[cx]; i < cl->x0[cx + 1]; i++) {
                const int k = emf_idx(f, i, j);
                for (int m = 0; m < 6; m++)
                    if (!ebal_inside(r, m, i, j))
                        v += (double)a[m][k] * a[m][k];
                v2 += ebal_stagger(r, i, j, a[0], a[1], a[2], k, f->stride, hx, hy);
                for (int l = 0; l < nl; l++)
                    v2 += ebal_stagger_laser(r, &f->fb->lasers[l].beam, &ln[l],
                                             f->fb->lasers[l].axis, i, j, a[0], a[1], a[2], k,
                                             f->stride, hx, hy);
            }
        part[2 * c] = v;
        part[2 * c + 1] = v2;
    }
    comm_sum_double(part, 2 * (size_t)cl->n);
    for (int c = 0; c < cl->n; c++) {
        sum += part[2 * c];
        sum2 += part[2 * c + 1];
    }
    free(part);
    out[0] = yee_energy(sum, f->dx, f->dy);
    out[1] = yee_energy(sum2, f->dx, f->dy);
}

static void cpu_field_diag(void *ctx, pic_state *st, double *fe, double *fb, double *fl,
                           double *gauss)
{
    cpu_rho(ctx, st, NULL);
    *fe = emf_energy_e(st->f, st->cl);
    *fb = emf_energy_b(st->f, st->cl);
    energy_layers(st->f, st->cl, &st->reg, fl);
    *gauss = emf_gauss_max(st->f, st->f->rho);
}

static void cpu_flows(void *ctx, pic_state *st) { (void)ctx, (void)st; }

/* The host arrays are the state: a fetch only computes the charge densities asked for. */
static void cpu_fetch_fields(void *ctx, pic_state *st, float *per)
{
    if (per)
        cpu_rho(ctx, st, per);
}

static void cpu_fetch_particles(void *ctx, pic_state *st) { (void)ctx, (void)st; }

static void cpu_avg_add(void *ctx, pic_state *st, int first)
{
    emf *f = st->f;
    if (st->avg_q & FQ_RHO)
        cpu_rho(ctx, st, NULL);
    float *a[EMF_STATE];
    emf_state(f, a);
    for (int c = 0, n = 0; c < AVG_COUNT; c++) {
        if (!avg_on(st->avg_q, c))
            continue;
        double *sum = st->avg + (size_t)n++ * f->size;
        const float *src = a[avg_source(c)];
        const int sq = avg_square(c);
#pragma omp parallel for schedule(static)
        for (size_t k = 0; k < f->size; k++)
            avg_add(sum, src, sq, first, k);
    }
}

static void cpu_avg_fetch(void *ctx, pic_state *st) { (void)ctx, (void)st; }

/* The push reads the external fields' host arrays. */
static void cpu_ext_fields(void *ctx, pic_state *st) { (void)ctx, (void)st; }

/* Field probes: read from the host arrays. */
static void cpu_probe(void *ctx, pic_state *st, int need, int n, const probe_req *req,
                      float *out)
{
    emf *f = st->f;
    if (need & PROBE_NEED_RHO)
        cpu_rho(ctx, st, NULL);
    if (need & PROBE_NEED_J)
        for (int c = 0; c < 3; c++)
            emf_guard_fill(f, f->j[c]);
    const float *const a[PROBE_COUNT] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2],
                                         f->j[0], f->j[1], f->j[2], f->rho};
    for (int r = 0; r < n; r++) {
        const int m = req[r].m;
        out[r] = probe_gather(a[m], m < PROBE_JX ? st->ext.a[m] : NULL, m, req[r].k, f->stride,
                              req[r].x, req[r].y);
    }
}

static species *cpu_fetch_tracked(void *ctx, pic_state *st, species *out)
{
    (void)ctx, (void)out;
    return st->sp;
}

static void cpu_release_tracked(void *ctx, species *out) { (void)ctx, (void)out; }

static int cpu_phasespace_extent(void *ctx, pic_state *st, int s, const ps_grid *g, int axis,
                                 int positive, double mm[2])
{
    (void)ctx;
    const species *sp = &st->sp[s];
    const clusters *cl = st->cl;
    double lo = DBL_MAX, hi = -DBL_MAX;
#pragma omp parallel for schedule(dynamic) reduction(min : lo) reduction(max : hi)
    for (int c = 0; c < cl->n; c++)
        for (int p = sp->start[c]; p < sp->start[c] + sp->count[c]; p++) {
            double v = ps_value(g, axis, cell_i(sp->cell[p]), cell_j(sp->cell[p]), sp->x[p],
                                sp->y[p], sp->ux[p], sp->uy[p], sp->uz[p]);
            if (positive && !(v > 0.0))
                continue;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    double v[2] = {-lo, hi}; /* over the ranks */
    comm_max_double(v, 2);
    mm[0] = lo = -v[0];
    mm[1] = hi = v[1];
    return lo <= hi;
}

/* Per-thread histograms of fixed-point sums: the same for any thread and rank count. */
static void cpu_phasespace(void *ctx, pic_state *st, int s, const ps_grid *g, double *h)
{
    (void)ctx;
    const species *sp = &st->sp[s];
    const clusters *cl = st->cl;
    const size_t nb = (size_t)g->n[0] * (size_t)g->n[1];
    const int nt = omp_get_max_threads();
    /* 64-bit fixed-point sums of the weights (as the GPU): the same for any thread count */
    const float scale = fixed_scale(sp->wbound);
    long long *part = empic_calloc((size_t)nt * nb, sizeof(long long), "phase-space histogram");
#pragma omp parallel
    {
        long long *mine = part + (size_t)omp_get_thread_num() * nb;
#pragma omp for schedule(dynamic)
        for (int c = 0; c < cl->n; c++)
            for (int p = sp->start[c]; p < sp->start[c] + sp->count[c]; p++) {
                int b = ps_bin(g, cell_i(sp->cell[p]), cell_j(sp->cell[p]), sp->x[p], sp->y[p],
                               sp->ux[p], sp->uy[p], sp->uz[p]);
                if (b >= 0)
                    fixed_add(&mine[b], fixed_of(sp->w[p], scale));
            }
    }
    for (size_t b = 0; b < nb; b++)
        for (int t = 1; t < nt; t++)
            fixed_add(&part[b], part[(size_t)t * nb + b]);
    comm_sum_ll(part, nb); /* over the ranks: integer sums */
    for (size_t b = 0; b < nb; b++)
        h[b] = (double)part[b] / scale;
    free(part);
}

static void cpu_finish(void *ctx, pic_state *st) { (void)ctx, (void)st; }

/* Host memory bandwidth (read + write of a copy larger than the last-level cache) for the
 * timing table's floor; memory.c counts its buffers in the run's memory. 0 (not measured)
 * when the memory available would not hold them with room to spare. */
static double cpu_bandwidth(void *ctx)
{
    (void)ctx;
    size_t n = memory_probe_bytes();
    char src[64];
    const double avail = memory_available(src, sizeof src);
    if (avail >= 0 && avail < 2.0 * n + 64.0 * 1048576.0)
        return 0.0;
    char *a = malloc(n), *b = malloc(n);
    double best = 0.0;
    if (a && b) {
        memset(a, 1, n);
        memset(b, 2, n);
        for (int r = 0; r < 3; r++) {
            double t0 = omp_get_wtime();
#pragma omp parallel for
            for (int k = 0; k < 64; k++)
                memcpy(b + (size_t)k * (n / 64), a + (size_t)k * (n / 64), n / 64);
            double bw = 2.0 * n / (omp_get_wtime() - t0);
            best = bw > best ? bw : best;
        }
    }
    free(a);
    free(b);
    return best;
}

static void cpu_counts(void *ctx, pic_state *st, int *count)
{
    (void)ctx;
    for (int s = 0; s < st->nsp; s++)
        memcpy(count + (size_t)s * st->cl->n, st->sp[s].count, (size_t)st->cl->n * sizeof(int));
}

static int cpu_fits(void *ctx, const pic_state *st, size_t size, const size_t *alloc,
                    const long long *np)
{
    (void)ctx, (void)st, (void)size, (void)alloc, (void)np;
    return 1;
}

static double cpu_particle_bytes(void *ctx, const pic_state *st)
{
    (void)ctx;
    double bytes = 0.0;
    for (int s = 0; s < st->nsp; s++)
        bytes += species_bytes(&st->sp[s]);
    return bytes;
}

const backend cpu_backend = {
    .name = "cpu",
    .kind = BACKEND_CPU,
    .on_host = 1,
    .open = cpu_open,
    .close = cpu_close,
    .b_half = cpu_b_half,
    .particles = cpu_particles,
    .ionize = cpu_ionize,
    .fields = cpu_fields,
    .window_shift = cpu_window_shift,
    .sort = cpu_sort,
    .collide = cpu_collide,
    .inject = cpu_inject,
    .rho = cpu_rho,
    .field_diag = cpu_field_diag,
    .flows = cpu_flows,
    .fetch_fields = cpu_fetch_fields,
    .fetch_particles = cpu_fetch_particles,
    .avg_add = cpu_avg_add,
    .avg_fetch = cpu_avg_fetch,
    .ext_fields = cpu_ext_fields,
    .probe = cpu_probe,
    .fetch_tracked = cpu_fetch_tracked,
    .release_tracked = cpu_release_tracked,
    .phasespace = cpu_phasespace,
    .phasespace_extent = cpu_phasespace_extent,
    .counts = cpu_counts,
    .fits = cpu_fits,
    .finish = cpu_finish,
    .bandwidth = cpu_bandwidth,
    .particle_bytes = cpu_particle_bytes,
};
