/* comm.c - comm.h over MPI when built with it (EMPIC_MPI) and started by mpirun; one rank
 * otherwise (no MPI, or a program such as a test that never called comm_init). */
#include "comm.h"
#include "empic.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#ifdef EMPIC_MPI
#include <mpi.h>

/* MPI only under a launcher (mpirun, mpiexec, srun: their environment variables), so that a
 * plain `empic deck.cfg` starts no MPI runtime at all. */
void comm_init(int *argc, char ***argv)
{
    static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    int have, any = 0;
    for (int k = 0; k < 3; k++)
        any |= getenv(launched[k]) != NULL;
    if (any && MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &have) != MPI_SUCCESS)
        EMPIC_DIE("MPI_Init_thread failed");
    empic_ranks(comm_rank(), comm_size(), comm_abort);
}

void comm_finalize(void)
{
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        MPI_Finalize();
}

/* MPI's size, or 1 outside MPI_Init ... MPI_Finalize. */
static int ranks(void)
{
    int up = 0, down = 0, n = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int comm_rank(void)
{
    int r = 0;
    if (ranks() > 1)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* This rank's number on its node and the ranks there (one split, the first time asked). */
static int node_local = -1, node_ranks = 1;

static void node_split(void)
{
    if (node_local >= 0)
        return;
    node_local = 0;
    if (ranks() > 1) {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &node_local);
        MPI_Comm_size(node, &node_ranks);
        MPI_Comm_free(&node);
    }
}

int comm_local_rank(void)
{
    node_split();
    return node_local;
}

int comm_node_ranks(void)
{
    node_split();
    return node_ranks;
}

/* Messages above 2^31 bytes are not needed: a rank's border holds far fewer particles. */
static int count_of(size_t n)
{
    if (n > 0x7fffffffu)
        EMPIC_DIE("an MPI message of %zu bytes exceeds 2^31", n);
    return (int)n;
}

static void allreduce(void *v, size_t n, MPI_Datatype t, MPI_Op op)
{
    if (ranks() > 1 && n)
        MPI_Allreduce(MPI_IN_PLACE, v, count_of(n), t, op, MPI_COMM_WORLD);
}
#else
static int ranks(void) { return 1; }
void comm_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    empic_ranks(0, 1, comm_abort);
}
void comm_finalize(void) {}
int comm_rank(void) { return 0; }
int comm_local_rank(void) { return 0; }
int comm_node_ranks(void) { return 1; }
#endif

int comm_size(void) { return ranks(); }

int comm_built(void)
{
#ifdef EMPIC_MPI
    return 1;
#else
    return 0;
#endif
}

void comm_abort(int rc)
{
    fflush(stdout);
#ifdef EMPIC_MPI
    if (ranks() > 1)
        MPI_Abort(MPI_COMM_WORLD, rc);
#endif
    fflush(NULL);
    _exit(rc); /* no exit handlers: empic_exit says why */
}

static double exchange_s; /* seconds in comm_sendrecv on several ranks */

double comm_exchange_s(void) { return exchange_s; }

size_t comm_sendrecv(const void *send, size_t n, int to, void *recv, size_t cap, int from,
                     int tag)
{
#ifdef EMPIC_MPI
    if (ranks() > 1) {
        MPI_Status st;
        int got = 0;
        const double t0 = MPI_Wtime();
        MPI_Sendrecv(send, count_of(n), MPI_BYTE, to < 0 ? MPI_PROC_NULL : to, tag, recv,
                     count_of(cap), MPI_BYTE, from < 0 ? MPI_PROC_NULL : from, tag,
                     MPI_COMM_WORLD, &st);
        if (from >= 0)
            MPI_Get_count(&st, MPI_BYTE, &got);
        exchange_s += MPI_Wtime() - t0;
        return (size_t)got;
    }
#endif
    (void)tag;
    if (to < 0 || from < 0)
        return 0;
    if (n > cap)
        EMPIC_DIE("a message of %zu bytes into %zu", n, cap);
    memmove(recv, send, n);
    return n;
}

#ifdef EMPIC_MPI
void comm_sum_double(double *v, size_t n) { allreduce(v, n, MPI_DOUBLE, MPI_SUM); }
void comm_sum_ll(long long *v, size_t n) { allreduce(v, n, MPI_LONG_LONG, MPI_SUM); }
void comm_sum_int(int *v, size_t n) { allreduce(v, n, MPI_INT, MPI_SUM); }
void comm_max_double(double *v, size_t n) { allreduce(v, n, MPI_DOUBLE, MPI_MAX); }
void comm_max_int(int *v, size_t n) { allreduce(v, n, MPI_INT, MPI_MAX); }

void comm_bcast(void *v, size_t n, int root)
{
    if (ranks() > 1)
        MPI_Bcast(v, count_of(n), MPI_BYTE, root, MPI_COMM_WORLD);
}

void comm_gather(const void *send, size_t n, void *recv, const size_t *counts)
{
    const int size = ranks(), me = comm_rank();
    if (size == 1) {
        memcpy(recv, send, n);
        return;
    }
    int *cnt = NULL, *dsp = NULL;
    if (me == 0) {
        cnt = empic_alloc((size_t)size * sizeof(int), "gather counts");
        dsp = empic_alloc((size_t)size * sizeof(int), "gather counts");
        size_t off = 0;
        for (int r = 0; r < size; r++) {
            cnt[r] = count_of(counts[r]);
            dsp[r] = count_of(off);
            off += counts[r];
        }
    }
    MPI_Gatherv(send, count_of(n), MPI_BYTE, recv, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(cnt);
    free(dsp);
}

void comm_barrier(void)
{
    if (ranks() > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

void comm_alltoallv(const void *send, const size_t *scount, void *recv, const size_t *rcount,
                    size_t unit)
{
    const int size = ranks();
    if (size == 1) {
        memmove(recv, send, scount[0] * unit);
        return;
    }
    int *c = empic_alloc(4 * (size_t)size * sizeof(int), "exchange counts");
    size_t so = 0, ro = 0;
    for (int r = 0; r < size; r++) {
        c[r] = count_of(scount[r]);
        c[size + r] = count_of(so);
        c[2 * size + r] = count_of(rcount[r]);
        c[3 * size + r] = count_of(ro);
        so += scount[r];
        ro += rcount[r];
    }
    count_of(so);
    count_of(ro);
    MPI_Datatype t;
    MPI_Type_contiguous(count_of(unit), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    MPI_Alltoallv(send, c, c + size, t, recv, c + 2 * size, c + 3 * size, t, MPI_COMM_WORLD);
    MPI_Type_free(&t);
    free(c);
}
#else
void comm_sum_double(double *v, size_t n) { (void)v, (void)n; }
void comm_sum_ll(long long *v, size_t n) { (void)v, (void)n; }
void comm_sum_int(int *v, size_t n) { (void)v, (void)n; }
void comm_max_double(double *v, size_t n) { (void)v, (void)n; }
void comm_max_int(int *v, size_t n) { (void)v, (void)n; }
void comm_bcast(void *v, size_t n, int root) { (void)v, (void)n, (void)root; }
void comm_gather(const void *send, size_t n, void *recv, const size_t *counts)
{
    (void)counts;
    memcpy(recv, send, n);
}
void comm_barrier(void) {}
void comm_alltoallv(const void *send, const size_t *scount, void *recv, const size_t *rcount,
                    size_t unit)
{
    (void)rcount;
    memmove(recv, send, scount[0] * unit);
}
#endif
