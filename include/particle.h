/* particle.h - per-particle physics shared by the CPU backend and the CUDA kernels:
 * field gather from the Yee mesh, relativistic Boris push, Kong's branch-free three-piece
 * current split and the Villasenor-Buneman deposit of each piece.
 *
 * Positions are (cell, offset) with the offset in cell units in [0, 1). Field and current
 * arrays are addressed through a base pointer, the linear index k of the particle's cell
 * (i, j) node and the row stride s, so the same code reads a global mesh or a shared-memory
 * tile. Array entry k of each component is that component at its Yee point of cell (i, j):
 * Ex, Jx (i+1/2, j); Ey, Jy (i, j+1/2); Ez, Jz, rho (i, j); Bx (i, j+1/2); By (i+1/2, j);
 * Bz (i+1/2, j+1/2). */
#ifndef PARTICLE_H
#define PARTICLE_H

#include "empic.h"
#include <math.h>

#ifdef __CUDA_ARCH__
#define EMPIC_ACC(p, v) atomicAdd((p), (v)) /* shared-memory atomics inside one block */
#else
#define EMPIC_ACC(p, v) (*(p) += (v))
#endif

/* Linear weights along one axis at offset x in the cell, for a component staggered by half
 * a cell (h = 1) or not: the stencil starts at cell offset *o (-1 or 0, a select, not a
 * branch); returns the weight of its upper node. */
EMPIC_HD float gather_axis(float x, int h, int *o)
{
    float p = h ? x - 0.5f : x;
    int ox = p < 0.0f ? -1 : 0;
    *o = ox;
    return p - (float)ox;
}

/* The bilinear combination of a stencil's values f00, f10 (x + 1), f01 (y + 1), f11 with
 * upper-node weights wx, wy. */
EMPIC_HD float gather_bilinear(float f00, float f10, float f01, float f11, float wx, float wy)
{
    return (1.0f - wy) * ((1.0f - wx) * f00 + wx * f10) + wy * ((1.0f - wx) * f01 + wx * f11);
}

/* Linear interpolation of one component at (x, y) within cell k, the component being
 * staggered by half a cell in x (hx = 1) and/or y (hy = 1). */
EMPIC_HD float gather_component(const float *f, int k, int s, float x, float y, int hx, int hy)
{
    int ox, oy;
    float wx = gather_axis(x, hx, &ox), wy = gather_axis(y, hy, &oy);
    int b = k + ox + oy * s;
    return gather_bilinear(f[b], f[b + 1], f[b + s], f[b + s + 1], wx, wy);
}

/* E and B at offset (x, y) of cell k (Yee staggering of the header comment). */
EMPIC_HD void gather_eb(const float *ex, const float *ey, const float *ez, const float *bx,
                        const float *by, const float *bz, int k, int s, float x, float y,
                        float e[3], float b[3])
{
    e[0] = gather_component(ex, k, s, x, y, 1, 0);
    e[1] = gather_component(ey, k, s, x, y, 0, 1);
    e[2] = gather_component(ez, k, s, x, y, 0, 0);
    b[0] = gather_component(bx, k, s, x, y, 0, 1);
    b[1] = gather_component(by, k, s, x, y, 1, 0);
    b[2] = gather_component(bz, k, s, x, y, 1, 1);
}

/* Relativistic Boris step u(n-1/2) -> u(n+1/2); qdt2m = q dt / (2 m). Exact |u| for pure
 * magnetic rotation and exact q E dt / m gain for a pure uniform E. */
EMPIC_HD void boris_step(float *ux, float *uy, float *uz, float ex, float ey, float ez,
                         float bx, float by, float bz, float qdt2m)
{
    /* scalars only (no local arrays), so that a loop over particles vectorises */
    float ax = qdt2m * ex, ay = qdt2m * ey, az = qdt2m * ez;
    float mx = *ux + ax, my = *uy + ay, mz = *uz + az;
    float g = sqrtf(1.0f + mx * mx + my * my + mz * mz);
    float tx = qdt2m * bx / g, ty = qdt2m * by / g, tz = qdt2m * bz / g;
    float f = 2.0f / (1.0f + tx * tx + ty * ty + tz * tz);
    float px = mx + my * tz - mz * ty, py = my + mz * tx - mx * tz, pz = mz + mx * ty - my * tx;
    mx += f * (py * tz - pz * ty);
    my += f * (pz * tx - px * tz);
    mz += f * (px * ty - py * tx);
    *ux = mx + ax;
    *uy = my + ay;
    *uz = mz + az;
}

