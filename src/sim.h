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
/* Run to d.steps steps with diagnostics, guards and checkpoints; 0 on success, -1 after
 * reporting an error, 128 + signal when stopped by SIGINT/SIGTERM (after a checkpoint). */
int sim_run(sim *S);
/* One PIC cycle (docs/design.md, "The cycle"); diagnostics of step S->step are written
 * when due. */
void sim_step(sim *S);
void sim_free(sim *S);
/* Wait for the dump being written in the background (before the host copies of the device
 * state change, or HDF5 is used); sets io_failed when it failed (it said why). */
void sim_wait_writes(sim *S);
/* The whole backend state into the host arrays (fields, particles), after the background
 * dump: for checkpoints and guards. */
void sim_fetch(sim *S);

#endif
