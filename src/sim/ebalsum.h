/* ebalsum.h - the energy balance's sums (ebal.h, sim_state.h: st.flow, st.lost and gain) over
 * the ranks. Each rank adds to the slots and clusters it holds and keeps zeros in the
 * others', so that a sum over the ranks is exact (x + 0 = x): what the energy rows and the
 * checkpoints take. */
#ifndef EBALSUM_H
#define EBALSUM_H

#include "sim_state.h"

/* The sums of all ranks into S->bal_ck, returned (the backend's copied to the host first);
 * every rank calls it. */
double *ebalsum_all(sim *S);
/* The entries of the slots and clusters of other ranks zeroed: after a restart or a
 * rebalance, which start from the sums of all ranks. */
void ebalsum_own(sim *S);

#endif
