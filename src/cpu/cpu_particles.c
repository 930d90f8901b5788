/* cpu_particles.c - the CPU backend's particle phases: gather + Boris push, move + charge-conserving
 * deposit, charge density. OpenMP threads take clusters in turn: each thread accumulates its
 * cluster's current in a private tile with one ghost cell below and two above, then adds the
 * tile to the mesh's fixed-point sums (emf.acc). Integer sums do not depend on the order of
 * the adds, so the clusters need no order (no colours, no barrier between them: a thread
 * waits only at the end of the phase); the bands where tiles overlap take atomic adds. */
#include "cpu_particles.h"
#include "cpu_walls.h"
#include "comm.h"
#include "cpu_deposit.h"
#include "empic.h"
#include "particle.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* A cluster's private tile (cluster.h: its cells and ghosts, row stride c.w). */
typedef struct {
    cluster_tile c;
    float *a[3];
} tile;

static void tile_open(tile *t, float *store, const clusters *cl, int c, int ncomp)
{
    t->c = cluster_tile_of(cl->x0, cl->y0, cl->ncx, c);
    for (int k = 0; k < ncomp; k++) {
        t->a[k] = store + (size_t)k * t->c.w * t->c.h;
        memset(t->a[k], 0, (size_t)t->c.w * t->c.h * sizeof(float));
    }
}

/* The tile added to the fixed-point mesh sums (emf.acc from component `first` on): integer
 * adds, so the sum at a node shared with the tiles of other threads or ranks is the same in
 * any order. A tile reaches one cell below its cluster and two above, so the tiles of the
 * neighbouring clusters, added by other threads meanwhile, cover its band of three nodes at
 * each side and nothing inside: the band takes atomic adds (wrapping, as fixed_add). */
static void tile_add(const tile *t, const emf *f, int first, int ncomp)
{
    const float scale = f->acc_scale;
    const int w = t->c.w, h = t->c.h;
    for (int k = 0; k < ncomp; k++)
        for (int b = 0; b < h; b++) {
            long long *g = f->acc + (size_t)(first + k) * f->size +
                           emf_idx(f, t->c.i0, t->c.j0 + b);
            const float *l = t->a[k] + b * w;
            const int band = b < 3 || b >= h - 3;
            for (int a = 0; a < w; a++) {
                const long long v = fixed_of(l[a], scale);
                if (band || a < 3 || a >= w - 3)
                    __atomic_fetch_add((unsigned long long *)&g[a], (unsigned long long)v,
                                       __ATOMIC_RELAXED);
                else
                    fixed_add(&g[a], v);
            }
        }
}

static size_t tile_floats(const clusters *cl)
{
    return (size_t)3 * (cl->wmax + 3) * (cl->hmax + 3);
}

/* The field stage of a cluster: one record of REC floats per quarter cell (the particle's
 * half of the cell along x and along y fixes every component's stencil corner), holding
 * the 4 stencil values f[b], f[b+1], f[b+s], f[b+s+1] of Ex, Ey, Ez, Bx, By, Bz in that
 * order (24 floats, padded to two cache lines). Record of quarter (qx, qy) of cluster cell
 * (a, b): (2 b + qy) * 2 w + 2 a + qx. */
#define REC 32
#define PCHUNK 64
static size_t stage_floats(const clusters *cl)
{
    return (size_t)4 * REC * cl->wmax * cl->hmax + 16; /* + room to align */
}

/* An external field's array of component m added to the records' stencil values of m at
 * the same Yee points (gather_yee_ext's sums). */
static void stage_add(float *restrict rec, const emf *f, const float *ext, int m, int x0,
                      int y0, int w, int h)
{
    const int stride = f->stride;
    for (int b = 0; b < h; b++)
        for (int qy = 0; qy < 2; qy++)
            for (int a = 0; a < w; a++)
                for (int qx = 0; qx < 2; qx++) {
                    float *r = rec + (size_t)REC * ((2 * b + qy) * 2 * w + 2 * a + qx) + 4 * m;
                    const float *g = ext + emf_idx(f, x0 + a, y0 + b) +
                                     gather_corner(m, qx, qy, stride);
                    r[0] += g[0];
                    r[1] += g[1];
                    r[2] += g[stride];
                    r[3] += g[stride + 1];
                }
}

