/* push.c - the CPU backend's particle phases: gather + Boris push, move + charge-conserving
 * deposit, charge density. Clusters are processed by OpenMP threads one colour at a time
 * (2x2 colouring, Kong Fig. 3): each thread accumulates its cluster's current in a private
 * tile with one ghost cell below and two above, then adds the tile to the mesh; tiles of one
 * colour never overlap, so no atomics are needed. */
#include "push.h"
#include "bnd.h"
#include "empic.h"
#include "particle.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* A cluster's private tile: cells [x0-1, x0+w+2) x [y0-1, y0+h+2) of the mesh. */
typedef struct {
    int i0, j0, w, h, s;
    float *a[3];
} tile;

static void tile_open(tile *t, float *store, const clusters *cl, int c, int ncomp)
{
    int cx = c % cl->ncx, cy = c / cl->ncx;
    t->i0 = cl->x0[cx] - 1;
    t->j0 = cl->y0[cy] - 1;
    t->w = cl->x0[cx + 1] - cl->x0[cx] + 3;
    t->h = cl->y0[cy + 1] - cl->y0[cy] + 3;
    t->s = t->w;
    for (int k = 0; k < ncomp; k++) {
        t->a[k] = store + (size_t)k * t->w * t->h;
        memset(t->a[k], 0, (size_t)t->w * t->h * sizeof(float));
    }
}

static void tile_add(const tile *t, const emf *f, float *const dst[], int ncomp)
{
    for (int k = 0; k < ncomp; k++)
        for (int b = 0; b < t->h; b++) {
            float *g = dst[k] + emf_idx(f, t->i0, t->j0 + b);
            const float *l = t->a[k] + b * t->s;
            for (int a = 0; a < t->w; a++)
                g[a] += l[a];
        }
}

static inline int tile_k(const tile *t, uint32_t cell)
{
    return (cell_i(cell) - t->i0) + (cell_j(cell) - t->j0) * t->s;
}

static size_t tile_floats(const clusters *cl)
{
    return (size_t)3 * (cl->wmax + 3) * (cl->hmax + 3);
}

/* The push loop of one cluster (want_ke a compile-time constant in each instance). */
static inline __attribute__((always_inline)) double
push_range(species *s, const emf *f, int c, const float ext_e[3], const float ext_b[3],
           float qdt2m, const int want_ke)
{
    double ke = 0.0;
    const int end = s->start[c] + s->count[c], st = f->stride, off = f->off;
    const float *restrict ex = f->e[0], *restrict ey = f->e[1], *restrict ez = f->e[2];
    const float *restrict bx = f->b[0], *restrict by = f->b[1], *restrict bz = f->b[2];
    const float *restrict px = s->x, *restrict py = s->y, *restrict pw = s->w;
    const uint32_t *restrict cell = s->cell;
    float *restrict pux = s->ux, *restrict puy = s->uy, *restrict puz = s->uz;
    const float e0 = ext_e[0], e1 = ext_e[1], e2 = ext_e[2];
    const float b0 = ext_b[0], b1 = ext_b[1], b2 = ext_b[2];
#pragma omp simd reduction(+ : ke)
    for (int p = s->start[c]; p < end; p++) {
        int k = off + cell_i(cell[p]) + cell_j(cell[p]) * st;
        float x = px[p], y = py[p];
        float gx = gather_component(ex, k, st, x, y, 1, 0) + e0;
        float gy = gather_component(ey, k, st, x, y, 0, 1) + e1;
        float gz = gather_component(ez, k, st, x, y, 0, 0) + e2;
        float hx = gather_component(bx, k, st, x, y, 0, 1) + b0;
        float hy = gather_component(by, k, st, x, y, 1, 0) + b1;
        float hz = gather_component(bz, k, st, x, y, 1, 1) + b2;
        float u0x = pux[p], u0y = puy[p], u0z = puz[p], vx = u0x, vy = u0y, vz = u0z;
        boris_step(&vx, &vy, &vz, gx, gy, gz, hx, hy, hz, qdt2m);
        pux[p] = vx;
        puy[p] = vy;
        puz[p] = vz;
        float gm = lorentz_gamma(0.5f * (u0x + vx), 0.5f * (u0y + vy), 0.5f * (u0z + vz));
        ke += want_ke ? (double)pw[p] * (gm - 1.0f) : 0.0;
    }
    return ke;
}

