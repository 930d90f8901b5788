/* reshare.h - a run's state moved to another split of its rank array (the load balancing,
 * rebalance.h): each rank sends what it holds to the new owners and builds its share as a
 * restart on any number of ranks builds it from a checkpoint, so that the run goes on
 * bitwise as it would have (design.md §13). What moves: the fields E, B, J and rho with
 * their guards (each rank's cells and the box edges' guards beside them, the rectangles a
 * checkpoint stores), the averaged dumps' sums likewise, the particles of the clusters that
 * change hands with their tables (counts, migration histograms, layout peaks), the
 * boundary memories (made whole from each entry's owner) and the energy balance's sums
 * (summed over the ranks, each rank keeping its own slots and clusters). Made anew for the
 * share: the external fields' arrays (evaluated again), the probes' requests, the scratch
 * arrays of the dumps. */
#ifndef RESHARE_H
#define RESHARE_H

#include "sim_state.h"

/* A move of S to the rank borders bx (cl.nrx + 1 cluster columns) and by (cl.nry + 1
 * rows), and what it allocates on this rank. */
typedef struct {
    int *bx, *by;
    int *count, *hist, *peak;   /* every species' tables of all ranks */
    size_t size;                /* entries per field array of this rank's new share */
    size_t alloc[DECK_MAX_SPECIES]; /* its particle slots per species (species_segments) */
    long long np[DECK_MAX_SPECIES]; /* and particles */
    size_t msg;                 /* bytes of its largest species' messages, both ways */
    double host_bytes;          /* host memory the move allocates on this rank at most: its
                                   new share (fields, particles, scratch) and the messages */
} reshare_plan;

/* The plan of a move to the borders bx, by from the host arrays, which must be the live
 * state (fetched); every rank calls it together. */
void reshare_plan_make(const sim *S, const int *bx, const int *by, reshare_plan *p);
void reshare_plan_free(reshare_plan *p);
/* The host bytes of this rank's share under borders bx, by of a run not yet loaded: its
 * particles (count: every species' initial load per cluster of all ranks; unit: the bytes
 * of a slot of each) with the layout's slack, and its fields. */
double reshare_load_bytes(const sim *S, const int *bx, const int *by, const int *count,
                          const size_t *unit);
/* The move (the plan freed); every rank calls it together, with the backend closed (the
 * caller opens it again after). */
void reshare(sim *S, reshare_plan *p);

#endif