/* The records of cluster cells [x0, x0 + w) x [y0, y0 + h), with the external fields'
 * arrays added. */
static void stage_fill(float *restrict rec, const emf *f, const ext_fields *ext, int x0,
                       int y0, int w, int h)
{
    const int stride = f->stride;
    const float *const src[6] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2]};
    for (int b = 0; b < h; b++)
        for (int qy = 0; qy < 2; qy++)
            for (int a = 0; a < w; a++)
                for (int qx = 0; qx < 2; qx++) {
                    float *r = rec + (size_t)REC * ((2 * b + qy) * 2 * w + 2 * a + qx);
                    int k = emf_idx(f, x0 + a, y0 + b);
                    for (int m = 0; m < 6; m++) {
                        const float *g = src[m] + k + gather_corner(m, qx, qy, stride);
                        r[4 * m + 0] = g[0];
                        r[4 * m + 1] = g[1];
                        r[4 * m + 2] = g[stride];
                        r[4 * m + 3] = g[stride + 1];
                    }
                    for (int m = 24; m < REC; m++)
                        r[m] = 0.0f;
                }
    for (int m = 0; m < 6; m++)
        if (ext->a[m])
            stage_add(rec, f, ext->a[m], m, x0, y0, w, h);
}

#if defined(__AVX__)
#include <immintrin.h>
/* Columns m0..m0+7 of the records of 8 particles (rows at q[0..7]) into fv[m0..m0+7][r..r+7]:
 * an 8x8 transpose (128-bit halves loaded row l | row l+4, then in-lane 4x4 transposes). */
static inline __attribute__((always_inline)) void
rec_transpose8(const float *rec, const int *q, int m0, float (*fv)[PCHUNK], int r)
{
    for (int half = 0; half < 2; half++) {
        __m256 t[4];
        for (int l = 0; l < 4; l++)
            t[l] = _mm256_insertf128_ps(
                _mm256_castps128_ps256(_mm_loadu_ps(rec + (size_t)REC * q[l] + m0 + 4 * half)),
                _mm_loadu_ps(rec + (size_t)REC * q[l + 4] + m0 + 4 * half), 1);
        __m256 a0 = _mm256_unpacklo_ps(t[0], t[1]), a1 = _mm256_unpackhi_ps(t[0], t[1]);
        __m256 a2 = _mm256_unpacklo_ps(t[2], t[3]), a3 = _mm256_unpackhi_ps(t[2], t[3]);
        float *d = &fv[m0 + 4 * half][r];
        _mm256_store_ps(d, _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(1, 0, 1, 0)));
        _mm256_store_ps(d + PCHUNK, _mm256_shuffle_ps(a0, a2, _MM_SHUFFLE(3, 2, 3, 2)));
        _mm256_store_ps(d + 2 * PCHUNK, _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(1, 0, 1, 0)));
        _mm256_store_ps(d + 3 * PCHUNK, _mm256_shuffle_ps(a1, a3, _MM_SHUFFLE(3, 2, 3, 2)));
    }
}
#endif

/* The field records of cluster c in the calling thread's stage (stage_floats(cl) floats),
 * aligned to a cache line; returns them. */
static float *stage_cluster(float *stage, const emf *f, const clusters *cl, int c,
                            const ext_fields *ext)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx;
    const int x0 = cl->x0[cx], y0 = cl->y0[cy];
    float *rec = (float *)(((uintptr_t)stage + 63) & ~(uintptr_t)63);
    stage_fill(rec, f, ext, x0, y0, cl->x0[cx + 1] - x0, cl->y0[cy + 1] - y0);
    return rec;
}

