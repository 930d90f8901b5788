/* extfield.h - the external fields of fields.external (docs/deck.md, docs/physics.md): each
 * component Ex, Ey, Ez, Bx, By, Bz a number or a formula in x, y, t, evaluated on the host in
 * double and rounded to float once, so that both backends add the same values.
 *
 * The particles feel E + E_ext and B + B_ext at their positions at the push's time level:
 * the push of step n gathers E(n), B(n) and the external fields at t = n dt (the initial
 * half step back those at t = 0; field ionization after step n, at E(n+1), those at
 * t = (n+1) dt). A component is
 * - uniform (a number, a formula of constants, or a formula in t alone, evaluated once per
 *   step): added to the gathered value after the interpolation, as numbers always were;
 * - varying in x or y: sampled at its Yee points of this rank's cells and guards (x in the
 *   lab frame, the moving window's origin included; guards of a periodic axis at their
 *   periodic image), into an array on the fields' layout that the gather adds to the grid's
 *   values at the same points before interpolating (particle.h: gather_yee_ext). Evaluated
 *   once when the formula has no t; every step when it has (the whole array); moved a cell
 *   with the moving window (the new last column evaluated: bitwise a fresh evaluation).
 * They are not part of the grid's E and B (Maxwell's equations never see them) nor of the
 * field energies; a checkpoint stores nothing of them: a restart evaluates them again. */
#ifndef EXTFIELD_H
#define EXTFIELD_H

#include "deck.h"
#include "emf.h"

/* What the gather adds (pic_state.ext), Ex, Ey, Ez, Bx, By, Bz. */
typedef struct {
    float u[6];         /* uniform values, added after the interpolation (0 for an array's) */
    const float *a[6];  /* values at the Yee points on the fields' layout (emf_idx, guards
                           included) of the components that vary in space, else NULL */
} ext_fields;

typedef struct {
    int vars[6];        /* formula_vars of each component (0: a number or a constant) */
    float value[6];     /* the components that never change */
    formula **f;        /* nthreads x 6 formulas of the components that change (else NULL) */
    int nthreads;
    float *store;       /* the arrays of ext_fields.a */
    const emf *grid;
    long step, cells;   /* time level and window position of the values given (-1: none) */
} extfield;

/* 1 when the deck's external E (b = 0) or B (b = 1) has a component that is not 0. */
int extfield_present(const deck *d, int b);
/* The components that vary in space (one array each). */
int extfield_arrays(const deck *d);
/* The deck's external fields on the layout of f; out has the values that never change. */
void extfield_init(extfield *x, const deck *d, const emf *f, ext_fields *out);
/* out at t = step dt with the box origin at cells (window cells): what changed evaluated.
 * Returns 1 when an array changed (a device backend copies them: backend.h's ext_fields). */
int extfield_update(extfield *x, long step, long cells, ext_fields *out);
/* The six components on f's layout into dst (6 x f->size floats): the arrays, the uniform
 * values spread (what the dumps write as E_ext, B_ext). */
void extfield_fill(const ext_fields *e, const emf *f, float *dst);
void extfield_free(extfield *x);

#endif
