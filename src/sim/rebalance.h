/* rebalance.h - dynamic load balancing of the ranks (parallel.balance, design.md §12).
 *
 * Every `every` steps the ranks compare their loads, the mobile particles each holds (what a
 * step pushes, deposits and sorts). When the busiest rank holds more than 1 + threshold times
 * the mean, the rank borders move by whole cluster pairs: a prefix-sum partition of the
 * particles per cluster column gives the borders between rank columns, that of the particles
 * per cluster row the borders between rank rows, so the split stays a tensor product (one
 * rectangle and the same four neighbours per rank; the pairs keep each share starting at an
 * even cluster, which the sort's unshifted pairs and the colours need). The new split is
 * taken when it lowers the busiest rank's load by half the threshold (of the mean) at least,
 * so that small drifts do not move the borders back and forth, and when every rank has the
 * memory for its new share (host, and device for GPU ranks); a split refused for
 * want of memory leaves the borders as they are, with a warning. The state then moves to its
 * new owners (reshare.h). Results are bitwise those of any other split (design.md §13), so a
 * checkpoint records nothing of the split: a restart takes the split for the grid and
 * balances it at once, on the host before the backend takes the state over, and a fresh run
 * balances the initial load before it loads anything. */
#ifndef REBALANCE_H
#define REBALANCE_H

#include "sim_state.h"
#include <stdio.h>

/* The load check after step S->step (sim_after_step), when due, or at once when `now` (a
 * restart, before the backend opens: the host's state then moves alone); every rank calls
 * it together. Its time counts in the run's wall time (a restart's: in the set-up, before
 * report_open starts this run's clock, as the checkpoint's read). */
void rebalance_check(sim *S, int now);
/* Whether rebalance_check(S, now) compares the loads (reads the particle counts). */
int rebalance_due(const sim *S, int now);
/* A fresh run's split balanced before anything is loaded (balancing on, several ranks):
 * count (d->nspecies x cl.n) gets every cluster's initial load (species_load_counts, summed
 * over the ranks), and the borders move when that pays as rebalance_check's would; 1 when
 * they moved (the fields' share is then the caller's to make again). Part of the set-up,
 * as the load (before report_open starts the run's clock); the rebalance's "seconds" are
 * from the counts' sum on (the wait in it for the ranks with the most to count is the
 * load's). */
int rebalance_start(sim *S, int *count);
/* For --check: whether and how the deck's run on `ranks` ranks balances them. */
void rebalance_describe(const deck *d, int ranks, FILE *o);
/* timing.json's balancing entries (rank 0): the deck's keys, the rebalances and the refusals. */
void rebalance_json(const sim *S, FILE *m);
void rebalance_free(sim *S);

#endif