/* The push loop over particles [from, to) of cluster c (want_ke and charged compile-time
 * constants in each instance), by chunks of PCHUNK particles, from its records rec
 * (stage_cluster): a vectorised loop finds each particle's record, the records' 24 values
 * are transposed into structure-of-arrays buffers (AVX shuffles: AVX2 gathers are slow on
 * Zen), and a vectorised loop interpolates them (gather_stencil: gather_component's values,
 * weights and operations) and applies boris_step; the kinetic energies of a chunk are then
 * added to *ke particle by particle (not by a vector reduction, whose order would follow the
 * vector width: both instances of the loop give the same sum). */
static inline __attribute__((always_inline)) void
push_range(species *s, const clusters *cl, int c, const float *restrict rec,
           const ext_fields *ext, float qdt2m, int from, int to, double *ke, const int want_ke,
           const int charged)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx;
    const int x0 = cl->x0[cx], y0 = cl->y0[cy];
    const int w = cl->x0[cx + 1] - x0;
    const float *restrict px = s->x, *restrict py = s->y, *restrict pw = s->w;
    const uint8_t *restrict pz = s->z;
    const uint32_t *restrict cell = s->cell;
    float *restrict pux = s->ux, *restrict puy = s->uy, *restrict puz = s->uz;
    const float e0 = ext->u[0], e1 = ext->u[1], e2 = ext->u[2];
    const float b0 = ext->u[3], b1 = ext->u[4], b2 = ext->u[5];
    _Alignas(32) int q[PCHUNK];
    /* field values, 4 stencil points per component: Ex, Ey, Ez, Bx, By, Bz */
    _Alignas(32) float fv[24][PCHUNK];
    _Alignas(64) double kes[PCHUNK];
    double sum = *ke;
    for (int base = from; base < to; base += PCHUNK) {
        const int n = to - base < PCHUNK ? to - base : PCHUNK;
#pragma omp simd
        for (int r = 0; r < n; r++) {
            const int p = base + r;
            float x = px[p], y = py[p];
            int ox, oy;
            (void)gather_axis(x, 1, &ox);
            (void)gather_axis(y, 1, &oy);
            q[r] = (2 * (cell_j(cell[p]) - y0) + 1 + oy) * 2 * w + 2 * (cell_i(cell[p]) - x0) +
                   1 + ox;
        }
        int r = 0;
#if defined(__AVX__)
        for (; r + 8 <= n; r += 8) {
            rec_transpose8(rec, q + r, 0, fv, r);
            rec_transpose8(rec, q + r, 8, fv, r);
            rec_transpose8(rec, q + r, 16, fv, r);
        }
#endif
        for (; r < n; r++) {
            const float *g = rec + (size_t)REC * q[r];
            for (int m = 0; m < 24; m++)
                fv[m][r] = g[m];
        }
#pragma omp simd
        for (int r = 0; r < n; r++) {
            const int p = base + r;
            float x = px[p], y = py[p];
            float gx = gather_stencil(&fv[4 * YEE_EX][r], PCHUNK, YEE_EX, x, y) + e0;
            float gy = gather_stencil(&fv[4 * YEE_EY][r], PCHUNK, YEE_EY, x, y) + e1;
            float gz = gather_stencil(&fv[4 * YEE_EZ][r], PCHUNK, YEE_EZ, x, y) + e2;
            float hx = gather_stencil(&fv[4 * YEE_BX][r], PCHUNK, YEE_BX, x, y) + b0;
            float hy = gather_stencil(&fv[4 * YEE_BY][r], PCHUNK, YEE_BY, x, y) + b1;
            float hz = gather_stencil(&fv[4 * YEE_BZ][r], PCHUNK, YEE_BZ, x, y) + b2;
            float u0x = pux[p], u0y = puy[p], u0z = puz[p], vx = u0x, vy = u0y, vz = u0z;
            /* an ion's own charge state (charged: the species ionizes) */
            const float qd = charged ? qdt2m * (float)pz[p] : qdt2m;
            boris_step(&vx, &vy, &vz, gx, gy, gz, hx, hy, hz, qd);
            pux[p] = vx;
            puy[p] = vy;
            puz[p] = vz;
            if (want_ke)
                kes[r] = kinetic_share(pw[p], u0x, u0y, u0z, vx, vy, vz);
        }
        for (int r = 0; want_ke && r < n; r++)
            sum += kes[r];
    }
    *ke = sum;
}

