/* pbnd.h - per-particle rules of the non-periodic particle boundaries, shared by both
 * backends. A wall sits on the box edge (node 0 or node n of an axis). A particle that has
 * crossed it during the move (at most one cell, so its raw cell is -1 or n) is
 *   absorbing:  removed (migration code PBND_DROP; the sort's compaction drops it);
 *   reflecting: mirrored about the wall, normal momentum reversed;
 *   thermal:    mirrored about the wall and re-emitted with a fresh momentum from the
 *               species' thermal spread: tangential components Gaussian (u_th), the normal
 *               one flux-weighted, |u_n| = u_th sqrt(-2 ln U), pointing inward.
 * The current of the move is kept charge-conserving by folding the deposit beyond the wall
 * back as its mirror image (normal component negated), which is exactly the deposit of the
 * reflected path (the shapes are linear). */
#ifndef PBND_H
#define PBND_H

#include "cluster.h"
#include "kinds.h"
#include "empic.h"
#include "rng.h"
#include <math.h>

/* Mirror about the low wall (node 0): raw cell -1 with offset o becomes position 1 - o;
 * returns the new cell (0, or 1 when o == 0) and sets the offset. */
EMPIC_HD int pbnd_mirror_lo(float *o)
{
    float m = 1.0f - *o;
    int one = m >= 1.0f;
    *o = one ? 0.0f : m;
    return one;
}

/* Mirror about the high wall (node n): raw cell n with offset o becomes position n - o, in
 * cell n - 1 (a particle exactly on the wall is put just inside it). */
EMPIC_HD int pbnd_mirror_hi(int n, float *o)
{
    float m = 1.0f - *o;
    *o = m < 1.0f ? m : 0.99999994f;
    return n - 1;
}

/* Thermal re-emission: u from the spread uth, the component along `axis` pointing along
 * `inward` (+1 at a low wall, -1 at a high wall). */
EMPIC_HD void pbnd_thermal(rng_stream *r, const float uth[3], int axis, float inward, float u[3])
{
    for (int k = 0; k < 3; k++)
        u[k] = uth[k] * rng_normal(r);
    u[axis] = inward * uth[axis] * sqrtf(-2.0f * logf(rng_uniform(r)));
}

/* What a particle is, as one 32-bit word: a hash (murmur3's mixer) of its cell, offsets and
 * momenta as they arrive at the wall. Not its storage slot, which a parallel sort orders in
 * its own way: both backends, and a GPU run and its restart, key a particle the same. */
EMPIC_HD uint32_t pbnd_mix(uint32_t h, float v)
{
    union { float f; uint32_t u; } b;
    b.f = v;
    h ^= b.u * 0xcc9e2d51u;
    h = (h << 15 | h >> 17) * 0x1b873593u;
    return h;
}

