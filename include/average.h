/* average.h - the sums of the time-averaged field dumps (diagnostics.fields_avg, fieldavg.h):
 * which arrays are summed and the per-entry sum, shared by the CPU backend and the CUDA
 * kernel. Sums are doubles, each entry its own sequence of adds in step order: the same on
 * both backends and any number of ranks or threads. */
#ifndef AVERAGE_H
#define AVERAGE_H

#include "empic.h"
#include "kinds.h"

/* The summed arrays in their order: Ex Ey Ez Bx By Bz Jx Jy Jz rho (the field arrays of
 * emf_state's order), then Ex^2 Ey^2 Ez^2 Bx^2 By^2 Bz^2. */
enum { AVG_EX = 0, AVG_RHO = 9, AVG_EX2 = 10, AVG_COUNT = 16 };

/* 1 when array c is summed for the quantities q (enum deck_fieldq). */
EMPIC_HD int avg_on(int q, int c)
{
    const int bit = c < 3 ? FQ_E : c < 6 ? FQ_B : c < 9 ? FQ_J : c == AVG_RHO ? FQ_RHO
                  : c < 13 ? FQ_E2 : FQ_B2;
    return (q & bit) != 0;
}

/* The arrays summed for q. */
EMPIC_HD int avg_arrays(int q)
{
    int n = 0;
    for (int c = 0; c < AVG_COUNT; c++)
        n += avg_on(q, c);
    return n;
}

/* The field array (emf_state's order) that array c sums, and whether its square. */
EMPIC_HD int avg_source(int c) { return c < AVG_EX2 ? c : c - AVG_EX2; }
EMPIC_HD int avg_square(int c) { return c >= AVG_EX2; }

/* Entry k of a sum: the value (or its square) of a, added, or alone at the window's first
 * sample. */
EMPIC_HD void avg_add(double *sum, const float *a, int square, int first, size_t k)
{
    const double v = a[k], t = square ? v * v : v;
    sum[k] = first ? t : sum[k] + t;
}

#endif
