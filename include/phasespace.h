/* phasespace.h - per-particle phase-space coordinates, histogram bins and the particle
 * selection of the raw dumps, shared by the CPU (src/insitu.c, src/output.c) and the CUDA
 * kernels (cuda/gpu_diag.cu) so that both backends bin every particle identically.
 *
 * Coordinates are computed in double from the stored (cell, float offset, float u):
 * x = x0 + (i + offset) dx, the momentum u = gamma v/c itself, and the kinetic energy
 * (gamma - 1) m c^2 per particle in m_e c^2 (m u^2 / (gamma + 1), no cancellation). */
#ifndef PHASESPACE_H
#define PHASESPACE_H

#include "kinds.h"
#include "empic.h"
#include <math.h>

/* Kinetic energy (gamma - 1) m of a particle of mass m (in m_e) and momentum u (in m c). */
EMPIC_HD double kinetic_energy(float ux, float uy, float uz, double m)
{
    double u2 = (double)ux * ux + (double)uy * uy + (double)uz * uz;
    return m * u2 / (sqrt(1.0 + u2) + 1.0);
}

/* The binning of one histogram: bin k of axis a covers [lo + k / scale, lo + (k+1) / scale)
 * of the axis value (of its log10 on log axes). naxes 1 or 2 (n[1] = 1 for 1D). */
typedef struct {
    int naxes;
    int axis[2];            /* enum deck_psaxis */
    int n[2];
    int log[2];             /* bin in log10 of the value */
    double lo[2], scale[2]; /* scale = n / (hi - lo) */
    double x0, y0, dx, dy;  /* box origin (with the window) and cell size */
    double m;               /* species mass, for the energy axis */
} ps_grid;

/* Value of axis `axis` for a particle in cell (i, j) at offset (ox, oy). */
EMPIC_HD double ps_value(const ps_grid *g, int axis, int i, int j, float ox, float oy, float ux,
                         float uy, float uz)
{
    switch (axis) {
    case PSA_X:
        return g->x0 + ((double)i + (double)ox) * g->dx;
    case PSA_Y:
        return g->y0 + ((double)j + (double)oy) * g->dy;
    case PSA_UX:
        return ux;
    case PSA_UY:
        return uy;
    case PSA_UZ:
        return uz;
    default:
        return kinetic_energy(ux, uy, uz, g->m);
    }
}

/* Bin of value v along axis k of g, or -1 outside the range (or v <= 0 on a log axis). */
EMPIC_HD int ps_bin1(const ps_grid *g, int k, double v)
{
    if (g->log[k]) {
        if (!(v > 0.0))
            return -1;
        v = log10(v);
    }
    double t = (v - g->lo[k]) * g->scale[k];
    return t >= 0.0 && t < (double)g->n[k] ? (int)t : -1;
}

/* Flat bin index (axis 0 fastest: C order [n1][n0]) of a particle, or -1. */
EMPIC_HD int ps_bin(const ps_grid *g, int i, int j, float ox, float oy, float ux, float uy,
                    float uz)
{
    int b0 = ps_bin1(g, 0, ps_value(g, g->axis[0], i, j, ox, oy, ux, uy, uz));
    if (g->naxes == 1 || b0 < 0)
        return b0;
    int b1 = ps_bin1(g, 1, ps_value(g, g->axis[1], i, j, ox, oy, ux, uy, uz));
    return b1 < 0 ? -1 : b0 + b1 * g->n[0];
}

/* The raw-dump selection of diagnostics.particles: region [x0, x1) x [y0, y1) and kinetic
 * energy in [emin, emax). */
typedef struct {
    int region, energy;
    double box[4], erange[2];
    double x0, y0, dx, dy, m;
} ps_select;

EMPIC_HD int ps_selected(const ps_select *s, int i, int j, float ox, float oy, float ux,
                         float uy, float uz)
{
    if (s->region) {
        double x = s->x0 + ((double)i + (double)ox) * s->dx;
        double y = s->y0 + ((double)j + (double)oy) * s->dy;
        if (!(x >= s->box[0] && x < s->box[1] && y >= s->box[2] && y < s->box[3]))
            return 0;
    }
    if (s->energy) {
        double e = kinetic_energy(ux, uy, uz, s->m);
        if (!(e >= s->erange[0] && e < s->erange[1]))
            return 0;
    }
    return 1;
}

#endif
