/* cpu_walls.h - non-periodic particle boundaries on the CPU (rules in include/pbnd.h): applied to
 * each particle right after its move, to the current tile of an edge cluster before it is
 * added to the mesh, and to the cluster segments before the sort (dropped particles). */
#ifndef CPU_WALLS_H
#define CPU_WALLS_H

#include "emf.h"
#include "pbnd.h"
#include "species.h"

/* After the move of cluster c (cells wrapped periodically, migration codes and histogram
 * written): apply the walls to the particles whose code says they crossed one (a move off
 * the grid's first or last cluster), fixing cell, offset, momentum, code and histogram. */
void walls_cluster(species *s, const emf *f, const clusters *cl, int c, double *lost);

/* Fold (reflecting, thermal) or drop (absorbing) the current that cluster c's tile T holds
 * beyond the walls. */
void walls_tile(const species *s, const emf *f, const clusters *cl, int c, const cluster_tile *T,
              float *jx, float *jy, float *jz);

/* Remove the particles marked PBND_DROP (clusters on absorbing sides, and the xmin column
 * of clusters when `window`). Returns the number removed (the caller updates np). */
long long walls_drop(species *s, const clusters *cl, int window);

#endif
