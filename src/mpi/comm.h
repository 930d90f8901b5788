/* comm.h - the MPI ranks of a run (design.md §12): the few collective and neighbour
 * operations the code needs, on MPI_COMM_WORLD. A build without MPI (or a run without
 * mpirun) has one rank, and every call below works for it. */
#ifndef COMM_H
#define COMM_H

#include <stddef.h>

/* 1 when built with MPI (EMPIC_MPI). */
int comm_built(void);
/* MPI started (thread level funneled: OpenMP threads never call MPI) and stopped. */
void comm_init(int *argc, char ***argv);
void comm_finalize(void);
int comm_rank(void);
int comm_size(void);
/* This rank's number among the ranks of its node (the GPU it takes), and the number of
 * ranks on its node. Collective the first time either is asked: every rank asks at the same
 * point (the memory check at the start). */
int comm_local_rank(void);
int comm_node_ranks(void);
/* Stop every rank at once with status rc (an error one rank alone met, reported already). */
void comm_abort(int rc) __attribute__((noreturn));

/* Send n bytes of `send` to rank `to` and receive at most `cap` bytes from rank `from` into
 * `recv` (either rank -1: no message that way); returns the bytes received. The same rank on
 * both sides (a periodic axis of one rank) copies. */
size_t comm_sendrecv(const void *send, size_t n, int to, void *recv, size_t cap, int from,
                     int tag);
/* Seconds this rank has spent in comm_sendrecv (its neighbour exchanges, waits included). */
double comm_exchange_s(void);
/* Element-wise sums and maxima over the ranks, in place, the result on every rank. A sum of
 * entries that one rank alone filled (the others hold zeros) is exact: x + 0 = x. */
void comm_sum_double(double *v, size_t n);
void comm_sum_ll(long long *v, size_t n);
void comm_sum_int(int *v, size_t n);
void comm_max_double(double *v, size_t n);
void comm_max_int(int *v, size_t n);
/* The n bytes at v of rank `root` onto every rank. */
void comm_bcast(void *v, size_t n, int root);
/* Rank 0 receives n[r] bytes of each rank r (rank order) into recv (used only on rank 0). */
void comm_gather(const void *send, size_t n, void *recv, const size_t *counts);
void comm_barrier(void);
/* Every rank sends scount[r] items of `unit` bytes to each rank r, from send (rank after
 * rank), and receives rcount[r] items from each into recv (likewise): the redistribution of
 * a rebalance (rebalance.h). Counts in items: below 2^31 per rank in all. */
void comm_alltoallv(const void *send, const size_t *scount, void *recv, const size_t *rcount,
                    size_t unit);

#endif
