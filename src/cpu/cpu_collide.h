/* cpu_collide.h - binary Coulomb collisions (design.md §15, include/collide.h) on the CPU. */
#ifndef CPU_COLLIDE_H
#define CPU_COLLIDE_H

#include "backend.h"

/* The collisions of entry p among the particles of each cell of this rank's clusters: an
 * OpenMP loop over clusters, each cell's particles found by a counting sort of its cluster's
 * segment (slot order kept), so the result is the same for any thread count. */
void cpu_collide(void *ctx, pic_state *st, const struct collide_par *p);

#endif
