/* whole.h - a run over several ranks seen whole on rank 0 for what it writes (dumps and
 * checkpoints) (design.md §12). The whole view has one rank's layout, so output.c and
 * checkpoint.c write it as they write a one-rank run, and the files do not depend on the
 * number of ranks. (A restart reads each rank's share itself: checkpoint_load.) */
#ifndef WHOLE_H
#define WHOLE_H

#include "sim_state.h"

/* Collective. On rank 0, W becomes the whole of S: fields (with S->rho_sp when set), the
 * boundary memories, when particles every species in cluster order, and when dumps the
 * arrays a field dump writes beside the fields (S->ext_dump when set); whole_free(W)
 * after. W is not touched on the other ranks. */
void whole_collect(const sim *S, sim *W, int particles, int dumps);
void whole_free(sim *W);

#endif
