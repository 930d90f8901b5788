/* whole.h - a run over several ranks seen whole on rank 0 for what it writes (dumps and
 * checkpoints) (design.md §12). The whole view has one rank's layout, so output.c and
 * checkpoint.c write it as they write a one-rank run, and the files do not depend on the
 * number of ranks. (A restart reads each rank's share itself: checkpoint_load.) */
#ifndef WHOLE_H
#define WHOLE_H

#include "sim_state.h"

/* What whole_collect collects beside the fields (with S->rho_sp when set) and the boundary
 * memories: every species in cluster order, the external fields of a dump (S->ext_dump),
 * the means of an averaged dump (S->avg_dump), the averaged dumps' sums (S->st.avg). */
enum { WHOLE_PARTICLES = 1, WHOLE_EXT = 2, WHOLE_MEANS = 4, WHOLE_SUMS = 8 };
/* Collective. On rank 0, W becomes the whole of S: the fields and what `what` asks for;
 * whole_free(W) after. W is not touched on the other ranks. */
void whole_collect(const sim *S, sim *W, int what);
void whole_free(sim *W);

#endif