/* Push one cluster: u(n-1/2) -> u(n+1/2); returns sum of w (gamma - 1) at time n when
 * want_ke. Two instances of the loop, so each is compiled with want_ke constant and
 * vectorised. */
static double push_cluster(species *s, const emf *f, int c, const float ext_e[3],
                           const float ext_b[3], float qdt2m, int want_ke)
{
    return want_ke ? push_range(s, f, c, ext_e, ext_b, qdt2m, 1)
                   : push_range(s, f, c, ext_e, ext_b, qdt2m, 0);
}

void push_half_back(species *s, const emf *f, const clusters *cl, const float ext_e[3],
                    const float ext_b[3])
{
    if (s->cfg->immobile)
        return;
    const float qdt2m = (float)(-0.25 * f->dt) * s->qm; /* a Boris step of -dt/2 */
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++)
        push_cluster(s, f, c, ext_e, ext_b, qdt2m, 0);
}

/* Move one cluster's particles, deposit their current in tile t and set migration codes.
 * Chunks of CHUNK particles: a vectorised loop computes the new positions and the weights of
 * the three pieces of each move (move_pieces), then a scalar loop adds them to the tile. */
#define CHUNK 32
static void move_cluster(species *s, const emf *f, const clusters *cl, int c, tile *t)
{
    const float rdx = (float)(f->dt / f->dx), rdy = (float)(f->dt / f->dy);
    const float jxq = (float)(f->dx / f->dt), jyq = (float)(f->dy / f->dt), q = s->q;
    const int cx = c % cl->ncx, cy = c / cl->ncx, nx = f->nx, ny = f->ny, ts = t->s;
    const int xlo = cl->x0[cx], xhi = cl->x0[cx + 1], ylo = cl->y0[cy], yhi = cl->y0[cy + 1];
    const int i0 = t->i0, j0 = t->j0;
    int *hist = s->hist + 9 * c;
    uint32_t *restrict cell = s->cell;
    float *restrict px = s->x, *restrict py = s->y;
    const float *restrict pux = s->ux, *restrict puy = s->uy, *restrict puz = s->uz,
                          *restrict pw = s->w;
    uint8_t *restrict code = s->code;
    int kk[3][CHUNK], k0[CHUNK], mc[CHUNK], used[CHUNK];
    float ww[3][8][CHUNK];
    memset(hist, 0, 9 * sizeof(int));
    const int end = s->start[c] + s->count[c];
    for (int base = s->start[c]; base < end; base += CHUNK) {
        const int n = end - base < CHUNK ? end - base : CHUNK;
#pragma omp simd
        for (int r = 0; r < n; r++) {
            const int p = base + r;
            float ux = pux[p], uy = puy[p], uz = puz[p];
            float ig = 1.0f / lorentz_gamma(ux, uy, uz);
            float x0 = px[p], y0 = py[p];
            float x1 = x0 + ux * ig * rdx, y1 = y0 + uy * ig * rdy;
            float qw = q * pw[p];
            int ci = cell_i(cell[p]), cj = cell_j(cell[p]);
            int mid = move_pieces(x0, y0, x1, y1, qw * jxq, qw * jyq, qw * uz * ig, ts,
                                  &kk[0][r], &ww[0][0][r], CHUNK);
            k0[r] = (ci - i0) + (cj - j0) * ts;
            int di = offset_wrap(&x1), dj = offset_wrap(&y1), i = ci + di, j = cj + dj;
            /* pieces to add: the first always; the last only after a cell change; the middle
             * only after two edge crossings */
            used[r] = 1 | ((di | dj) != 0 ? 4 : 0) | (mid ? 2 : 0);
            int dcx = i < xlo ? -1 : (i >= xhi ? 1 : 0), dcy = j < ylo ? -1 : (j >= yhi ? 1 : 0);
            i = i < 0 ? i + nx : (i >= nx ? i - nx : i);
            j = j < 0 ? j + ny : (j >= ny ? j - ny : j);
            cell[p] = cell_pack(i, j);
            px[p] = x1;
            py[p] = y1;
            mc[r] = (dcx + 1) + 3 * (dcy + 1);
        }
        for (int r = 0; r < n; r++) {
            for (int m = 0; m < 3; m++)
                if (used[r] & (1 << m))
                    deposit_add(t->a[0], t->a[1], t->a[2], k0[r] + kk[m][r], ts, &ww[m][0][r],
                                CHUNK);
            hist[mc[r]]++;
            code[base + r] = (uint8_t)mig_code(mc[r] % 3 - 1, mc[r] / 3 - 1);
        }
    }
}

