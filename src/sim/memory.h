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
                           Poisson solve, end-of-run bandwidth probe, segment rearrangement) */
    double host;        /* bytes: peak host memory (the sum, plus the program itself) */
    double gpu;         /* bytes: device allocations of the CUDA backend */
} memory_need;

/* The estimate for deck d (checked by deck_load, which counted its particles). */
void memory_estimate(const deck *d, memory_need *m);
/* Host memory available to this process: MemAvailable, or less under a cgroup limit; bytes
 * and where the figure comes from (for messages). */
double memory_available(char *source, size_t len);
/* The host need against the machine: 0 when it fits, else -1 after reporting both figures. */
int memory_check(const deck *d, const memory_need *m);
/* Bytes of each of the two buffers of the CPU bandwidth probe at the end of a run. */
size_t memory_probe_bytes(void);

#endif
