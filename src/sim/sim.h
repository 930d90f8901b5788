/* sim.h - one simulation (sim_state.h): setup, the PIC cycle over the backend's table and
 * the time loop with its policy (diagnostics, checks, checkpoints, stops). */
#ifndef SIM_H
#define SIM_H

#include "sim_state.h"

/* Set up from a validated deck (takes ownership of *d). Returns 0 or -1 after reporting. */
int sim_init(sim *S, const deck *d, int quiet);
/* The same, continuing from the checkpoint file `checkpoint` (checkpoint.h) when not NULL:
 * no load, Poisson solve or half push; energy.csv keeps the rows before its step. */
int sim_init_from(sim *S, const deck *d, int quiet, const char *checkpoint);
/* Exit status of a run stopped with a checkpoint by the STOP file or the wall-clock limit. */
#define SIM_STOPPED 3
/* Run to d.steps steps with diagnostics, guards and checkpoints; 0 on success, -1 after
 * reporting an error, 128 + signal when stopped by SIGINT, SIGTERM, SIGUSR1 or SIGUSR2, and
 * SIM_STOPPED by the STOP file or the wall-clock limit (each after a checkpoint). */
int sim_run(sim *S);
/* One PIC cycle (docs/design.md, "The cycle"); diagnostics of step S->step are written
 * when due. */
void sim_step(sim *S);
void sim_free(sim *S);
/* The run policy after each step (sim_run calls it): the health checks every energy
 * diagnostic or HEALTH_EVERY steps (the GPU screens through its energies and fetches only
 * when it must), the periodic checkpoint, and the checkpoint on a pending signal. 0 to go
 * on, 128 + signal after the signal's checkpoint, SIM_STOPPED after the checkpoint of the
 * STOP file (OUTDIR/STOP, then removed) or the wall-clock limit, -1 after reporting a failed
 * check (the energy guard included: the state it refuses is not checkpointed) or write. */
int sim_after_step(sim *S);
/* After sim_run stopped early with status `status` (from sim_after_step; -1 for a failure): where
 * the last checkpoint is and the command that continues from it. */
void sim_stop_message(const sim *S, int status);
/* SIGINT, SIGTERM, SIGUSR1 and SIGUSR2 handlers that only note the signal (on = 1), or the
 * previous handlers back (on = 0). A second signal of the same kind stops the process at
 * once. */
void sim_signals(int on);
/* The start of the process's wall clock for simulation.wall_time (main calls it first). */
void sim_clock_start(void);
/* The signal received since sim_signals(1), or 0. */
int sim_signal_pending(void);
/* Wait for the dump being written in the background (before the host copies of the device
 * state change, or HDF5 is used); sets io_failed when it failed (it said why). */
void sim_wait_writes(sim *S);
/* The whole backend state into the host arrays (fields, particles), after the background
 * dump: for checkpoints and guards. */
void sim_fetch(sim *S);
/* The last step's ionization, queued by a device backend, ended and its electrons counted
 * (nothing when none is pending): before anything reads the particles or their counts. */
void sim_ionize_end(sim *S);

#endif
