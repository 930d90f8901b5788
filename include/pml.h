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

/* B's psi terms take one full-step update per E(n), at the first half B step with it (the
 * header comment): whether the half step at E's time level `step` updates them, recording
 * the step in *psi_step. */
EMPIC_HD int pml_psi_due(long *psi_step, long step)
{
    int upd = *psi_step != step;
    *psi_step = step;
    return upd;
}

/* Where a layer lies: cells [first, first + n) along `axis`, all len cells along the other.
 * Cell t < n len of the layer is cell (l, j) = (t mod n, t / n) of an x layer (depth l, row
 * j) and (i, l) = (t mod len, t / len) of a y layer, its psi index q = t. The index is
 * worked out in each axis' branch: with one shared before the branch nvcc hoists b psi
 * above it and fuses the recursion differently (other rounding on the device). */
typedef struct {
    int axis, first, n, len;
} pml_strip;

/* The mesh cell (i, j) of cell t of layer L (the numbering above): which rank holds it. */
EMPIC_HD void pml_strip_cell(const pml_strip *L, int t, int *i, int *j)
{
    *i = L->axis == 0 ? L->first + t % L->n : t % L->len;
    *j = L->axis == 0 ? t / L->n : L->first + t / L->len;
}

/* The other way: the cell t of layer L at mesh cell (i, j), or -1 where L has none. */
EMPIC_HD int pml_strip_index(const pml_strip *L, int i, int j)
{
    if (L->axis == 0)
        return i >= L->first && i < L->first + L->n ? j * L->n + (i - L->first) : -1;
    return j >= L->first && j < L->first + L->n ? (j - L->first) * L->len + i : -1;
}

/* The E psi terms of cell t of layer L (coefficients eb, ec by depth, psi arrays p0, p1:
 * Ey, Ez terms of an x layer, Ex, Ez of a y layer); cell (0, 0) at off, row stride s. */
EMPIC_HD void pml_e_cell(const pml_strip *L, int off, int s, int t, float *ex, float *ey,
                         float *ez, const float *bx, const float *by, const float *bz, float *p0,
                         float *p1, const float *eb, const float *ec, float id, float dt)
{
    if (L->axis == 0) {
        int j = t / L->n, l = t - j * L->n;
        pml_e_x(ey, ez, by, bz, off + L->first + l + j * s, p0, p1, j * L->n + l, eb[l], ec[l],
                id, dt);
    } else {
        int l = t / L->len, i = t - l * L->len;
        pml_e_y(ex, ez, bx, bz, off + i + (L->first + l) * s, s, p0, p1, l * L->len + i, eb[l],
                ec[l], id, dt);
    }
}

/* The B psi terms of cell t of layer L (By, Bz terms of an x layer, Bx, Bz of a y layer). */
EMPIC_HD void pml_b_cell(const pml_strip *L, int off, int s, int t, float *bx, float *by,
                         float *bz, const float *ex, const float *ey, const float *ez, float *p0,
                         float *p1, const float *bb, const float *bc, float id, float h, int upd)
{
    if (L->axis == 0) {
        int j = t / L->n, l = t - j * L->n;
        pml_b_x(by, bz, ey, ez, off + L->first + l + j * s, p0, p1, j * L->n + l, bb[l], bc[l],
                id, h, upd);
    } else {
        int l = t / L->len, i = t - l * L->len;
        pml_b_y(bx, bz, ex, ez, off + i + (L->first + l) * s, s, p0, p1, l * L->len + i, bb[l],
                bc[l], id, h, upd);
    }
}

/* First-order Mur at an edge node: the new edge value from the old edge value, the old and
 * new values one cell inside; m = (dt - d) / (dt + d) for cells of size d. */
EMPIC_HD float mur_edge(float edge_old, float in_old, float in_new, float m)
{
    return in_old + m * (in_new - edge_old);
}

/* A Mur side k (enum deck_side) of an nx x ny mesh (cell (0, 0) at off, row stride s): its
 * tangential E components are c1 (Ey on an x side, Ex on a y side) and c2 = Ez; entry t <
 * len of the edge node line is at ke0 + t kstep, of the line one node inside at ki0 + t
 * kstep. The side keeps 4 lines of len old values: c1 edge, c1 inside, c2 edge, c2 inside. */
typedef struct {
    int axis, len, ke0, ki0, kstep;
} mur_line;

EMPIC_HD mur_line mur_line_of(int k, int nx, int ny, int off, int s)
{
    mur_line m;
    const int axis = k / 2, N = axis ? ny : nx, along = axis ? s : 1;
    m.axis = axis;
    m.len = axis ? nx : ny;
    m.kstep = axis ? 1 : s;
    m.ke0 = off + ((k & 1) ? N : 0) * along;
    m.ki0 = off + ((k & 1) ? N - 1 : 1) * along;
    return m;
}

/* Before the E step: keep entry t's old values. */
EMPIC_HD void mur_save(const mur_line *m, int t, const float *c1, const float *c2, float *o)
{
    const int ke = m->ke0 + t * m->kstep, ki = m->ki0 + t * m->kstep, n = m->len;
    o[t] = c1[ke];
    o[n + t] = c1[ki];
    o[2 * n + t] = c2[ke];
    o[3 * n + t] = c2[ki];
}

/* After it: entry t's edge values (mr = (dt - d) / (dt + d)). */
EMPIC_HD void mur_apply(const mur_line *m, int t, float *c1, float *c2, const float *o, float mr)
{
    const int ke = m->ke0 + t * m->kstep, ki = m->ki0 + t * m->kstep, n = m->len;
    c1[ke] = mur_edge(o[t], o[n + t], c1[ki], mr);
    c2[ke] = mur_edge(o[2 * n + t], o[3 * n + t], c2[ki], mr);
}

#endif
