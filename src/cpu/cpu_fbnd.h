/* cpu_fbnd.h - the CPU backend's field boundary updates (state and layout in fbnd.h). */
#ifndef CPU_FBND_H
#define CPU_FBND_H

#include "fbnd.h"
#include "species.h"

/* After each half step B -= dt/2 curl E (E at t = f->step dt): PML terms (the B psi are
 * updated at the first of the half steps with a given E), laser B sources. */
void fbnd_b(emf *f);
/* Before E += dt (curl B - J): keep what Mur needs. */
void fbnd_e_save(emf *f);
/* After it (before f->step advances): PML terms, laser E sources, Mur edges. */
void fbnd_e(emf *f);
/* The energy balance's field sums (ebal.h) into flow (this rank's slots, nslot per term):
 * before the E step (after = 0: the E(n) halves of the side and laser-plane terms, the
 * laser B columns' work with B(n+1/2)), after it and its boundaries (after = 1: the E(n+1)
 * halves). Nothing when fb is NULL. */
void fbnd_flows(emf *f, const clusters *cl, const ebal_region *r, double *flow, int nslot,
                int after);
/* Before the moving window's shift: the field energy the shift moves out of the balance
 * region at xmin into flow's out_xmin, and what it brings in from the xmax layer out of
 * out_xmax (ebal_shift_column). */
void fbnd_shift_flows(emf *f, const clusters *cl, const ebal_region *r, double *flow,
                      int nslot);
/* The moving window shifted the fields one cell toward -x: shift the layer state with them. */
void fbnd_shift(emf *f);

#endif
