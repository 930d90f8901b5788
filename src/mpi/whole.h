/* whole.h - a run over several ranks seen whole on rank 0 for what it writes (dumps and
 * checkpoints), and each rank's share taken from a whole state at a restart (design.md
 * §12). The whole view has one rank's layout, so output.c and checkpoint.c write it as they
 * write a one-rank run, and the files do not depend on the number of ranks. */
#ifndef WHOLE_H
#define WHOLE_H

#include "sim_state.h"

/* Collective. On rank 0, W becomes the whole of S: fields (with S->rho_sp when set), the
 * boundary memories and, when particles, every species in cluster order; whole_free(W)
 * after. W is not touched on the other ranks. */
void whole_collect(const sim *S, sim *W, int particles);
void whole_free(sim *W);
/* The whole state W, on one rank's layout (a checkpoint read by every rank), into S's
 * share: fields, boundary memories, particles of S's clusters, counters. */
void whole_share(const sim *W, sim *S);
/* W set up as a one-rank run of S's deck with nothing in it yet (fields zero, boundaries,
 * clusters), to read a checkpoint into. */
void whole_empty(const sim *S, sim *W);

#endif