/* Push particles [from, to) of cluster c from its records rec: u(n-1/2) -> u(n+1/2); adds
 * sum of w (gamma - 1) at time n to *ke when want_ke. Four instances of the loop, so each is
 * compiled with want_ke and charged (per particle charge states) constant and vectorised. */
static inline __attribute__((always_inline)) void
push_loops(species *s, const clusters *cl, int c, const float *rec, const ext_fields *ext,
           float qdt2m, int from, int to, double *ke, int want_ke)
{
    if (s->z) {
        if (want_ke)
            push_range(s, cl, c, rec, ext, qdt2m, from, to, ke, 1, 1);
        else
            push_range(s, cl, c, rec, ext, qdt2m, from, to, ke, 0, 1);
    } else {
        if (want_ke)
            push_range(s, cl, c, rec, ext, qdt2m, from, to, ke, 1, 0);
        else
            push_range(s, cl, c, rec, ext, qdt2m, from, to, ke, 0, 0);
    }
}

static void push_base(species *s, const clusters *cl, int c, const float *rec,
                      const ext_fields *ext, float qdt2m, int from, int to, double *ke,
                      int want_ke)
{
    push_loops(s, cl, c, rec, ext, qdt2m, from, to, ke, want_ke);
}

/* The AVX-512 instance (CPU_AVX512_INSTANCE, cpu_avx512) */
#ifdef CPU_AVX512_INSTANCE
__attribute__((target("arch=x86-64-v4"))) static void
push_avx512(species *s, const clusters *cl, int c, const float *rec, const ext_fields *ext,
            float qdt2m, int from, int to, double *ke, int want_ke)
{
    push_loops(s, cl, c, rec, ext, qdt2m, from, to, ke, want_ke);
}
#endif

static void push_part(species *s, const clusters *cl, int c, const float *rec,
                      const ext_fields *ext, float qdt2m, int from, int to, double *ke,
                      int want_ke)
{
#ifdef CPU_AVX512_INSTANCE
    if (cpu_avx512()) {
        push_avx512(s, cl, c, rec, ext, qdt2m, from, to, ke, want_ke);
        return;
    }
#endif
    push_base(s, cl, c, rec, ext, qdt2m, from, to, ke, want_ke);
}

void particles_half_back(species *s, const emf *f, const clusters *cl, const ext_fields *ext)
{
    if (s->immobile)
        return;
    const float qdt2m = boris_qdt2m(-0.5 * f->dt, s->qm);
#pragma omp parallel
    {
        float *stage = empic_alloc(stage_floats(cl) * sizeof(float), "field stage");
#pragma omp for schedule(dynamic)
        for (int c = 0; c < cl->n; c++) {
            double ke = 0.0;
            if (s->count[c])
                push_part(s, cl, c, stage_cluster(stage, f, cl, c, ext), ext, qdt2m,
                          s->start[c], s->start[c] + s->count[c], &ke, 0);
        }
        free(stage);
    }
}

/* Whether cluster c of species s holds nothing to push: no particle, or neutral atoms at
 * rest only (an ionizing species' gas ahead of the laser; a cold species' atoms are at rest
 * while neutral): they stay, deposit nothing and carry no energy. */
static int cluster_idle(const species *s, int c)
{
    if (!s->z)
        return s->count[c] == 0;
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
        if (!particle_at_rest(s->z[p], s->cold, s->ux[p], s->uy[p], s->uz[p]))
            return 0;
    return 1;
}

/* Particles pushed and then moved and deposited in parts of this many: each part's data
 * still in cache (L1 or L2) for its move; the cluster's particles do not fit the L2 of
 * every processor (36 per cell in 33 x 32 cells: 1.1 MB). A multiple of both chunks. */
