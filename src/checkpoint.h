/* checkpoint.h - restart files (DESIGN §9, OUTDIR/checkpoint/ckpt%08ld.h5), clean stops on
 * SIGINT/SIGTERM and the run-time guards of the time loop.
 *
 * A checkpoint is taken between steps (E at n dt, B and u at (n - 1/2) dt, x at n dt) and
 * holds everything a bitwise-identical continuation on the same backend needs: the step, E,
 * B, J and rho with guards, rho_bg, every species' live particles with the cluster tables
 * (start, count, cap, hist), np and rearrangements, the phase timers and particle_steps, the
 * last energy diagnostic and the resolved deck text. It is written to a temporary name,
 * fsynced and renamed; the newest two of the run are kept; *.tmp files are never read. */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include "sim.h"

#define CHECKPOINT_VERSION 1
#define CHECKPOINT_GUARD_EVERY 50 /* guard cadence when energy diagnostics are off */

/* Write S's state (fetched from the device first on the GPU backend) to
 * S->d.output/checkpoint/ckpt<step>.h5, then remove the run's older checkpoints except the
 * previous one. 0, or -1 after reporting (earlier checkpoints are left untouched). */
int checkpoint_write(sim *S);
/* The newest complete checkpoint for DIR: DIR itself when it is a file, else the newest
 * readable ckpt%08ld.h5 in DIR/checkpoint/ or in DIR. Its path goes to path, its step to
 * *step. 0, or -1 after reporting. */
int checkpoint_find(const char *dir, char *path, size_t len, long *step);
/* Load the deck stored in the checkpoint at path; diagnostics.output becomes the folder that
 * holds its checkpoint/ folder. 0, or -1 after reporting. */
int checkpoint_read_deck(const char *path, deck *d);
/* Restart path of sim_init: S->d, S->cl, S->f and the backend are set up; fill the fields,
 * the species and the counters from the checkpoint at path. *rows receives the energy.csv
 * rows of the earlier run before the checkpoint's step (NULL when there are none), for
 * checkpoint_energy_resume. 0, or -1 after reporting. */
int checkpoint_load(sim *S, const char *path, char **rows);
/* Append rows (from checkpoint_load; freed here) to the energy.csv that report_open began. */
void checkpoint_energy_resume(sim *S, char *rows);

/* SIGINT/SIGTERM handlers that only note the signal (on = 1), or the previous handlers
 * back (on = 0). A second signal of the same kind stops the process at once. */
void checkpoint_signals(int on);
/* The signal received since checkpoint_signals(1), or 0. */
int checkpoint_signal_pending(void);
/* Called by sim_run after each step: guards (non-finite values, particle counts) every
 * energy diagnostic or CHECKPOINT_GUARD_EVERY steps, the periodic checkpoint, and the
 * checkpoint on a pending signal. Returns 0 to go on, 128 + signal after the signal's
 * checkpoint, or -1 after reporting a failed guard or write. */
int checkpoint_after_step(sim *S);
/* After sim_run stopped early with status st (from checkpoint_after_step): where the last
 * checkpoint is and the command that continues from it. */
void checkpoint_stop_message(const sim *S, int st);

#endif
