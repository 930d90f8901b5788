/* pml.h - per-cell formulas of the absorbing field boundaries, shared by both backends:
 * the convolutional PML (CPML, Roden & Gedney 2000, with kappa = 1) and first-order Mur.
 *
 * CPML: inside a layer the spatial derivative d/dx of the curl is replaced by d/dx + psi,
 * where psi is the recursive convolution psi <- b psi + c d/dx with b = exp(-(sigma + alpha)
 * h), c = sigma / (sigma + alpha) (b - 1) for an update of length h. The normal Yee update is
 * done everywhere and the functions below add the psi terms afterwards, reading the same
 * fields as the Yee update (yee.h conventions: entry k is the component's Yee point of cell
 * (i, j), s the row stride; q indexes the layer's psi arrays). B is advanced in two half
 * steps B -= h (curl E + psi), h = dt/2, with the same E(n): its psi gets one full-step
 * update in the first half step (upd = 1) and is reused in the second (upd = 0), so the two
 * halves compose exactly to the standard full-step CPML. (Updating psi in each half step
 * with half-step coefficients lags it by half a step and reflects ~1e-2.) */
#ifndef PML_H
#define PML_H

#include "empic.h"
#include <math.h>

/* Grading: sigma(d) = sigma_max d^PML_ORDER at depth d in [0, 1] (0 at the inner edge,
 * 1 at the box edge), sigma_max = PML_SIGMA * (PML_ORDER + 1) / delta for cells of size
 * delta (c = 1); alpha(d) = PML_ALPHA (1 - d) absorbs low-frequency, evanescent fields. */
#define PML_ORDER 3
#define PML_SIGMA 0.8
#define PML_ALPHA 0.05

EMPIC_HD double pml_sigma(double depth, double delta)
{
    double d = depth < 0.0 ? 0.0 : (depth > 1.0 ? 1.0 : depth);
    return PML_SIGMA * (PML_ORDER + 1) / delta * d * d * d;
}

/* Recursion coefficients b, c of one update of length h at depth d. */
EMPIC_HD void pml_coef(double depth, double delta, double h, float *b, float *c)
{
    double d = depth < 0.0 ? 0.0 : (depth > 1.0 ? 1.0 : depth);
    double sg = pml_sigma(d, delta), al = PML_ALPHA * (1.0 - d);
    double bb = exp(-(sg + al) * h);
    *b = (float)bb;
    *c = sg > 0.0 ? (float)(sg / (sg + al) * (bb - 1.0)) : 0.0f;
}

/* x layer, E after E += dt (curl B - J): Ey at (i, j+1/2), Ez at (i, j). idx = 1/dx. */
EMPIC_HD void pml_e_x(float *ey, float *ez, const float *by, const float *bz, int k,
                      float *pey, float *pez, int q, float b, float c, float idx, float dt)
{
    pey[q] = b * pey[q] + c * (bz[k] - bz[k - 1]) * idx;
    pez[q] = b * pez[q] + c * (by[k] - by[k - 1]) * idx;
    ey[k] -= dt * pey[q];
    ez[k] += dt * pez[q];
}

/* y layer, E: Ex at (i+1/2, j), Ez at (i, j). idy = 1/dy. */
EMPIC_HD void pml_e_y(float *ex, float *ez, const float *bx, const float *bz, int k, int s,
                      float *pex, float *pez, int q, float b, float c, float idy, float dt)
{
    pex[q] = b * pex[q] + c * (bz[k] - bz[k - s]) * idy;
    pez[q] = b * pez[q] + c * (bx[k] - bx[k - s]) * idy;
    ex[k] += dt * pex[q];
    ez[k] -= dt * pez[q];
}

/* x layer, B after one half step B -= h curl E: By at (i+1/2, j), Bz at (i+1/2, j+1/2). */
EMPIC_HD void pml_b_x(float *by, float *bz, const float *ey, const float *ez, int k,
                      float *pby, float *pbz, int q, float b, float c, float idx, float h,
                      int upd)
{
    if (upd) {
        pby[q] = b * pby[q] + c * (ez[k + 1] - ez[k]) * idx;
        pbz[q] = b * pbz[q] + c * (ey[k + 1] - ey[k]) * idx;
    }
    by[k] += h * pby[q];
    bz[k] -= h * pbz[q];
}

/* y layer, B: Bx at (i, j+1/2), Bz at (i+1/2, j+1/2). */
EMPIC_HD void pml_b_y(float *bx, float *bz, const float *ex, const float *ez, int k, int s,
                      float *pbx, float *pbz, int q, float b, float c, float idy, float h,
                      int upd)
{
    if (upd) {
        pbx[q] = b * pbx[q] + c * (ez[k + s] - ez[k]) * idy;
        pbz[q] = b * pbz[q] + c * (ex[k + s] - ex[k]) * idy;
    }
    bx[k] -= h * pbx[q];
    bz[k] += h * pbz[q];
}

/* First-order Mur at an edge node: the new edge value from the old edge value, the old and
 * new values one cell inside; m = (dt - d) / (dt + d) for cells of size d. */
EMPIC_HD float mur_edge(float edge_old, float in_old, float in_new, float m)
{
    return in_old + m * (in_new - edge_old);
}

#endif
