/* particle.h - per-particle physics shared by the CPU backend and the CUDA kernels:
 * field gather from the Yee mesh, relativistic Boris push, the move of a particle with Kong's
 * branch-free three-piece current split (which pieces it deposits, its new cell and its
 * migration between clusters) and the Villasenor-Buneman deposit of each piece.
 *
 * Positions are (cell, offset) with the offset in cell units in [0, 1). Field and current
 * arrays are addressed through a base pointer, the linear index k of the particle's cell
 * (i, j) node and the row stride s, so the same code reads a global mesh or a shared-memory
 * tile. Array entry k of each component is that component at its Yee point of cell (i, j)
 * (yee.h's stagger table): Ex, Jx (i+1/2, j); Ey, Jy (i, j+1/2); Ez, Jz, rho (i, j);
 * Bx (i, j+1/2); By (i+1/2, j); Bz (i+1/2, j+1/2). */
#ifndef PARTICLE_H
#define PARTICLE_H

#include "cluster.h"
#include "empic.h"
#include "yee.h"
#include <math.h>

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

/* Component m (yee.h: YEE_EX..YEE_BZ) at offset (x, y) of cell k. */
EMPIC_HD float gather_yee(const float *f, int m, int k, int s, float x, float y)
{
    return gather_component(f, k, s, x, y, yee_hx(m), yee_hy(m));
}

/* Component m at offset (x, y) of cell k of the sum of the grid's array f and an external
 * field's array g (extfield.h) at the same Yee points, summed before the interpolation as the
 * push's field stage sums them (g NULL: gather_yee of f). */
EMPIC_HD float gather_yee_ext(const float *f, const float *g, int m, int k, int s, float x,
                              float y)
{
    if (!g)
        return gather_yee(f, m, k, s, x, y);
    int ox, oy;
    float wx = gather_axis(x, yee_hx(m), &ox), wy = gather_axis(y, yee_hy(m), &oy);
    int b = k + ox + oy * s;
    return gather_bilinear(f[b] + g[b], f[b + 1] + g[b + 1], f[b + s] + g[b + s],
                           f[b + s + 1] + g[b + s + 1], wx, wy);
}

/* E and B at offset (x, y) of cell k. */
EMPIC_HD void gather_eb(const float *ex, const float *ey, const float *ez, const float *bx,
                        const float *by, const float *bz, int k, int s, float x, float y,
                        float e[3], float b[3])
{
    e[0] = gather_yee(ex, YEE_EX, k, s, x, y);
    e[1] = gather_yee(ey, YEE_EY, k, s, x, y);
    e[2] = gather_yee(ez, YEE_EZ, k, s, x, y);
    b[0] = gather_yee(bx, YEE_BX, k, s, x, y);
    b[1] = gather_yee(by, YEE_BY, k, s, x, y);
    b[2] = gather_yee(bz, YEE_BZ, k, s, x, y);
}

/* For a staged field: the stencil corner of component m relative to cell k, for a particle
 * in the upper (qx = 1) or lower (qx = 0) half of its cell along x, likewise qy along y
 * (gather_axis: a staggered component's stencil starts a cell lower in the lower half). */
EMPIC_HD int gather_corner(int m, int qx, int qy, int s)
{
    return -(yee_hx(m) && !qx) - (yee_hy(m) && !qy) * s;
}

/* Component m at offset (x, y) from its four stencil values v[0], v[vs], v[2 vs], v[3 vs]
 * (f[b], f[b+1], f[b+s], f[b+s+1] at gather_corner's b): gather_component's weights and
 * operations, for a field staged per particle. */
EMPIC_HD float gather_stencil(const float *v, int vs, int m, float x, float y)
{
    int ox, oy;
    float wx = gather_axis(x, yee_hx(m), &ox), wy = gather_axis(y, yee_hy(m), &oy);
    return gather_bilinear(v[0], v[vs], v[2 * vs], v[3 * vs], wx, wy);
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
    /* one division: q dt b / (2 m g) as three divisions took the GPU's slow division path
     * whenever b is tiny (a cold plasma: 17 % of its particle kernel on a GPU) */
    float r = qdt2m / g;
    float tx = r * bx, ty = r * by, tz = r * bz;
    float f = 2.0f / (1.0f + tx * tx + ty * ty + tz * tz);
    float px = mx + my * tz - mz * ty, py = my + mz * tx - mx * tz, pz = mz + mx * ty - my * tx;
    mx += f * (py * tz - pz * ty);
    my += f * (pz * tx - px * tz);
    mz += f * (px * ty - py * tx);
    *ux = mx + ax;
    *uy = my + ay;
    *uz = mz + az;
}

