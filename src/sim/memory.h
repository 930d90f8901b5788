/* memory.h - the memory a run needs, estimated from its deck before anything is allocated,
 * and checked against what the machine (or its cgroup) has available. */
#ifndef MEMORY_H
#define MEMORY_H

#include "deck.h"

typedef struct {
    double particles;   /* macro-particles at the fullest (deck.load_particles), all ranks */
    /* the rest per rank, of rank 0 (the others' alike, less the probe): */
    double fields;      /* bytes: field arrays and open-boundary memories (its share) */
    double slots;       /* bytes: particle storage with its slack (its share) */
    double transient;   /* bytes: the largest passing need (one rank: a dump or checkpoint
                           image; several: the staging of its share of a dump or checkpoint;
                           initial Poisson solve, segment rearrangement, end-of-run bandwidth
                           probe) */
    double probe;       /* bytes: what the CPU's bandwidth probe adds to the peak; it runs
                           only when they are free, so the run does not need them */
    double rank;        /* bytes: rank 0's peak host memory (the sum, plus the program) */
    double host;        /* bytes: peak host memory of rank 0's node, rank 0 and the other
                           ranks there (memory_node; rank until then) */
    int ranks, node_ranks; /* ranks in all and on rank 0's node */
    double gpu;         /* bytes: device allocations of the CUDA backend (of one rank) */
} memory_need;

/* The estimate for deck d (checked by deck_load, which counted its particles) run on
 * `ranks` ranks: each holds its share of the fields and particles, and writes its share of
 * every dump and checkpoint (h5par.h); one rank builds each file in memory first. */
void memory_estimate(const deck *d, int ranks, memory_need *m);
/* The node of rank 0 holds node_ranks ranks: host becomes their sum. */
void memory_node(memory_need *m, int node_ranks);
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