/* The same step on arrays u[3], e[3], b[3]. */
EMPIC_HD void boris_push(float u[3], const float e[3], const float b[3], float qdt2m)
{
    boris_step(&u[0], &u[1], &u[2], e[0], e[1], e[2], b[0], b[1], b[2], qdt2m);
}

EMPIC_HD float lorentz_gamma(float ux, float uy, float uz)
{
    return sqrtf(1.0f + ux * ux + uy * uy + uz * uz);
}

/* Kong's split of a straight move P0 -> P1 (cell units, P0 in [0,1)^2, |P1 - P0| < 1 per
 * axis) into three pieces P0->PA, PA->PB, PB->P1 that each lie in one cell, with
 * min/max/select arithmetic only. t[] holds the path parameter of P0, PA, PB, P1.
 * Two crossings: PA, PB are the crossings in the order met. One crossing: PA = PB at it.
 * No crossing: PA = PB = P1 (Kong puts them on the extension of P0P1 at the cell edge;
 * the end point gives the same deposit and stays finite when the particle is at rest).
 * Crossing coordinates are set exactly on the cell edge so each piece's cell is exact. */
typedef struct {
    float x[4], y[4], t[4];
} kong_split;

EMPIC_HD void kong_split3(float x0, float y0, float x1, float y1, kong_split *p)
{
    float ddx = x1 - x0, ddy = y1 - y0;
    float ex = ddx > 0.0f ? 1.0f : 0.0f, ey = ddy > 0.0f ? 1.0f : 0.0f; /* edge ahead */
    /* path parameter of each edge crossing, 1 when the edge is not reached */
    float tx = (ex - x0) / (ddx != 0.0f ? ddx : 1.0f), ty = (ey - y0) / (ddy != 0.0f ? ddy : 1.0f);
    tx = ddx != 0.0f && tx < 1.0f ? tx : 1.0f;
    ty = ddy != 0.0f && ty < 1.0f ? ty : 1.0f;
    float ta = tx < ty ? tx : ty, tb = tx < ty ? ty : tx;
    tb = tb < 1.0f ? tb : ta; /* at most one crossing: PB = PA */
    /* a point at parameter t: the end point if t == 1, on the x edge if t is the x crossing,
     * on the y edge if the y crossing, else on the line */
    p->x[0] = x0; p->y[0] = y0; p->t[0] = 0.0f;
    p->x[1] = ta == 1.0f ? x1 : (ta == tx ? ex : x0 + ta * ddx);
    p->y[1] = ta == 1.0f ? y1 : (ta == ty ? ey : y0 + ta * ddy);
    p->t[1] = ta;
    p->x[2] = tb == 1.0f ? x1 : (tb == tx ? ex : x0 + tb * ddx);
    p->y[2] = tb == 1.0f ? y1 : (tb == ty ? ey : y0 + tb * ddy);
    p->t[2] = tb;
    p->x[3] = x1; p->y[3] = y1; p->t[3] = 1.0f;
}

/* The eight current contributions of one piece (xa,ya)->(xb,yb), given in coordinates local
 * to the cell it lies in, by the Villasenor-Buneman area rule (exact discrete continuity for
 * linear shapes): w[e * ws] for e = Jx(k), Jx(k+s), Jy(k), Jy(k+1), Jz(k), Jz(k+1), Jz(k+s),
 * Jz(k+s+1). cx = q w dx/dt, cy = q w dy/dt (current per cell-unit displacement), cz = the
 * piece's share of q w vz. ws is the spacing of the outputs (1 for a private array, the
 * chunk length when a vectorised loop fills structure-of-arrays buffers). */
EMPIC_HD void piece_weights(float xa, float ya, float xb, float yb, float cx, float cy, float cz,
                            float *w, int ws)
{
    float xm = 0.5f * (xa + xb), ym = 0.5f * (ya + yb);
    float qx = cx * (xb - xa), qy = cy * (yb - ya);
    w[0 * ws] = qx * (1.0f - ym);
    w[1 * ws] = qx * ym;
    w[2 * ws] = qy * (1.0f - xm);
    w[3 * ws] = qy * xm;
    w[4 * ws] = cz * (1.0f - xm) * (1.0f - ym);
    w[5 * ws] = cz * xm * (1.0f - ym);
    w[6 * ws] = cz * (1.0f - xm) * ym;
    w[7 * ws] = cz * xm * ym;
}

