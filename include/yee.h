/* yee.h - per-cell Yee FDTD updates and the current filter stencil, shared by both backends.
 * Index conventions as in particle.h: entry k of a component is its Yee point of cell (i, j),
 * s is the row stride. */
#ifndef YEE_H
#define YEE_H

#include "empic.h"

/* B -= h curl E at cell k; hx = h/dx, hy = h/dy (h = dt/2 for the two half steps). */
EMPIC_HD void yee_b_cell(float *bx, float *by, float *bz, const float *ex, const float *ey,
                         const float *ez, int k, int s, float hx, float hy)
{
    bx[k] -= hy * (ez[k + s] - ez[k]);
    by[k] += hx * (ez[k + 1] - ez[k]);
    bz[k] -= hx * (ey[k + 1] - ey[k]) - hy * (ex[k + s] - ex[k]);
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

/* Three-point smoothing a*f[-d] + b*f[0] + a*f[+d]: binomial (a=1/4, b=1/2) or the
 * compensator that restores the long-wavelength response after N binomial passes. */
EMPIC_HD float filter_3pt(const float *f, int k, int d, float a, float b)
{
    return a * (f[k - d] + f[k + d]) + b * f[k];
}

#endif