EMPIC_HD uint32_t pbnd_key(uint32_t cell, float x, float y, float ux, float uy, float uz)
{
    uint32_t h = cell * 0x9e3779b9u;
    h = pbnd_mix(pbnd_mix(pbnd_mix(pbnd_mix(pbnd_mix(h, x), y), ux), uy), uz);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

/* RNG stream of a thermal re-emission: keyed by the run's seed (tagged), species, step, the
 * particle's pbnd_key and the axis, so a run is the same for any thread count, sort order or
 * backend. */
EMPIC_HD void pbnd_rng(rng_stream *r, unsigned long long seed, unsigned species, long step,
                       uint32_t key, int axis)
{
    rng_init(r, seed ^ 0x7468726d616c6277ULL, species + 64u * (unsigned)(axis + 1),
             (uint32_t)step, key);
}

/* The walls of one species as the per-particle and per-tile rules below see them. */
typedef struct {
    int bnd[4];              /* enum deck_pbnd per side */
    int ncx, ncy, nx, ny;    /* clusters and cells along x, y */
    float uth[3];            /* thermal spread of re-emission */
    unsigned long long seed;
    unsigned species;
} pbnd_walls;

/* A particle of cluster (cx, cy) after its move (cell wrapped periodically, mc = (dcx+1) +
 * 3 (dcy+1) its move between clusters) that crossed a wall: mirrored, reflected or
 * re-emitted in place (cell, offsets, momenta); returns the new mc, or -1 to drop it.
 * cx_of / cy_of: cluster column of each cell column, row of each cell row. */
EMPIC_HD int pbnd_particle(const pbnd_walls *w, int cx, int cy, const int *cx_of,
                           const int *cy_of, long step, int mc, uint32_t *cell, float *x,
                           float *y, float *ux, float *uy, float *uz)
{
    const uint32_t key = pbnd_key(*cell, *x, *y, *ux, *uy, *uz);
    int d[2] = {mc % 3 - 1, mc / 3 - 1};
    int at[2] = {cell_i(*cell), cell_j(*cell)};
    for (int axis = 0; axis < 2; axis++) {
        const int cc = axis ? cy : cx, ncc = axis ? w->ncy : w->ncx;
        const int lo = cc == 0 && d[axis] == -1, hi = cc == ncc - 1 && d[axis] == 1;
        const int type = (lo || hi) ? w->bnd[2 * axis + hi] : PBND_PERIODIC;
        if (type == PBND_PERIODIC)
            continue;
        if (type == PBND_ABSORBING)
            return -1;
        float *o = axis ? y : x;
        at[axis] = lo ? pbnd_mirror_lo(o) : pbnd_mirror_hi(axis ? w->ny : w->nx, o);
        d[axis] = (axis ? cy_of[at[1]] : cx_of[at[0]]) - cc;
        if (type == PBND_REFLECTING) {
            float *un = axis ? uy : ux;
            *un = -*un;
        } else {
            float u[3];
            rng_stream r;
            pbnd_rng(&r, w->seed, w->species, step, key, axis);
            pbnd_thermal(&r, w->uth, axis, lo ? 1.0f : -1.0f, u);
            *ux = u[0];
            *uy = u[1];
            *uz = u[2];
        }
    }
    *cell = cell_pack(at[0], at[1]);
    return mig_bin(d[0], d[1]);
}

/* A species' walls (bnd: enum deck_pbnd per side, 0 periodic) as a mask: bit k, side k. */
EMPIC_HD unsigned pbnd_sides(const int bnd[4])
{
    return (unsigned)(bnd[0] != 0) | (unsigned)(bnd[1] != 0) << 1 |
           (unsigned)(bnd[2] != 0) << 2 | (unsigned)(bnd[3] != 0) << 3;
}

/* Whether cluster (cx, cy) of an ncx x ncy partition lies on one of the walls `sides`
 * (pbnd_sides): an edge cluster, whose particles the walls fix up after their move. */
EMPIC_HD int pbnd_edge_cluster(unsigned sides, int cx, int cy, int ncx, int ncy)
{
    return (cx == 0 && (sides & 1u)) || (cx == ncx - 1 && (sides & 2u)) ||
           (cy == 0 && (sides & 4u)) || (cy == ncy - 1 && (sides & 8u));
}

/* The sides of cluster (cx, cy) that are walls of the species: xl, xh, yl, yh. */
typedef struct {
    int xl, xh, yl, yh;
} pbnd_edges;

EMPIC_HD pbnd_edges pbnd_edges_of(const pbnd_walls *w, int cx, int cy)
{
    pbnd_edges e;
    e.xl = cx == 0 && w->bnd[SIDE_XMIN];
    e.xh = cx == w->ncx - 1 && w->bnd[SIDE_XMAX];
    e.yl = cy == 0 && w->bnd[SIDE_YMIN];
    e.yh = cy == w->ncy - 1 && w->bnd[SIDE_YMAX];
    return e;
}

/* Whether a particle of a cluster with edges e whose migration code is `code` crossed a
 * wall in its move. */
EMPIC_HD int pbnd_crossed(const pbnd_edges *e, unsigned code)
{
    const int dx = mig_dx(code), dy = mig_dy(code);
    return (e->xl && dx < 0) || (e->xh && dx > 0) || (e->yl && dy < 0) || (e->yh && dy > 0);
}

/* The wall fix-up after the move of a particle of cluster (cx, cy) (edges e): if its
 * migration code *code says it crossed a wall, the wall rule (pbnd_particle) and its code
 * and the cluster's histogram `hist` updated (PBND_DROP, counted as staying, to remove it). */
EMPIC_HD void pbnd_fixup(const pbnd_walls *w, const pbnd_edges *e, int cx, int cy,
                         const int *cx_of, const int *cy_of, long step, uint8_t *code, int *hist,
                         uint32_t *cell, float *x, float *y, float *ux, float *uy, float *uz)
{
    const unsigned c = *code;
    if (!pbnd_crossed(e, c))
        return;
    const int dx = mig_dx(c), dy = mig_dy(c);
    const int mc = mig_bin(dx, dy);
    const int m = pbnd_particle(w, cx, cy, cx_of, cy_of, step, mc, cell, x, y, ux, uy, uz);
    EMPIC_ACC(&hist[mc], -1);
    EMPIC_ACC(&hist[m < 0 ? 4 : m], 1);
    *code = m < 0 ? (uint8_t)PBND_DROP : (uint8_t)mig_code_of_bin(m);
}

/* The sides whose edge clusters remove their PBND_DROP particles before the sort: the
 * absorbing walls, and xmin after the window has moved (`window`). */
typedef struct {
    int lo_x, hi_x, lo_y, hi_y;
} pbnd_drops;

EMPIC_HD pbnd_drops pbnd_drops_of(const int bnd[4], int window)
{
    pbnd_drops d;
    d.lo_x = bnd[SIDE_XMIN] == PBND_ABSORBING || window;
    d.hi_x = bnd[SIDE_XMAX] == PBND_ABSORBING;
    d.lo_y = bnd[SIDE_YMIN] == PBND_ABSORBING;
    d.hi_y = bnd[SIDE_YMAX] == PBND_ABSORBING;
    return d;
}

EMPIC_HD int pbnd_drops_any(const pbnd_drops *d) { return d->lo_x || d->hi_x || d->lo_y || d->hi_y; }

/* Whether cluster (cx, cy) of an ncx x ncy partition lies on one of those sides. */
EMPIC_HD int pbnd_drops_at(const pbnd_drops *d, int cx, int cy, int ncx, int ncy)
{
    return (d->lo_x && cx == 0) || (d->hi_x && cx == ncx - 1) || (d->lo_y && cy == 0) ||
           (d->hi_y && cy == ncy - 1);
}

/* Fold line `g` (beyond the wall) of a current tile into the interior lines: the normal
 * component n (stride-1 x or row y) into line `gn` negated, the tangential ones into line
 * `gt`; absorbing: just clear. Lines are columns (axis 0) or rows (axis 1).
 *
 * Then the fold (reflecting, thermal) or drop (absorbing) of the current that the tile T of
 * cluster (cx, cy) holds beyond the walls (cluster.h: cells [i0, i0+w) x [j0, j0+h), row
 * stride w). Low wall at tile line 0 - i0 (= 1): normal J at line 0 -> line 1 negated (the
 * half points -1/2 -> +1/2), tangential J at node -1 (line 0) -> node +1 (line 2). High wall
 * at node n, line L = n - i0: normal J at L (n+1/2) -> L-1, tangential L+1 -> L-1.
 *
 * Defined for the CPU's float tiles (pbnd_fold_side) and the GPU's fixed-point ones
 * (pbnd_fold_side_fixed, exact), wall by wall in side order. */
#define PBND_FOLD_DEFINE(T, line, side_fold)                                                   \
    EMPIC_HD void line(T *nrm, T *t1, T *t2, int axis, int len, int ts, int gn_from,           \
                       int gn_to, int gt_from, int gt_to, int keep, int r0, int dr)            \
    {                                                                                          \
        for (int r = r0; r < len; r += dr) {                                                   \
            int a = axis ? r : r * ts, step = axis ? ts : 1;                                   \
            T *pn = nrm + a, *p1 = t1 + a, *p2 = t2 + a;                                       \
            if (keep) {                                                                        \
                pn[gn_to * step] -= pn[gn_from * step];                                        \
                p1[gt_to * step] += p1[gt_from * step];                                        \
                p2[gt_to * step] += p2[gt_from * step];                                        \
            }                                                                                  \
            pn[gn_from * step] = 0;                                                            \
            p1[gt_from * step] = 0;                                                            \
            p2[gt_from * step] = 0;                                                            \
        }                                                                                      \
    }                                                                                          \
    /* the lines r0, r0 + dr, ... of wall `side` (a GPU block's threads share a wall's lines; \
       the walls follow one another: a corner's lines cross) */                                \
    EMPIC_HD void side_fold(const pbnd_walls *wl, int side, int cx, int cy,                    \
                            const cluster_tile *T_, T *jx, T *jy, T *jz, int r0, int dr)       \
    {                                                                                          \
        const int *bnd = wl->bnd, i0 = T_->i0, j0 = T_->j0, w = T_->w, h = T_->h, ts = T_->w; \
        const int keep = bnd[side] != PBND_ABSORBING;                                          \
        if (side == SIDE_XMIN && cx == 0 && bnd[SIDE_XMIN])                                    \
            line(jx, jy, jz, 0, h, ts, -i0 - 1, -i0, -i0 - 1, -i0 + 1, keep, r0, dr);          \
        if (side == SIDE_XMAX && cx == wl->ncx - 1 && bnd[SIDE_XMAX]) {                        \
            int L = wl->nx - i0;                                                               \
            line(jx, jy, jz, 0, h, ts, L, L - 1, L + 1, L - 1, keep, r0, dr);                  \
        }                                                                                      \
        if (side == SIDE_YMIN && cy == 0 && bnd[SIDE_YMIN])                                    \
            line(jy, jx, jz, 1, w, ts, -j0 - 1, -j0, -j0 - 1, -j0 + 1, keep, r0, dr);          \
        if (side == SIDE_YMAX && cy == wl->ncy - 1 && bnd[SIDE_YMAX]) {                        \
            int L = wl->ny - j0;                                                               \
            line(jy, jx, jz, 1, w, ts, L, L - 1, L + 1, L - 1, keep, r0, dr);                  \
        }                                                                                      \
    }
PBND_FOLD_DEFINE(float, pbnd_fold_line, pbnd_fold_side)
PBND_FOLD_DEFINE(long long, pbnd_fold_line_fixed, pbnd_fold_side_fixed)

#endif
