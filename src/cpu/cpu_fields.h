/* cpu_fields.h - the field phases of the CPU backend on emf.h's arrays. */
#ifndef CPU_FIELDS_H
#define CPU_FIELDS_H

#include "emf.h"

/* B -= dt/2 curl E in the interior; wide: over the guards too, but for the outermost upper
 * line (its E neighbour is not here; neither the gather nor E's update reads it) */
void fields_b_half(emf *f, int wide);
void fields_e_advance(emf *f);         /* E += dt (curl B - J) in the interior */
void fields_current_finish(emf *f);    /* J from f->acc, then the deck's filter */
void fields_filter(emf *f, float *a);  /* the deck's binomial passes (+ compensator) */

#endif