#define PART 2048

void particles_advance(species *s, emf *f, const clusters *cl, const ext_fields *ext,
                       int want_ke, double *lost, particles_stats *out)
{
    const float qdt2m = boris_qdt2m(f->dt, s->qm);
    double ke = 0.0, tp = 0.0, td = 0.0;
    if (s->immobile) {
        memset(s->hist, 0, (size_t)cl->n * 9 * sizeof(int));
        for (int c = 0; c < cl->n; c++)
            s->hist[9 * c + 4] = s->count[c];
        return;
    }
    /* per-cluster kinetic energies, summed in cluster order below: the same double for any
     * thread count and schedule */
    double *kc = empic_calloc((size_t)cl->n, sizeof(double), "kinetic energy per cluster");
#pragma omp parallel reduction(+ : tp, td)
    {
        float *store = empic_alloc(tile_floats(cl) * sizeof(float), "current tile");
        float *stage = empic_alloc(stage_floats(cl) * sizeof(float), "field stage");
        deposit_run *dr = deposit_run_new();
#pragma omp for schedule(dynamic)
        for (int c = 0; c < cl->n; c++) {
            if (!cl->own[c])
                continue;
            if (cluster_idle(s, c)) { /* no fields, no tile: every particle stays */
                memset(s->hist + 9 * c, 0, 9 * sizeof(int));
                s->hist[9 * c + 4] = s->count[c];
                continue;
            }
            double t0 = omp_get_wtime();
            const float *rec = stage_cluster(stage, f, cl, c, ext);
            double t1 = omp_get_wtime();
            tp += t1 - t0;
            tile t;
            tile_open(&t, store, cl, c, 3);
            const deposit_frame fr = {move_step_of(f->dt, f->dx, f->dy, s->q), t.c, f->nx, f->ny};
            deposit_begin(dr, &fr, t.a[0], t.a[1], t.a[2], s->hist + 9 * c);
            double ke = 0.0;
            const int end = s->start[c] + s->count[c];
            for (int from = s->start[c]; from < end; from += PART) {
                const int to = end - from < PART ? end : from + PART;
                t0 = omp_get_wtime();
                push_part(s, cl, c, rec, ext, qdt2m, from, to, &ke, want_ke);
                t1 = omp_get_wtime();
                deposit_range(dr, s, from, to);
                tp += t1 - t0;
                td += omp_get_wtime() - t1;
            }
            t1 = omp_get_wtime();
            deposit_end(dr);
            kc[c] = ke;
            if (species_on_wall(s, cl, c)) { /* walls: particles that crossed them, their current */
                walls_cluster(s, f, cl, c, &lost[c]);
                walls_tile(s, f, cl, c, &t.c, t.a[0], t.a[1], t.a[2]);
            }
            tile_add(&t, f, 0, 3);
            td += omp_get_wtime() - t1;
        }
        free(store);
        free(stage);
        deposit_run_free(dr);
    }
    if (want_ke) /* the other ranks' clusters (zero here): exact sums */
        comm_sum_double(kc, (size_t)cl->n);
    for (int c = 0; c < cl->n; c++)
        ke += kc[c];
    free(kc);
    int nt = omp_get_max_threads();
    out->kinetic = kinetic_total(ke, s->m, f->dx, f->dy);
    out->t_push = tp / nt;
    out->t_deposit = td / nt;
}

void particles_rho(const species *s, const emf *f, const clusters *cl)
{
#pragma omp parallel
    {
        float *store = empic_alloc(tile_floats(cl) * sizeof(float), "charge tile");
#pragma omp for schedule(dynamic)
        for (int c = 0; c < cl->n; c++) {
            if (!cl->own[c])
                continue;
            tile t;
            tile_open(&t, store, cl, c, 1);
            for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
                deposit_charge(t.a[0], cluster_tile_k(&t.c, s->cell[p]), t.c.w, s->x[p],
                               s->y[p], species_qw(s, (size_t)p));
            tile_add(&t, f, 3, 1);
        }
        free(store);
    }
}
