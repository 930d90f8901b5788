/* guard.h - what keeps a run safe: sanity checks of the host state (non-finite fields,
 * non-finite particle momenta or offsets, particles lost or duplicated in a periodic box),
 * clean stops on SIGINT/SIGTERM, and the checks and checkpoints sim_run makes each step. */
#ifndef GUARD_H
#define GUARD_H

#include "sim.h"

#define GUARD_EVERY 50 /* guard cadence when energy diagnostics are off */

/* The first problem found. */
typedef struct {
    int found;          /* 0 when the state is sound */
    char what[32];      /* field component ("Ey"), particle quantity ("uz") or "count" */
    int species;        /* -1 for a field */
    int i, j;           /* cell of the bad value */
    double value;
    long long have, want; /* count: particles in the clusters, np */
} guard_hit;

/* First non-finite interior value of E, B, J (in the order Ex..Bz, Jx..Jz, then row, column).
 * Returns 1 and fills h when found, else 0. */
int guard_fields(const emf *f, guard_hit *h);
/* First non-finite momentum (ux, uy, uz) or offset (x, y) among the live particles of the
 * mobile species. 1 when found. */
int guard_particles(const sim *S, guard_hit *h);
/* Every species keeps its particles: the cluster counts add up to np where all its
 * boundaries are periodic (nothing leaves or enters), and no cluster holds more than its
 * capacity. 1 on a mismatch. */
int guard_counts(const sim *S, guard_hit *h);
/* All three on the host arrays; reports the first problem with its location and the step
 * (S->step) and returns -1, else 0. */
int guard_check(const sim *S, guard_hit *h);

/* SIGINT/SIGTERM handlers that only note the signal (on = 1), or the previous handlers
 * back (on = 0). A second signal of the same kind stops the process at once. */
void guard_signals(int on);
/* The signal received since guard_signals(1), or 0. */
int guard_signal_pending(void);
/* Called by sim_run after each step: guards (non-finite values, particle counts) every
 * energy diagnostic or GUARD_EVERY steps, the periodic checkpoint, and the
 * checkpoint on a pending signal. Returns 0 to go on, 128 + signal after the signal's
 * checkpoint, or -1 after reporting a failed guard or write. */
int guard_after_step(sim *S);
/* After sim_run stopped early with status st (from guard_after_step): where the last
 * checkpoint is and the command that continues from it. */
void guard_stop_message(const sim *S, int st);

#endif
