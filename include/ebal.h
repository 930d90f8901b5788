/* ebal.h - the energy balance of an open box (docs/output.md, energy.csv), shared by both
 * backends: the rules for what the fields carry out through each side, what the lasers put
 * in and what the particle walls and the moving window take out.
 *
 * The balance region is the box less its absorbing edges: the PML layers (pml.cells deep)
 * and the Mur edge node lines (one cell deep). Along each axis it spans nodes [lo, hi]: a
 * component whose Yee point lies on a node along that axis (Ey, Ez, Bx along x) is inside for
 * lo <= i <= hi, one half a cell up (Ex, By, Bz along x) for lo <= i < hi (a periodic axis:
 * lo = 0, hi = n, everything). Yee's discrete Poynting theorem for such a region, with the
 * energy W' = (1/2) sum E(n)^2 + (1/2) sum B(n-1/2) B(n+1/2), is exact:
 *   W'(n+1) - W'(n) = - dt sum over the edge lines of S(n+1/2) + dt sum E(n+1/2) dE/dt|_src
 *                     + dt sum B(n+1/2) dB/dt|_src - dt sum E(n+1/2) J(n+1/2),
 * with E(n+1/2) = (E(n) + E(n+1))/2 on the region's edge node line and B(n+1/2) on the half
 * line just outside it: S_x = Ey Bz - Ez By on an x side, S_y = Ez Bx - Ex Bz on a y side
 * (outward positive: negated on a low side). The TFSF laser terms are the sources: the E
 * plane's adds dE to E in the step (work E(n+1/2) dE), the B column's adds dB(n) after each
 * of the two half steps with E(n) (work B(n+1/2) (dB(n) + dB(n+1)) per step). The E terms
 * are accumulated in two halves: the E(n) half before the E step and the E(n+1) half after
 * it, with the same B(n+1/2). The field energy reported (yee_energy of E(n), B(n)) differs
 * from W' by the stagger term (ebal_stagger), and the moving window's shift moves a column
 * across the region's x edges (ebal_shift_column).
 *
 * Sums are per slot: the cluster row (x side, x laser) or column (y side, y laser) the line
 * entry lies in, one rank owning each slot, each slot's entries added in order: any rank or
 * thread count gives the same doubles. */
#ifndef EBAL_H
#define EBAL_H

#include "cluster.h"
#include "empic.h"
#include "laser.h"
#include "yee.h"
#include <math.h>

typedef struct {
    int lo[2], hi[2]; /* edge node lines of the region along x and y */
} ebal_region;

/* Terms of the flow table: 4 sides (out), then 2 per laser (E plane, B column: in). */
enum { EBAL_SIDES = 4 };
EMPIC_HD int ebal_terms(int nlasers) { return EBAL_SIDES + 2 * nlasers; }

/* Whether component m (yee.h: 0..5) of cell (i, j) lies in the region. */
EMPIC_HD int ebal_inside(const ebal_region *r, int m, int i, int j)
{
    const int hx = yee_hx(m), hy = yee_hy(m);
    return i >= r->lo[0] && (hx ? i < r->hi[0] : i <= r->hi[0]) && j >= r->lo[1] &&
           (hy ? j < r->hi[1] : j <= r->hi[1]);
}

/* The B increments of the half step at cell k (yee_b_cell's, as doubles of the floats). */
EMPIC_HD void ebal_b_inc(const float *ex, const float *ey, const float *ez, int k, int s,
                         float hx, float hy, double inc[3])
{
    inc[0] = -(double)(hy * (ez[k + s] - ez[k]));
    inc[1] = (double)(hx * (ez[k + 1] - ez[k]));
    inc[2] = -(double)(hx * (ey[k + 1] - ey[k]) - hy * (ex[k + s] - ex[k]));
}

/* The energy of the fields is reported with E(n) and B(n) = B(n-1/2) - (dt/2) curl E(n),
 * the mean of B(n-1/2) and B(n+1/2) (energy.csv's field_B); the conserved W' differs from it
 * by (1/2) sum |B(n+1/2) - B(n)|^2 = (1/2) sum |(dt/2) curl E(n)|^2 over the region, the
 * stagger term, an oscillation of relative size (omega dt)^2 / 8 while a wave of frequency
 * omega is in the box. Its summand at cell (i, j) (index k, row stride s) from E(n), with
 * hx = dt/(2 dx), hy = dt/(2 dy) as the half B step uses; ebal_stagger_laser adds a laser's
 * B column increment to it. */
EMPIC_HD double ebal_stagger(const ebal_region *r, int i, int j, const float *ex,
                             const float *ey, const float *ez, int k, int s, float hx, float hy)
{
    double inc[3], v = 0.0;
    ebal_b_inc(ex, ey, ez, k, s, hx, hy, inc);
    for (int m = 0; m < 3; m++)
        if (ebal_inside(r, YEE_BX + m, i, j))
            v += inc[m] * inc[m];
    return v;
}

/* What laser line ln (its B column after a half step at E's time level, laser.h e = 0) of a
 * beam along axis changes in the stagger summand at cell (i, j): the column's increment is
 * the curl's plus the source's. */
EMPIC_HD double ebal_stagger_laser(const ebal_region *r, const laser_beam *b,
                                   const laser_line *ln, int axis, int i, int j,
                                   const float *ex, const float *ey, const float *ez, int k,
                                   int s, float hx, float hy)
{
    if (!ln->on || (axis ? j : i) != ln->at)
        return 0.0;
    float v1 = 0.0f, v2 = 0.0f;
    laser_line_add(b, ln, axis ? i : j, &v1, &v2);
    double inc[3], w = 0.0;
    ebal_b_inc(ex, ey, ez, k, s, hx, hy, inc);
    const double a1 = inc[ln->d1 - 3], a2 = inc[ln->d2 - 3];
    if (ebal_inside(r, ln->d1, i, j))
        w += (a1 + v1) * (a1 + v1) - a1 * a1;
    if (ebal_inside(r, ln->d2, i, j))
        w += (a2 + v2) * (a2 + v2) - a2 * a2;
    return w;
}

