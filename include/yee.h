/* yee.h - per-cell Yee FDTD updates and the current filter stencil, shared by both backends.
 * Index conventions as in particle.h: entry k of a component is its Yee point of cell (i, j),
 * s is the row stride. */
#ifndef YEE_H
#define YEE_H

#include "empic.h"
#include <math.h>

/* The six field components in the order of the gathers and the field stage (Ex, Ey, Ez,
 * Bx, By, Bz) and their Yee stagger: component m sits half a cell up along x when
 * yee_hx(m) (Ex, By, Bz) and along y when yee_hy(m) (Ey, Bx, Bz). */
enum { YEE_EX = 0, YEE_EY, YEE_EZ, YEE_BX, YEE_BY, YEE_BZ };
EMPIC_HD int yee_hx(int m) { return (0x31 >> m) & 1; }
EMPIC_HD int yee_hy(int m) { return (0x2a >> m) & 1; }

/* B - h curl E at cell k into *nbx, *nby, *nbz; hx = h/dx, hy = h/dy (h = dt/2 for the two
 * half steps). */
EMPIC_HD void yee_b_new(const float *bx, const float *by, const float *bz, const float *ex,
                        const float *ey, const float *ez, int k, int s, float hx, float hy,
                        float *nbx, float *nby, float *nbz)
{
    *nbx = bx[k] - hy * (ez[k + s] - ez[k]);
    *nby = by[k] + hx * (ez[k + 1] - ez[k]);
    *nbz = bz[k] - (hx * (ey[k + 1] - ey[k]) - hy * (ex[k + s] - ex[k]));
}

/* B -= h curl E at cell k. */
EMPIC_HD void yee_b_cell(float *bx, float *by, float *bz, const float *ex, const float *ey,
                         const float *ez, int k, int s, float hx, float hy)
{
    float x, y, z;
    yee_b_new(bx, by, bz, ex, ey, ez, k, s, hx, hy, &x, &y, &z);
    bx[k] = x;
    by[k] = y;
    bz[k] = z;
}

/* E += dt (curl B - J) at cell k; cx = dt/dx, cy = dt/dy. */
EMPIC_HD void yee_e_cell(float *ex, float *ey, float *ez, const float *bx, const float *by,
                         const float *bz, const float *jx, const float *jy, const float *jz,
                         int k, int s, float dt, float cx, float cy)
{
    ex[k] += cy * (bz[k] - bz[k - s]) - dt * jx[k];
    ey[k] += -cx * (bz[k] - bz[k - 1]) - dt * jy[k];
    ez[k] += cx * (by[k] - by[k - 1]) - cy * (bx[k] - bx[k - s]) - dt * jz[k];
}

/* Discrete divergence of E at node k, the Gauss-law partner of rho at the same node. */
EMPIC_HD float yee_div_e(const float *ex, const float *ey, int k, int s, float idx, float idy)
{
    return (ex[k] - ex[k - 1]) * idx + (ey[k] - ey[k - s]) * idy;
}

/* Guard cells: a mesh of nx x ny cells with G guard cells on each side, cell (i, j) at
 * o[i + j s] (o: cell (0, 0)); a side is periodic along x when px, along y when py. */

/* Whether a guard fill along x also carries the row above a rank's cells [j0, j1): the
 * box's edge row at ymax (j = ny, a Mur edge's node, which the rank holding its column sets)
 * where this rank reaches a ymax that is not periodic: no fill along y brings it into the
 * corners of the x guards. */
EMPIC_HD int yee_fill_top(int j1, int ny, int py) { return j1 == ny && !py; }

/* The fill of guard cell (i, j) of the frame: a copy of cell (*si, *sj), its periodic image
 * along the periodic axes (returns 1), or left as it is (returns 0): a guard row takes its
 * copy when y is periodic (its guard columns too, periodic in x or not), a guard column of
 * an interior row when x is periodic, and of the edge row at ymax (yee_fill_top). Copies
 * read no cell that the fill writes. */
EMPIC_HD int yee_guard_source(int i, int j, int nx, int ny, int px, int py, int *si, int *sj)
{
    if (j == ny && !py) { /* the edge row at ymax: its x guards alone */
        if (!px || (i >= 0 && i < nx))
            return 0;
        *si = wrap_index(i, nx);
        *sj = j;
        return 1;
    }
    if ((j < 0 || j >= ny) ? !py : !px)
        return 0;
    *si = px ? wrap_index(i, nx) : i;
    *sj = py ? wrap_index(j, ny) : j;
    return 1;
}

/* |F|^2 at entry k of a field's three components, in double: the summand of its energy. */
EMPIC_HD double yee_square(const float *a0, const float *a1, const float *a2, int k)
{
    return (double)a0[k] * a0[k] + (double)a1[k] * a1[k] + (double)a2[k] * a2[k];
}

/* The field energy (1/2) sum |F|^2 dx dy of a sum of yee_square. */
EMPIC_HD double yee_energy(double sum, double dx, double dy) { return 0.5 * sum * dx * dy; }

/* The Gauss-law residual |div E - (rho - rho_bg)| at node k. */
EMPIC_HD double yee_gauss_residual(const float *ex, const float *ey, const float *rho,
                                   double rho_bg, int k, int s, float idx, float idy)
{
    return fabs((double)yee_div_e(ex, ey, k, s, idx, idy) - ((double)rho[k] - rho_bg));
}

/* Three-point smoothing a*f[-d] + b*f[0] + a*f[+d]: binomial (a=1/4, b=1/2) or the
 * compensator that restores the long-wavelength response after N binomial passes. */
EMPIC_HD float filter_3pt(const float *f, int k, int d, float a, float b)
{
    return a * (f[k - d] + f[k + d]) + b * f[k];
}

/* The filter plan: along x, then along y, filter_pass_count(n, compensate) three-point passes of
 * filter_weights: n binomial passes, then (compensate) the compensator, whose response
 * cos^(2n)(k/2) (alpha - (alpha - 1) cos k), alpha = 1 + n/2, is flat to second order in k. */
EMPIC_HD int filter_pass_count(int n, int compensate) { return n > 0 ? n + (compensate != 0) : 0; }

EMPIC_HD void filter_weights(int n, int pass, float *a, float *b)
{
    float alpha = 1.0f + 0.5f * (float)n;
    *a = pass < n ? 0.25f : 0.5f * (1.0f - alpha);
    *b = pass < n ? 0.5f : alpha;
}

#endif