void push_cpu(species *s, emf *f, const clusters *cl, const float ext_e[3],
              const float ext_b[3], int want_ke, push_stats *st)
{
    const float qdt2m = (float)(0.5 * f->dt) * s->qm;
    double ke = 0.0, tp = 0.0, td = 0.0;
    if (s->cfg->immobile) {
        memset(s->hist, 0, (size_t)cl->n * 9 * sizeof(int));
        for (int c = 0; c < cl->n; c++)
            s->hist[9 * c + 4] = s->count[c];
        return;
    }
#pragma omp parallel reduction(+ : ke, tp, td)
    {
        float *store = empic_alloc(tile_floats(cl) * sizeof(float), "current tile");
        for (int color = 0; color < 4; color++) {
#pragma omp for schedule(dynamic)
            for (int c = 0; c < cl->n; c++) {
                int cx = c % cl->ncx, cy = c / cl->ncx;
                if ((cx & 1) + 2 * (cy & 1) != color)
                    continue;
                double t0 = omp_get_wtime();
                ke += push_cluster(s, f, c, ext_e, ext_b, qdt2m, want_ke);
                double t1 = omp_get_wtime();
                tile t;
                tile_open(&t, store, cl, c, 3);
                move_cluster(s, f, cl, c, &t);
                if (bnd_edge(s, cl, c)) { /* walls: particles that crossed them, their current */
                    bnd_cluster(s, f, cl, c);
                    bnd_tile(s, f, cl, c, t.i0, t.j0, t.w, t.h, t.s, t.a[0], t.a[1], t.a[2]);
                }
                tile_add(&t, f, f->j, 3);
                tp += t1 - t0;
                td += omp_get_wtime() - t1;
            }
        }
        free(store);
    }
    int nt = omp_get_max_threads();
    st->kinetic = ke * s->m * f->dx * f->dy;
    st->t_push = tp / nt;
    st->t_deposit = td / nt;
}

void push_rho_cpu(const species *s, const emf *f, const clusters *cl, float *rho)
{
#pragma omp parallel
    {
        float *store = empic_alloc(tile_floats(cl) * sizeof(float), "charge tile");
        for (int color = 0; color < 4; color++) {
#pragma omp for schedule(dynamic)
            for (int c = 0; c < cl->n; c++) {
                int cx = c % cl->ncx, cy = c / cl->ncx;
                if ((cx & 1) + 2 * (cy & 1) != color)
                    continue;
                tile t;
                tile_open(&t, store, cl, c, 1);
                for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
                    deposit_charge(t.a[0], tile_k(&t, s->cell[p]), t.s, s->x[p], s->y[p],
                                   s->q * s->w[p]);
                float *dst[1] = {rho};
                tile_add(&t, f, dst, 1);
            }
        }
        free(store);
    }
}
