/* bnd.h - non-periodic particle boundaries on the CPU (rules in include/pbnd.h): applied to
 * each particle right after its move, to the current tile of an edge cluster before it is
 * added to the mesh, and to the cluster segments before the sort (dropped particles). */
#ifndef BND_H
#define BND_H

#include "emf.h"
#include "pbnd.h"
#include "species.h"

/* Whether cluster c lies on a side where species s has a non-periodic boundary. */
static inline int bnd_edge(const species *s, const clusters *cl, int c)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx, *b = s->bnd;
    return (cx == 0 && b[0]) || (cx == cl->ncx - 1 && b[1]) || (cy == 0 && b[2]) ||
           (cy == cl->ncy - 1 && b[3]);
}

/* The walls of species s in the form of include/pbnd.h's rules (also the GPU's setup). */
void bnd_walls(const species *s, const clusters *cl, const emf *f, pbnd_walls *w);

/* After the move of cluster c (cells wrapped periodically, migration codes and histogram
 * written): apply the walls to the particles whose code says they crossed one (a move off
 * the grid's first or last cluster), fixing cell, offset, momentum, code and histogram. */
void bnd_cluster(species *s, const emf *f, const clusters *cl, int c);

/* Fold (reflecting, thermal) or drop (absorbing) the current that cluster c's tile T holds
 * beyond the walls. */
void bnd_tile(const species *s, const emf *f, const clusters *cl, int c, const cluster_tile *T,
              float *jx, float *jy, float *jz);

/* Remove the particles marked PBND_DROP (clusters on absorbing sides, and the xmin column
 * of clusters when `window`). Returns the number removed (the caller updates np). */
long long bnd_drop(species *s, const clusters *cl, int window);

#endif
