/* cpu_deposit.h - the CPU move and current deposit of one cluster: a vectorised loop moves
 * the particles by particle.h's move rule (move_to: Kong's pieces, wrap, migration), then the
 * pieces are added to
 * the cluster's tile by a scatter chosen at run time: AVX-512 or AVX2 (a particle's pieces
 * added to a block of tile rows held in vector registers) or scalar (particle.h's
 * deposit_add). Every tile word receives the same float additions in the same order in all
 * three, so the results are bitwise the same. */
#ifndef CPU_DEPOSIT_H
#define CPU_DEPOSIT_H

#include "cluster.h"
#include "particle.h"
#include "species.h"

enum { DEPOSIT_SCALAR = 0, DEPOSIT_AVX2 = 1, DEPOSIT_AVX512 = 2 };

/* What the move of one cluster needs: the species' per-step constants, the cluster and its
 * current tile (cluster.h), the grid (cell indices wrap periodically). */
typedef struct {
    move_step ms;
    cluster_tile T;
    int nx, ny;
} deposit_frame;

/* Move particles [start, end) of s by one step at their u(n+1/2), add their current to the
 * planar tile jx, jy, jz (zero on entry; it must hold one cell below and two above the
 * cluster in each axis), write their migration codes and the 9-bin histogram hist. */
void deposit_cluster(species *s, int start, int end, const deposit_frame *fr, float *jx,
                     float *jy, float *jz, int hist[9]);

/* The scatter deposit_cluster uses: the best the processor runs, or as set by
 * deposit_select (tests, or EMPIC_CPU_DEPOSIT=scalar|avx2|avx512 in the environment). */
int deposit_isa(void);
/* Use scatter isa when the processor runs it; returns the one now in use. */
int deposit_select(int isa);
const char *deposit_isa_name(int isa);

#endif
