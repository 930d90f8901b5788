/* adk.h - the ADK level table (include/ionize.h) of an ionizing species, in code units. */
#ifndef ADK_H
#define ADK_H

#include "deck.h"
#include "ionize.h"

/* Atomic units of field (V/m) and time (s), and the Hartree energy (eV) (CODATA 2018). */
#define ADK_FIELD_AU 5.14220674763e11
#define ADK_TIME_AU 2.4188843265857e-17
#define ADK_HARTREE_EV 27.211386245988

/* The code's field unit m c omega_p / e and time unit 1 / omega_p in SI, at the deck's
 * reference density n0 (cm^-3). */
double adk_field_unit(double n0);
double adk_time_unit(double n0);
/* The levels of species `index` of d (which ionizes) for steps of d->dt. */
void adk_table(const deck *d, int index, ionize_table *t);
/* The ADK rate in 1/s of the level of ionization energy ip_ev leaving charge state z (the
 * ion after it has charge z), in a field of e_si V/m (the formula of ionize.h, for tests and
 * reports). */
double adk_rate_si(double ip_ev, int z, double e_si);

#endif