/* Split a move from offset (x0,y0) to (x1,y1) (same cell-local frame) into Kong's three
 * pieces: for piece m, o[m * ws] = its cell's shift from the start cell (row stride s) and
 * w[(8 m + e) * ws] its weights. An empty middle piece gets zero weights; returns whether it
 * is non-empty. Selects only, so a loop over particles vectorises. */
EMPIC_HD int move_pieces(float x0, float y0, float x1, float y1, float cx, float cy, float qvz,
                         int s, int *o, float *w, int ws)
{
    kong_split p;
    kong_split3(x0, y0, x1, y1, &p);
    EMPIC_UNROLL
    for (int m = 0; m < 3; m++) {
        /* the cell of the piece holds its midpoint */
        float mx = 0.5f * (p.x[m] + p.x[m + 1]), my = 0.5f * (p.y[m] + p.y[m + 1]);
        int sx = mx < 0.0f ? -1 : (mx >= 1.0f ? 1 : 0);
        int sy = my < 0.0f ? -1 : (my >= 1.0f ? 1 : 0);
        o[m * ws] = sx + sy * s;
        piece_weights(p.x[m] - (float)sx, p.y[m] - (float)sy, p.x[m + 1] - (float)sx,
                      p.y[m + 1] - (float)sy, cx, cy, qvz * (p.t[m + 1] - p.t[m]),
                      w + 8 * m * ws, ws);
    }
    return p.t[2] != p.t[1];
}

/* Add one piece's weights (spaced ws apart) at cell k of a mesh or tile of row stride s. */
EMPIC_HD void deposit_add(float *jx, float *jy, float *jz, int k, int s, const float *w, int ws)
{
    EMPIC_ACC(&jx[k], w[0 * ws]);
    EMPIC_ACC(&jx[k + s], w[1 * ws]);
    EMPIC_ACC(&jy[k], w[2 * ws]);
    EMPIC_ACC(&jy[k + 1], w[3 * ws]);
    EMPIC_ACC(&jz[k], w[4 * ws]);
    EMPIC_ACC(&jz[k + 1], w[5 * ws]);
    EMPIC_ACC(&jz[k + s], w[6 * ws]);
    EMPIC_ACC(&jz[k + s + 1], w[7 * ws]);
}

/* Deposit the whole move of a particle starting at offset (x0,y0) of cell k and ending at
 * (x1,y1) in the same cell-local frame. The middle piece is skipped when empty (the only
 * branch); the other two are always deposited. */
EMPIC_HD void deposit_move(float *jx, float *jy, float *jz, int k, int s, float x0, float y0,
                           float x1, float y1, float cx, float cy, float qvz)
{
    int o[3];
    float w[24];
    int middle = move_pieces(x0, y0, x1, y1, cx, cy, qvz, s, o, w, 1);
    for (int m = 0; m < 3; m++)
        if (m != 1 || middle)
            deposit_add(jx, jy, jz, k + o[m], s, w + 8 * m, 1);
}

/* Charge of a particle at offset (x, y) of cell k onto the four nodes (linear weights). */
EMPIC_HD void deposit_charge(float *rho, int k, int s, float x, float y, float qw)
{
    EMPIC_ACC(&rho[k], qw * (1.0f - x) * (1.0f - y));
    EMPIC_ACC(&rho[k + 1], qw * x * (1.0f - y));
    EMPIC_ACC(&rho[k + s], qw * (1.0f - x) * y);
    EMPIC_ACC(&rho[k + s + 1], qw * x * y);
}

/* Fixed-point accumulation (the GPU's shared-memory tiles): a contribution v becomes the
 * integer nearest to v * scale (scale a power of two chosen from the deck, so the product is
 * exact), and integer adds give the same sum in any order: a deposit whose result does not
 * depend on which thread adds first. */
EMPIC_HD long long fixed_of(float v, float scale)
{
    return llrintf(v * scale);
}

#ifdef __CUDACC__
/* A 64-bit add as native 32-bit atomics (sm_90 runs a 64-bit shared-memory atomic as a
 * compare-and-swap loop): the low word first, whose old value tells whether this add carried;
 * the high word only when its part plus the carry is not zero (not for most small values of
 * either sign). The final 64-bit sum is exact whatever the order of the adds. */