/* qdt2m of a Boris step of length h (h = dt for the push, -dt/2 for the initial step back)
 * of a species of charge to mass ratio qm. */
EMPIC_HD float boris_qdt2m(double h, float qm) { return (float)(0.5 * h) * qm; }

/* The same step on arrays u[3], e[3], b[3]. */
EMPIC_HD void boris_push(float u[3], const float e[3], const float b[3], float qdt2m)
{
    boris_step(&u[0], &u[1], &u[2], e[0], e[1], e[2], b[0], b[1], b[2], qdt2m);
}

EMPIC_HD float lorentz_gamma(float ux, float uy, float uz)
{
    return sqrtf(1.0f + ux * ux + uy * uy + uz * uz);
}

/* A particle's share w (gamma - 1) of the kinetic energy at time n, from its momenta u0 =
 * u(n-1/2) and u1 = u(n+1/2) (gamma of their mean). */
EMPIC_HD double kinetic_share(float w, float u0x, float u0y, float u0z, float u1x, float u1y,
                              float u1z)
{
    float gm = lorentz_gamma(0.5f * (u0x + u1x), 0.5f * (u0y + u1y), 0.5f * (u0z + u1z));
    return (double)w * (gm - 1.0f);
}

/* The kinetic energy of a species of mass m from the sum of its kinetic_share. */
EMPIC_HD double kinetic_total(double sum, float m, double dx, double dy)
{
    return sum * m * dx * dy;
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

/* The path parameter at which a move a0 -> a1 along one axis (a0 in [0, 1)) crosses the cell
 * edge ahead of it (at 1 moving up, 0 moving down), 1 when it does not reach it. */
EMPIC_HD float kong_edge(float a0, float a1)
{
    float d = a1 - a0, e = d > 0.0f ? 1.0f : 0.0f;
    float t = (e - a0) / (d != 0.0f ? d : 1.0f);
    return d != 0.0f && t < 1.0f ? t : 1.0f;
}

EMPIC_HD void kong_split3(float x0, float y0, float x1, float y1, kong_split *p)
{
    float ddx = x1 - x0, ddy = y1 - y0;
    float ex = ddx > 0.0f ? 1.0f : 0.0f, ey = ddy > 0.0f ? 1.0f : 0.0f; /* edge ahead */
    /* path parameter of each edge crossing, 1 when the edge is not reached */
    float tx = kong_edge(x0, x1), ty = kong_edge(y0, y1);
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

/* The shift (-1, 0 or 1) from the start cell of the cell of a piece from a to b along one
 * axis (offsets in the start cell's frame): the cell holding its midpoint. */
EMPIC_HD int piece_shift(float a, float b)
{
    float m = 0.5f * (a + b);
    return m < 0.0f ? -1 : (m >= 1.0f ? 1 : 0);
}

/* Piece m of Kong's split p (current factors cx, cy and qvz as move_pieces'): the shift of
 * its cell from the start cell (row stride s) into *o and its weights into w (spacing ws). */
EMPIC_HD void move_piece(const kong_split *p, int m, float cx, float cy, float qvz, int s,
                         int *o, float *w, int ws)
{
    /* the cell of the piece holds its midpoint */
    int sx = piece_shift(p->x[m], p->x[m + 1]), sy = piece_shift(p->y[m], p->y[m + 1]);
    *o = sx + sy * s;
    piece_weights(p->x[m] - (float)sx, p->y[m] - (float)sy, p->x[m + 1] - (float)sx,
                  p->y[m + 1] - (float)sy, cx, cy, qvz * (p->t[m + 1] - p->t[m]), w, ws);
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
    for (int m = 0; m < 3; m++)
        move_piece(&p, m, cx, cy, qvz, s, &o[m * ws], w + 8 * m * ws, ws);
    return p.t[2] != p.t[1];
}

/* Whether Kong's split of a move from (x0, y0) to (x1, y1) is one piece in the start cell:
 * no edge crossed (the first point is the end point, the middle and last pieces are empty)
 * and the midpoint in the start cell. move_pieces' first piece is then, bitwise,
 * piece_weights(x0, y0, x1, y1, cx, cy, qvz) (its shift 0 and its share of the step,
 * 1 - 0, are exact), and move_cell adds no other piece unless it reports a new cell. */
EMPIC_HD int move_one_piece(float x0, float y0, float x1, float y1)
{
    return kong_edge(x0, x1) == 1.0f && kong_edge(y0, y1) == 1.0f &&
           piece_shift(x0, x1) == 0 && piece_shift(y0, y1) == 0;
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

/* Where weight e (0-7, deposit_add's order) of a piece at cell k goes in a tile of row
 * stride s whose jx, jy, jz lie tp apart (the GPU's fixed-point tile): component times tp
 * plus the cell. test_deposit checks it against deposit_add. */
EMPIC_HD int piece_entry(int e, int k, int s, int tp)
{
    const int comp = e < 2 ? 0 : e < 4 ? 1 : 2;
    const int off = e == 1 || e == 6 ? s : e == 3 || e == 5 ? 1 : e == 7 ? s + 1 : 0;
    return comp * tp + k + off;
}

/* Add the pieces of a move that `mask` selects (bit m: piece m of move_pieces' o, w, spaced
 * ws apart) at cell k of a mesh or tile of row stride s, in piece order. */
EMPIC_HD void deposit_pieces(float *jx, float *jy, float *jz, int k, int s, unsigned mask,
                             const int *o, const float *w, int ws)
{
    EMPIC_UNROLL
    for (int m = 0; m < 3; m++)
        if (mask & (1u << m))
            deposit_add(jx, jy, jz, k + o[m * ws], s, w + 8 * m * ws, ws);
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

/* *p += v wrapping around (as the GPU's integer atomics do) instead of overflowing: a
 * non-finite contribution (fixed_of gives LLONG_MIN) must not be undefined behaviour before
 * the run's guards find it. */
EMPIC_HD void fixed_add(long long *p, long long v)
{
    *p = (long long)((unsigned long long)*p + (unsigned long long)v);
}

#ifdef __CUDACC__
/* The low-word half of fixed_atomic_add, also for entries whose two words lie apart (the
 * GPU's split tile): v's low word added at *lo; returns what the high word still needs, v's
 * high part plus the carry. */
__device__ __forceinline__ unsigned fixed_atomic_add_low(unsigned *lo, long long v)
{
    const unsigned l = (unsigned)v, old = atomicAdd(lo, l);
    return (unsigned)((unsigned long long)v >> 32) + (old + l < old ? 1u : 0u);
}

/* A 64-bit add as native 32-bit atomics (sm_90 runs a 64-bit shared-memory atomic as a
 * compare-and-swap loop): the low word first, whose old value tells whether this add carried;
 * the high word only when its part plus the carry is not zero (not for most small values of
 * either sign). The final 64-bit sum is exact whatever the order of the adds. */
__device__ __forceinline__ void fixed_atomic_add(long long *p, long long v)
{
    unsigned *w = (unsigned *)p; /* little-endian: w[0] is the low word */
    const unsigned hi = fixed_atomic_add_low(&w[0], v);
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

/* deposit_pieces into fixed-point tiles. */
EMPIC_HD void deposit_pieces_fixed(long long *jx, long long *jy, long long *jz, int k, int s,
                                   unsigned mask, const int *o, const float *w, int ws,
                                   float scale)
{
    EMPIC_UNROLL
    for (int m = 0; m < 3; m++)
        if (mask & (1u << m))
            deposit_add_fixed(jx, jy, jz, k + o[m * ws], s, w + 8 * m * ws, ws, scale);
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

/* The per-step constants of the move of a species of charge q, from the run's dt, dx, dy:
 * cells per unit velocity (rdx = dt/dx, rdy) and current per cell-unit displacement
 * (jxq = dx/dt, jyq). */
typedef struct {
    float rdx, rdy, jxq, jyq, q;
} move_step;

EMPIC_HD move_step move_step_of(double dt, double dx, double dy, float q)
{
    move_step m;
    m.rdx = (float)(dt / dx);
    m.rdy = (float)(dt / dy);
    m.jxq = (float)(dx / dt);
    m.jyq = (float)(dy / dt);
    m.q = q;
    return m;
}

/* The new cell and offset of a particle of cluster T that moved to offset (x1, y1) in the
 * frame of its cell *cell (into *cell, *x, *y; wrapped periodically in the nx x ny grid) and
 * its move between clusters (*dcx, *dcy); returns the pieces to deposit (deposit_pieces'
 * mask), mid telling whether Kong's middle piece is non-empty. */
EMPIC_HD unsigned move_cell(const cluster_tile *T, int nx, int ny, float x1, float y1,
                            uint32_t *cell, float *x, float *y, int *dcx, int *dcy, int mid)
{
    int di = offset_wrap(&x1), dj = offset_wrap(&y1);
    int i = cell_i(*cell) + di, j = cell_j(*cell) + dj;
    *dcx = range_step(i, T->xlo, T->xhi);
    *dcy = range_step(j, T->ylo, T->yhi);
    *cell = cell_pack(wrap_index(i, nx), wrap_index(j, ny));
    *x = x1;
    *y = y1;
    return 1u | ((di | dj) != 0 ? 4u : 0u) | (mid ? 2u : 0u);
}

/* The move of a particle of cluster T to offset (x1, y1) in the frame of its cell *cell,
 * from offset (*x, *y), with current factors cx, cy, cz (move_pieces): Kong's pieces into
 * o and w (spacing ws, tile row stride s); the new offset into (*x, *y), the new cell
 * (wrapped periodically in the nx x ny grid) into *cell and its move between clusters into
 * *dcx, *dcy. Returns the pieces to deposit (deposit_pieces' mask): the first always, the
 * middle one only after two edge crossings, the last only after a cell change; the pieces
 * left out have zero weights, so a cold or warm plasma needs 8 adds per particle, not 24. */
EMPIC_HD unsigned move_to(const cluster_tile *T, int nx, int ny, int s, float x1, float y1,
                          float cx, float cy, float cz, uint32_t *cell, float *x, float *y,
                          int *dcx, int *dcy, int *o, float *w, int ws)
{
    int mid = move_pieces(*x, *y, x1, y1, cx, cy, cz, s, o, w, ws);
    return move_cell(T, nx, ny, x1, y1, cell, x, y, dcx, dcy, mid);
}

/* The end point (x1, y1) of a particle's move over one step and the current factors of its
 * pieces (move_pieces' cx, cy, qvz). Returned by value: SIMD loops vectorise it (gcc does
 * not vectorise cpu_deposit.c's loop well through pointer outputs: 4 times slower). */
typedef struct {
    float x1, y1, cx, cy, cz;
} move_endpoint;

/* The move of a particle of weight pw and momentum u = u(n+1/2) from offset (x, y) over one
 * step, at v = u / gamma, for its current q pw v. */
EMPIC_HD move_endpoint move_end(const move_step *m, float ux, float uy, float uz, float pw,
                                float x, float y)
{
    float ig = 1.0f / lorentz_gamma(ux, uy, uz);
    float qw = m->q * pw;
    move_endpoint e = {x + ux * ig * m->rdx, y + uy * ig * m->rdy, qw * m->jxq, qw * m->jyq,
                       qw * uz * ig};
    return e;
}

/* The move of one particle of weight pw and momentum u = u(n+1/2) over one step: x(n) ->
 * x(n+1) at v = u / gamma, its current q pw v split as move_to does. */
EMPIC_HD unsigned particle_move(const move_step *m, const cluster_tile *T, int nx, int ny, int s,
                                float ux, float uy, float uz, float pw, uint32_t *cell,
                                float *x, float *y, int *dcx, int *dcy, int *o, float *w, int ws)
{
    const move_endpoint e = move_end(m, ux, uy, uz, pw, *x, *y);
    return move_to(T, nx, ny, s, e.x1, e.y1, e.cx, e.cy, e.cz, cell, x, y, dcx, dcy, o, w, ws);
}

/* Whether a particle stays where it is and deposits nothing this step: a neutral atom
 * (charge state z = 0) with zero momentum. A cold species' atoms keep zero momentum while
 * neutral (species.cold), so z alone tells. */
EMPIC_HD int particle_at_rest(unsigned z, int cold, float ux, float uy, float uz)
{
    return z == 0 && (cold || (ux == 0.0f && uy == 0.0f && uz == 0.0f));
}

#endif
