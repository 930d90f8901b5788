/* cpu_fbnd.h - the CPU backend's field boundary updates (state and layout in fbnd.h). */
#ifndef CPU_FBND_H
#define CPU_FBND_H

#include "fbnd.h"

/* After each half step B -= dt/2 curl E (E at t = f->step dt): PML terms (the B psi are
 * updated at the first of the half steps with a given E), laser B sources. */
void fbnd_b(emf *f);
/* Before E += dt (curl B - J): keep what Mur needs. */
void fbnd_e_save(emf *f);
/* After it (before f->step advances): PML terms, laser E sources, Mur edges. */
void fbnd_e(emf *f);
/* The moving window shifted the fields one cell toward -x: shift the layer state with them. */
void fbnd_shift(emf *f);

#endif