__device__ __forceinline__ void fixed_atomic_add(long long *p, long long v)
{
    unsigned *w = (unsigned *)p; /* little-endian: w[0] is the low word */
    const unsigned lo = (unsigned)v, old = atomicAdd(&w[0], lo);
    const unsigned hi = (unsigned)((unsigned long long)v >> 32) + (old + lo < old ? 1u : 0u);
    if (hi)
        atomicAdd(&w[1], hi);
}
#endif

#ifdef __CUDA_ARCH__
#define EMPIC_ACC_FIXED(p, v) fixed_atomic_add((p), fixed_of((v), scale))
#else
#define EMPIC_ACC_FIXED(p, v) (*(p) += fixed_of((v), scale))
#endif

/* deposit_add into fixed-point tiles. */
EMPIC_HD void deposit_add_fixed(long long *jx, long long *jy, long long *jz, int k, int s,
                                const float *w, int ws, float scale)
{
    EMPIC_ACC_FIXED(&jx[k], w[0 * ws]);
    EMPIC_ACC_FIXED(&jx[k + s], w[1 * ws]);
    EMPIC_ACC_FIXED(&jy[k], w[2 * ws]);
    EMPIC_ACC_FIXED(&jy[k + 1], w[3 * ws]);
    EMPIC_ACC_FIXED(&jz[k], w[4 * ws]);
    EMPIC_ACC_FIXED(&jz[k + 1], w[5 * ws]);
    EMPIC_ACC_FIXED(&jz[k + s], w[6 * ws]);
    EMPIC_ACC_FIXED(&jz[k + s + 1], w[7 * ws]);
}

/* deposit_charge into a fixed-point tile. */
EMPIC_HD void deposit_charge_fixed(long long *rho, int k, int s, float x, float y, float qw,
                                   float scale)
{
    EMPIC_ACC_FIXED(&rho[k], qw * (1.0f - x) * (1.0f - y));
    EMPIC_ACC_FIXED(&rho[k + 1], qw * x * (1.0f - y));
    EMPIC_ACC_FIXED(&rho[k + s], qw * (1.0f - x) * y);
    EMPIC_ACC_FIXED(&rho[k + s + 1], qw * x * y);
}

/* The fixed-point scale for contributions of at most `bound` in magnitude: the power of two
 * that maps `bound` to between 2^29 and 2^30. A particle adds less than 3 bound to one tile
 * entry in a step (three pieces), so a 64-bit entry holds the sum of 2^33/3 particles of the
 * largest weight, all on one node (more than a cluster's 2^31 slots), without overflow, and
 * the quantum, 1/scale, is 0.9e-9 to 1.9e-9 of bound: 30 to 60 times below the float
 * rounding of the largest contribution. */
EMPIC_HD float fixed_scale(double bound)
{
    int e;
    frexp(bound > 0.0 ? bound : 1.0, &e); /* bound = m 2^e, m in [0.5, 1) */
    return (float)ldexp(1.0, 30 - e);
}

/* Split a coordinate x in [-1, 2) into an integer cell shift and an offset in [0, 1). */
EMPIC_HD int offset_wrap(float *x)
{
    int d = *x < 0.0f ? -1 : (*x >= 1.0f ? 1 : 0);
    float o = *x - (float)d;
    /* -tiny + 1 rounds to 1.0f: keep the offset strictly below one */
    int fix = o >= 1.0f;
    *x = fix ? 0.0f : o;
    return d + fix;
}

/* 4-bit cluster migration code: bits 0-1 the x move, bits 2-3 the y move; each 0 (stay),
 * 1 (+1 cluster) or 2 (-1 cluster). */
EMPIC_HD unsigned mig_code(int dcx, int dcy)
{
    return (unsigned)((dcx < 0 ? 2 : dcx) | ((dcy < 0 ? 2 : dcy) << 2));
}
EMPIC_HD int mig_dx(unsigned c) { return (c & 3u) == 1u ? 1 : ((c & 3u) == 2u ? -1 : 0); }
EMPIC_HD int mig_dy(unsigned c) { return ((c >> 2) & 3u) == 1u ? 1 : (((c >> 2) & 3u) == 2u ? -1 : 0); }

#endif
