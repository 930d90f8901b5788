/* fieldavg.h - time-averaged field dumps (diagnostics.fields_avg, docs/output.md): each
 * dump at a multiple n of `every` (n > 0) holds the mean over the steps n - M + 1 .. n
 * (M = `steps`) of the quantities asked for, sampled at each step's diagnostics as the
 * instantaneous dumps see them (E and B at t = k dt, J at t - dt/2, the charge density
 * deposited at x(k)), the squares of E's and B's components for E2, B2. The backend sums
 * them where the fields live, in double (average.h); a dump fetches the sums and writes
 * sum / M rounded to float as the meshes E_avg, B_avg, J_avg, rho_avg, E2_avg, B2_avg
 * (output.c). A checkpoint inside a window stores the sums (checkpoint.c), so that a
 * restart continues them bitwise; every rank sums its own cells, so the means do not depend
 * on the split. */
#ifndef FIELDAVG_H
#define FIELDAVG_H

#include "sim_state.h"

/* The averaged dump whose window holds step k's sample (n = the first multiple of `every`
 * at or after k, when k > n - M), or 0 when none (a window also runs when the run ends
 * before its dump: a restart with more steps continues it). */
long fieldavg_window(const deck *d, long k);
/* Samples in the sums before step k's (what a checkpoint at step k stores). */
long fieldavg_held(const deck *d, long k);
/* An averaged dump at step k. */
int fieldavg_due(const deck *d, long k);
/* At the diagnostics of step S->step: its sample into the sums when in a window. */
void fieldavg_sample(sim *S);
/* At an averaged dump: the sums fetched and their means into S->avg_dump (the arrays of
 * average.h's order on the fields' layout), which it returns. */
float *fieldavg_means(sim *S);

#endif
