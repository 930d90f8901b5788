/* probes.h - field probes (diagnostics.probes, docs/output.md): the fields at a few points
 * (a point, or n points along a line) every `every` steps, gathered where the fields live
 * (the backend's `probe`: only the values leave a device) as a particle at the point would
 * gather them, and appended to one HDF5 file per run, OUTDIR/probes/probes.h5: a group per
 * probe with its positions, the steps and times sampled and one dataset per quantity
 * ([samples] for a point, [samples][n] for a line), grown as the run goes (chunked, with
 * unlimited first dimension and Fletcher-32 checksums).
 *
 * Values are sampled at the step's diagnostics (sim.c's diagnose): E and B at t = n dt (B
 * advanced by its half step, as in the dumps), plus the deck's external fields
 * (extfield.h: at the same time), as the particle push of step n sees them; J at t - dt/2
 * (the last step's current); rho deposited at x(n). Over several ranks each point is read by the rank that holds its cell
 * and the values are summed into every rank in a fixed order (bitwise the one-rank values);
 * rank 0 writes. */
#ifndef PROBES_H
#define PROBES_H

#include "sim_state.h"

/* This rank's requests for the deck's probes; rank 0 prepares the file: a fresh run
 * removes an earlier run's, a restart (restart != 0, from step S->step) keeps it without the
 * samples at and after S->step. 0, or -1 after reporting (on rank 0). */
int probes_open(sim *S, int restart);
/* This rank's requests: the points of its cells (probes_open; again after a rebalance). */
void probes_share(sim *S);
/* Sample the probes due at S->step (every rank calls it at the step's diagnostics) and, on
 * rank 0, append the samples held to the file once a second has passed since the last
 * write (when a dump is being written in the background, once it is done, or after waiting
 * for it when many samples wait). Sets S->io_failed after reporting a failed write. */
void probes_sample(sim *S);
/* Write the samples held in memory (rank 0; before a checkpoint and at the end of the run).
 * 0, or -1 after reporting. */
int probes_flush(sim *S);
void probes_free(sim *S);

#endif