/* The outward Poynting term of entry t of side k (enum deck_side) with E of one time level
 * and B(n+1/2): E on the region's edge node line, B on the half line outside it (cell node
 * - 1 on a low side, node on a high side); mesh cell (0, 0) at off, row stride s. The energy
 * per step is (1/2) dt h (this at E(n) + this at E(n+1)), h the cell size along the line. */
EMPIC_HD double ebal_side(const ebal_region *r, int k, int t, const float *ex, const float *ey,
                          const float *ez, const float *bx, const float *by, const float *bz,
                          int off, int s)
{
    const int axis = k / 2, hi = k & 1, node = hi ? r->hi[axis] : r->lo[axis];
    const int bc = hi ? node : node - 1;
    double v = 0.0;
    if (axis == 0) {
        const int ke = off + node + t * s, kb = off + bc + t * s;
        if (ebal_inside(r, YEE_EY, node, t))
            v += (double)ey[ke] * bz[kb];
        if (ebal_inside(r, YEE_EZ, node, t))
            v -= (double)ez[ke] * by[kb];
    } else {
        const int ke = off + t + node * s, kb = off + t + bc * s;
        if (ebal_inside(r, YEE_EZ, t, node))
            v += (double)ez[ke] * bx[kb];
        if (ebal_inside(r, YEE_EX, t, node))
            v -= (double)ex[ke] * bz[kb];
    }
    return hi ? v : -v;
}

/* Work of laser line ln (laser.h: e = 1, the E plane; e = 0, the B column) at entry t on the
 * fields a1 (component ln->d1), a2 (ln->d2) of the region: sum a dA with dA the increment the
 * line adds (per unit of the line's coefficients c1, c2). Entry t at mesh index k. The E
 * plane's work per step is (1/2) dx dy (this at E(n) + this at E(n+1)); the B column's is
 * dx dy (this with dB(n) + this with dB(n+1)), B(n+1/2). */
EMPIC_HD double ebal_laser(const ebal_region *r, const laser_beam *b, const laser_line *ln,
                           int axis, int t, const float *a1, const float *a2, int k)
{
    float v1 = 0.0f, v2 = 0.0f;
    laser_line_add(b, ln, t, &v1, &v2);
    const int i = axis ? t : ln->at, j = axis ? ln->at : t;
    double w = 0.0;
    if (ebal_inside(r, ln->d1, i, j))
        w += (double)a1[k] * v1;
    if (ebal_inside(r, ln->d2, i, j))
        w += (double)a2[k] * v2;
    return w;
}

/* The moving window's shift moves the fields one cell toward -x: in row t the components at
 * index lo along x leave the region through xmin (hi = 0), those at hi + 1 (on a node along
 * x) and hi (half a cell up) enter it from the xmax layer (hi = 1). Their sum of squares
 * before the shift (E(n+1), B(n+1/2): (1/2) dx dy times it is the energy moved); cell (0, 0)
 * of the mesh at off, row stride s. */
EMPIC_HD double ebal_shift_column(const ebal_region *r, int hi, int t, const float *ex,
                                  const float *ey, const float *ez, const float *bx,
                                  const float *by, const float *bz, int off, int s)
{
    const float *const a[6] = {ex, ey, ez, bx, by, bz};
    double v = 0.0;
    for (int m = 0; m < 6; m++) {
        const int i = hi ? r->hi[0] + !yee_hx(m) : r->lo[0];
        if (ebal_inside(r, m, hi ? i - 1 : i, t)) {
            const double q = a[m][off + i + t * s];
            v += q * q;
        }
    }
    return v;
}

/* The cluster (slot) a line entry's sum belongs to: entry t of a line along y at node
 * column `node` (x side, x laser) lies in cluster (cx_of[node], cy_of[t]); of a line along x
 * in (cx_of[t], cy_of[node]). */
EMPIC_HD int ebal_cluster(int axis, int node, int slot, const int *cx_of, const int *cy_of,
                          int ncx)
{
    return axis ? slot + ncx * cy_of[node] : cx_of[node] + ncx * slot;
}

/* A particle's energy w (gamma - 1) (times m dx dy in the sums) as it leaves. */
EMPIC_HD double ebal_particle(float w, float ux, float uy, float uz)
{
    const double u2 = (double)ux * ux + (double)uy * uy + (double)uz * uz;
    return (double)w * (u2 / (sqrt(1.0 + u2) + 1.0));
}

/* What a wall took from a particle whose migration code went from code0 to code1 and its
 * momentum from u0 to u1: all its energy when dropped (PBND_DROP), the difference when
 * re-emitted (thermal), 0 when the code is unchanged (no wall crossed) or reflected. */
EMPIC_HD double ebal_wall(unsigned code0, unsigned code1, float w, float u0x, float u0y,
                          float u0z, float u1x, float u1y, float u1z)
{
    if (code0 == code1)
        return 0.0;
    const double e0 = ebal_particle(w, u0x, u0y, u0z);
    return code1 == PBND_DROP ? e0 : e0 - ebal_particle(w, u1x, u1y, u1z);
}

/* Whether the window's shift drops a particle of cell column i with code `code` that was
 * not dropped already (cluster.h's window_shift_particle). */
EMPIC_HD int ebal_window_drops(int i, unsigned code) { return i == 0 && code != PBND_DROP; }

#endif
