/* cluster.h - the bookkeeping rules of the cluster layout, shared by both backends: the cell
 * encoding of a particle, periodic wrap, a cluster's current tile, the 4-bit migration codes
 * and 9-bin histograms that a move writes, the room the sort needs, and the moving window's
 * shift of a particle. */
#ifndef CLUSTER_H
#define CLUSTER_H

#include "empic.h"
#include <stdint.h>

/* A particle's cell (i, j) in one 32-bit word: i in the low 16 bits, j in the high 16. */
EMPIC_HD uint32_t cell_pack(int i, int j) { return (uint32_t)i | ((uint32_t)j << 16); }
EMPIC_HD int cell_i(uint32_t c) { return (int)(c & 0xffffu); }
EMPIC_HD int cell_j(uint32_t c) { return (int)(c >> 16); }

/* -1, 0 or +1: index i below, inside or above the range [lo, hi). */
EMPIC_HD int range_step(int i, int lo, int hi) { return i < lo ? -1 : (i >= hi ? 1 : 0); }

/* Cluster c of a partition with first cells x0[cx], y0[cy] (ncx columns): its cells
 * [xlo, xhi) x [ylo, yhi) and its current tile, cells [i0, i0 + w) x [j0, j0 + h) with one
 * ghost cell below and two above (a move deposits up to one cell out, plus the upper node). */
typedef struct {
    int xlo, xhi, ylo, yhi;
    int i0, j0, w, h;
} cluster_tile;

EMPIC_HD cluster_tile cluster_tile_of(const int *x0, const int *y0, int ncx, int c)
{
    cluster_tile t;
    int cx = c % ncx, cy = c / ncx;
    t.xlo = x0[cx];
    t.xhi = x0[cx + 1];
    t.ylo = y0[cy];
    t.yhi = y0[cy + 1];
    t.i0 = t.xlo - 1;
    t.j0 = t.ylo - 1;
    t.w = t.xhi - t.xlo + 3;
    t.h = t.yhi - t.ylo + 3;
    return t;
}

/* Linear index in the tile (row stride t->w) of the cell that `cell` encodes. */
EMPIC_HD int cluster_tile_k(const cluster_tile *t, uint32_t cell)
{
    return (cell_i(cell) - t->i0) + (cell_j(cell) - t->j0) * t->w;
}

/* 4-bit cluster migration code: bits 0-1 the x move, bits 2-3 the y move; each 0 (stay),
 * 1 (+1 cluster) or 2 (-1 cluster). PBND_DROP (both fields 3: no sort pass moves it) marks a
 * particle to remove: it left through an absorbing wall or the back of the moving window. */
#define PBND_DROP 15u

EMPIC_HD unsigned mig_code(int dcx, int dcy)
{
    return (unsigned)((dcx < 0 ? 2 : dcx) | ((dcy < 0 ? 2 : dcy) << 2));
}
EMPIC_HD int mig_dx(unsigned c) { return (c & 3u) == 1u ? 1 : ((c & 3u) == 2u ? -1 : 0); }
EMPIC_HD int mig_dy(unsigned c) { return ((c >> 2) & 3u) == 1u ? 1 : (((c >> 2) & 3u) == 2u ? -1 : 0); }

/* Histogram bin of a move (dcx, dcy) between clusters: 0..8, 4 = stays. */
EMPIC_HD int mig_bin(int dcx, int dcy) { return (dcx + 1) + 3 * (dcy + 1); }
/* The code of bin b. */
EMPIC_HD unsigned mig_code_of_bin(int b) { return mig_code(b % 3 - 1, b / 3 - 1); }
/* The bin a code counts in: a particle marked to drop counts as staying (4). */
EMPIC_HD int mig_bin_of_code(unsigned c)
{
    return c == PBND_DROP ? 4 : mig_bin(mig_dx(c), mig_dy(c));
}

/* The sort's peak counts (Kong et al. 2011, §2.4): cluster (cx, cy) of an ncx x ncy
 * partition holds `count` particles and hist holds the 9-bin histograms of every cluster's
 * last move. Returns the room the cluster needs during the four passes: the larger of its
 * count after the x passes' arrivals (before its own leavers go) and after the y passes'.
 * lv[0..3] = its leavers in the +x and -x passes and, counting the particles that the x
 * passes bring in, in the +y and -y passes. */
EMPIC_HD int sort_need(const int *hist, int count, int cx, int cy, int ncx, int ncy, int lv[4])
{
    const int *l = hist + 9 * (wrap_index(cx - 1, ncx) + cy * ncx);
    const int *r = hist + 9 * (wrap_index(cx + 1, ncx) + cy * ncx);
    const int *h = hist + 9 * (cx + cy * ncx);
    int in_x = 0, out_x = 0, in_y = 0, xr = 0, xl = 0, yu = 0, yd = 0;
    for (int dy = -1; dy <= 1; dy++) {
        in_x += l[mig_bin(1, dy)] + r[mig_bin(-1, dy)];
        out_x += h[mig_bin(1, dy)] + h[mig_bin(-1, dy)];
        xr += h[mig_bin(1, dy)];
        xl += h[mig_bin(-1, dy)];
    }
    for (int dx = -1; dx <= 1; dx++) {
        int sx = wrap_index(cx - dx, ncx);
        in_y += hist[9 * (sx + wrap_index(cy - 1, ncy) * ncx) + mig_bin(dx, 1)] +
                hist[9 * (sx + wrap_index(cy + 1, ncy) * ncx) + mig_bin(dx, -1)];
        yu += hist[9 * (sx + cy * ncx) + mig_bin(dx, 1)];
        yd += hist[9 * (sx + cy * ncx) + mig_bin(dx, -1)];
    }
    lv[0] = xr;
    lv[1] = xl;
    lv[2] = yu;
    lv[3] = yd;
    int peak_x = count + in_x, peak_y = count - out_x + in_x + in_y;
    return peak_x > peak_y ? peak_x : peak_y;
}

/* The particles cluster (cx, cy) gained in the last move (hist as for sort_need): its
 * arrivals from the eight neighbours less its leavers; negative when it lost. */
EMPIC_HD int cluster_net_inflow(const int *hist, int cx, int cy, int ncx, int ncy)
{
    const int *h = hist + 9 * (cx + cy * ncx);
    int net = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
            if (dx || dy) {
                const int from = wrap_index(cx - dx, ncx) + wrap_index(cy - dy, ncy) * ncx;
                net += hist[9 * from + mig_bin(dx, dy)] - h[mig_bin(dx, dy)];
            }
    return net;
}

/* The moving window's shift of a particle of a cluster whose first cell column is xlo,
 * after its move: its cell one column toward -x and the x field of its code recomputed for
 * the new cell (the y field kept); a particle of the first column, or one already marked,
 * gets PBND_DROP and keeps its cell. Its move left it at most one column outside the
 * cluster, so the shift leaves it in the cluster or, below xlo, in the one before (two
 * columns below xlo only where that one is a column wide: the first, whose particles drop).
 * Returns the new code. */
EMPIC_HD unsigned window_shift_particle(uint32_t *cell, unsigned code, int xlo)
{
    uint32_t cv = *cell;
    int i = cell_i(cv) - 1, drop = (code == PBND_DROP) | (i < 0);
    *cell = drop ? cv : cv - 1u; /* i >= 0: cell_pack(i, j), no borrow into j */
    return drop ? PBND_DROP : ((i < xlo ? 2u : 0u) | (code & 0xcu));
}

#endif
