/* memory.h - the memory a run needs, estimated from its deck before anything is allocated,
 * and checked against what the machine (or its cgroup) has available. */
#ifndef MEMORY_H
#define MEMORY_H

#include "deck.h"

typedef struct {
    double particles;   /* macro-particles at the fullest (deck.load_particles) */
    double fields;      /* bytes: field arrays and open-boundary memories */
    double slots;       /* bytes: particle storage with its slack */
    double transient;   /* bytes: the largest passing need (dump or checkpoint image, initial
                           Poisson solve, segment rearrangement, end-of-run bandwidth probe) */
    double probe;       /* bytes: what the CPU's bandwidth probe adds to the peak; it runs
                           only when they are free, so the run does not need them */
    double host;        /* bytes: peak host memory (the sum, plus the program itself); of
                           the node of rank 0 after memory_ranks */
    int ranks, node_ranks; /* memory_ranks: ranks in all and on rank 0's node (1, 1 before) */
    double gpu;         /* bytes: device allocations of the CUDA backend (of one rank) */
} memory_need;

/* The estimate for deck d (checked by deck_load, which counted its particles). */
void memory_estimate(const deck *d, memory_need *m);
/* Several ranks: host becomes the need of rank 0's node, where rank 0 holds its share and
 * the whole run collected for a dump or a checkpoint (whole.h; the figure of one rank) and
 * each other rank of the node its share of the fields and particles; gpu becomes a rank's
 * share. */
void memory_ranks(memory_need *m, int ranks, int node_ranks);
/* Host memory available to this process: MemAvailable, or less under a cgroup limit; bytes
 * and where the figure comes from (for messages). */
double memory_available(char *source, size_t len);
/* The host need (without the probe) against the machine (its node): 0 when it fits, else
 * -1 after reporting both figures. */
int memory_check(const deck *d, const memory_need *m);
/* Bytes of each of the two buffers of the CPU bandwidth probe at the end of a run (made
 * only when they fit in the memory available with room to spare). */
size_t memory_probe_bytes(void);

#endif
