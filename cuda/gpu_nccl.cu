/* gpu_nccl.cu - GPU ranks exchanging device memory directly (gpu_nccl.h): the transport
 * chosen at open, NCCL loaded at run time (dlopen of libnccl.so.2, so the binary has no link
 * dependency on it; the build needs nccl.h for its types), the field halo packed, sent and
 * unpacked on the device, and the sort's border leavers sent between the device areas.
 *
 * The halo reproduces emf_guard_axis and emf_acc_fold (src/state/emf.c), which the staged
 * path runs on the host mirror, band for band: x first (a guard fill over this rank's rows, a
 * fold over every row), then y over whole rows (the corners the x pass brought travel on);
 * a guard fill writes only the guards that have a neighbour, a fold zeroes both guard bands
 * (a box edge's deposits are dropped) and adds what arrives into the cells, in 64-bit
 * integers (the order of the adds does not matter). Each axis is one NCCL group with one
 * message per neighbour carrying every component. Two ranks on a periodic axis are each
 * other's neighbour on both sides: NCCL pairs the messages between two ranks in the order
 * they are issued, so every rank sends [toward -, toward +] and receives [from +, from -]
 * (what its peer sent toward - arrives from its + side). */
#include "gpu_internal.h"
#include "yee.h"

#include <stdlib.h>
#include <string.h>

#ifdef EMPIC_NCCL
#include <dlfcn.h>
#include <nccl.h>

/* The NCCL functions used, resolved from the library at open. */
static struct {
    void *lib;
    decltype(&ncclGetUniqueId) get_unique_id;
    decltype(&ncclCommInitRank) comm_init_rank;
    decltype(&ncclCommDestroy) comm_destroy;
    decltype(&ncclCommGetAsyncError) async_error;
    decltype(&ncclSend) send;
    decltype(&ncclRecv) recv;
    decltype(&ncclGroupStart) group_start;
    decltype(&ncclGroupEnd) group_end;
    decltype(&ncclGetErrorString) error_string;
} fn;

struct gpu_nccl {
    /* comm: the sort's exchanges (main stream); halo: the field halos and the window's PML
     * column, which run on the field stream beside the sort (gpu_fields_begin): operations of
     * one communicator must not run on two streams at once, so each has its own */
    ncclComm_t comm, halo;
    char *buf;    /* the halo's four message areas: to -, to +, from -, from + */
    size_t each;  /* bytes of one: the widest bands of a fold or a guard fill */
    unsigned long long *fold; /* the early x fold's four areas (gpu_nccl_fold_x_area) */
    size_t fold_each;         /* entries of one: J's three x fold bands */
    struct nccl_sort *sort; /* the sort's histogram halo and border counts (end of file) */
};

/* dlopen and dlsym; NULL when every function is there, else why not. */
static const char *nccl_load(void)
{
    static char why[256];
    if (fn.lib)
        return NULL;
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "%s", e ? e : "libnccl.so.2 not loaded");
        return why;
    }
    struct {
        void **to;
        const char *name;
    } sym[] = {{(void **)&fn.get_unique_id, "ncclGetUniqueId"},
               {(void **)&fn.comm_init_rank, "ncclCommInitRank"},
               {(void **)&fn.comm_destroy, "ncclCommDestroy"},
               {(void **)&fn.async_error, "ncclCommGetAsyncError"},
               {(void **)&fn.send, "ncclSend"},
               {(void **)&fn.recv, "ncclRecv"},
               {(void **)&fn.group_start, "ncclGroupStart"},
               {(void **)&fn.group_end, "ncclGroupEnd"},
               {(void **)&fn.error_string, "ncclGetErrorString"}};
    for (size_t k = 0; k < sizeof sym / sizeof sym[0]; k++)
        if (!(*sym[k].to = dlsym(lib, sym[k].name))) {
            snprintf(why, sizeof why, "libnccl.so.2 has no %s", sym[k].name);
            dlclose(lib);
            return why;
        }
    fn.lib = lib;
    return NULL;
}

/* Stop every rank on an NCCL error, naming the call. */
static void nccl_check(ncclResult_t r, const char *what, const char *file, int line)
{
    if (r == ncclSuccess)
        return;
    empic_report(file, line, "%s: %s", what, fn.error_string ? fn.error_string(r) : "failed");
    empic_exit(1);
}
#define NCCL_CK(call) nccl_check((call), #call, __FILE__, __LINE__)

static void nccl_connect(gpu_state *g, gpu_nccl *n);
#else
struct gpu_nccl {
    struct nccl_sort *sort;
};
#endif

/* Per rank, for rank 0 to judge: the device's UUID (two ranks on one GPU: staged) and
 * whether NCCL loaded here. */
typedef struct {
    unsigned char uuid[16];
    int no_nccl;
} rank_gpu;

void gpu_transport_open(gpu_state *g, pic_state *st)
{
    g->nccl = NULL;
    st->transport = g->ranks > 1 ? "staged" : "none";
    g->overlap = g->ranks == 1; /* staged exchanges wait on the host: no field stream */
    if (g->ranks == 1)
        return;
#ifdef EMPIC_NCCL
    if (st->kept) { /* a rebalance's reopen: the communicators of the last open */
        gpu_nccl *n = (gpu_nccl *)st->kept;
        st->kept = NULL;
        nccl_connect(g, n);
        st->transport = "nccl";
        return;
    }
#endif
    const char *env = getenv("EMPIC_TRANSPORT");
    const int force = env && !strcmp(env, "nccl");
    if (env && *env && strcmp(env, "auto") && strcmp(env, "staged") && !force)
        EMPIC_DIE("EMPIC_TRANSPORT=%s: auto, staged or nccl", env);
    if (env && !strcmp(env, "staged"))
        return;
    rank_gpu me;
    memset(&me, 0, sizeof me);
    cudaDeviceProp p;
    GPU_CK(cudaGetDeviceProperties(&p, g->device));
    memcpy(me.uuid, p.uuid.bytes, sizeof me.uuid);
#ifdef EMPIC_NCCL
    const char *why = nccl_load();
#else
    const char *why = "built without nccl.h (make NCCL=auto finds it)";
#endif
    me.no_nccl = why != NULL;
    /* rank 0 judges: verdict[0] some GPU is shared, [1] NCCL is missing on some rank */
    rank_gpu *all = NULL;
    size_t *counts = NULL;
    if (g->rank == 0) {
        all = (rank_gpu *)empic_alloc((size_t)g->ranks * sizeof *all, "transport choice");
        counts = (size_t *)empic_alloc((size_t)g->ranks * sizeof *counts, "transport choice");
        for (int r = 0; r < g->ranks; r++)
            counts[r] = sizeof *all;
    }
    comm_gather(&me, sizeof me, all, counts);
    int verdict[2] = {0, 0};
    if (g->rank == 0) {
        for (int r = 0; r < g->ranks; r++) {
            verdict[1] |= all[r].no_nccl;
            for (int q = 0; q < r; q++)
                verdict[0] |= !memcmp(all[r].uuid, all[q].uuid, sizeof me.uuid);
        }
        free(all);
        free(counts);
    }
    comm_bcast(verdict, sizeof verdict, 0);
    if (verdict[0] || verdict[1]) {
        if (force)
            EMPIC_DIE("EMPIC_TRANSPORT=nccl, but %s", verdict[0]
                          ? "ranks share a GPU (NCCL needs one GPU per rank)"
                          : why ? why : "NCCL did not load on every rank");
        if (verdict[1] && !verdict[0] && g->rank == 0)
            fprintf(stderr, "empic: NCCL not used (%s): the GPU ranks exchange through the "
                            "host\n", why ? why : "it did not load on every rank");
        return;
    }
#ifdef EMPIC_NCCL
    setenv("NCCL_NVLS_ENABLE", "0", 0); /* no NVLink multicast (its buffers are not needed) */
    ncclUniqueId id[2];
    memset(id, 0, sizeof id);
    if (g->rank == 0)
        for (int k = 0; k < 2; k++)
            NCCL_CK(fn.get_unique_id(&id[k]));
    comm_bcast(id, sizeof id, 0);
    gpu_nccl *n = (gpu_nccl *)empic_calloc(1, sizeof *n, "NCCL state");
    NCCL_CK(fn.comm_init_rank(&n->comm, g->ranks, id[0], g->rank));
    NCCL_CK(fn.comm_init_rank(&n->halo, g->ranks, id[1], g->rank));
    nccl_connect(g, n);
    st->transport = "nccl";
#endif
}

#ifdef EMPIC_NCCL
/* The halo's message areas for this share, and the neighbours connected. */
static void nccl_connect(gpu_state *g, gpu_nccl *n)
{
    const int widest = g->rows > g->stride ? g->rows : g->stride;
    /* a fold of three 8-byte sums, or a guard fill of up to six floats */
    n->each = (size_t)GPU_HALO_MAX * sizeof(float) * EMF_GUARD * widest + 32;
    n->buf = (char *)gpu_malloc(g, 4 * n->each, "NCCL halo messages");
    /* NCCL connects to a peer at the first message (most of a second): one byte to and from
     * each neighbour now, so that the timed phases do not pay it (to nb[k] goes what the rank
     * on side k takes from its side k ^ 1: this rank; a peer connected before is not
     * connected again) */
    GPU_CK(cudaMemset(n->buf, 0, 8));
    for (int c = 0; c < 2; c++) {
        ncclComm_t comm = c ? n->halo : n->comm;
        NCCL_CK(fn.group_start());
        for (int k = 0; k < 4; k++) {
            if (g->nb[k] >= 0 && g->nb[k] != g->rank)
                NCCL_CK(fn.send(n->buf, 1, ncclChar, g->nb[k], comm, g->stream));
            if (g->nb[k ^ 1] >= 0 && g->nb[k ^ 1] != g->rank)
                NCCL_CK(fn.recv(n->buf + 8 + k, 1, ncclChar, g->nb[k ^ 1], comm, g->stream));
        }
        NCCL_CK(fn.group_end());
        GPU_CK(cudaStreamSynchronize(g->stream));
    }
    g->nccl = n;
    g->overlap = 1;
}
#endif

static void nccl_sort_free(gpu_nccl *n);

void gpu_transport_close(gpu_state *g, pic_state *st)
{
    if (!g->nccl)
        return;
    nccl_sort_free(g->nccl);
#ifdef EMPIC_NCCL
    GPU_CK(cudaStreamSynchronize(g->stream));
    cudaFree(g->nccl->buf);
    g->nccl->buf = NULL;
    if (g->nccl->fold)
        cudaFree(g->nccl->fold);
    g->nccl->fold = NULL;
    if (st->reopen) { /* a rebalance: the communicators do not depend on the share */
        st->kept = g->nccl;
        g->nccl = NULL;
        return;
    }
    for (int c = 0; c < 2; c++) {
        ncclComm_t comm = c ? g->nccl->halo : g->nccl->comm;
        ncclResult_t async = ncclSuccess;
        NCCL_CK(fn.async_error(comm, &async));
        NCCL_CK(async);
        NCCL_CK(fn.comm_destroy(comm));
    }
#endif
    free(g->nccl);
    g->nccl = NULL;
}

#ifdef EMPIC_NCCL
/* Up to GPU_HALO_MAX arrays of 4- or 8-byte entries (guard fill: float bits; fold:
 * fixed-point). */
template <typename T> struct arrays_n {
    T *p[GPU_HALO_MAX];
    int ncomp;
};

/* Two bands of nr rows and nc columns of each array, at (row, column) lo and hi, into the
 * messages out_lo and out_hi (component after component, rows in order), the bands zeroed
 * when `zero` (a fold's guards). */
template <typename T>
__global__ void k_band_pack(arrays_n<T> a, int stride, int nr, int nc, int2 lo, int2 hi,
                            T *out_lo, T *out_hi, int zero)
{
    const size_t per = (size_t)nr * nc, n = per * a.ncomp;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < 2 * n;
         t += (size_t)gridDim.x * blockDim.x) {
        const int side = t >= n;
        const size_t q = t - (side ? n : 0), e = q % per;
        const int2 b = side ? hi : lo;
        T *p = a.p[q / per] + (size_t)(b.x + (int)(e / nc)) * stride + b.y + (int)(e % nc);
        (side ? out_hi : out_lo)[q] = *p;
        if (zero)
            *p = 0;
    }
}

/* The messages in_lo (from the - side, when use_lo) and in_hi (from the + side) into the
 * bands at lo and hi: copied (guard fill) or added (fold). */
template <typename T>
__global__ void k_band_unpack(arrays_n<T> a, int stride, int nr, int nc, int2 lo, int2 hi,
                              const T *in_lo, const T *in_hi, int use_lo, int use_hi, int add)
{
    const size_t per = (size_t)nr * nc, n = per * a.ncomp;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < 2 * n;
         t += (size_t)gridDim.x * blockDim.x) {
        const int side = t >= n;
        if (!(side ? use_hi : use_lo))
            continue;
        const size_t q = t - (side ? n : 0), e = q % per;
        const int2 b = side ? hi : lo;
        T *p = a.p[q / per] + (size_t)(b.x + (int)(e / nc)) * stride + b.y + (int)(e % nc);
        const T v = (side ? in_hi : in_lo)[q];
        *p = add ? *p + v : v;
    }
}

/* One NCCL group with the two neighbours along an axis: to_lo goes to the rank below (lo),
 * to_hi to the rank above (hi); from_hi comes from above, from_lo from below (count
 * elements of `type` each; a side without a neighbour, -1, sends and takes nothing). Sends
 * are issued [down, up] and receives [from above, from below]: NCCL pairs the messages
 * between two ranks in issue order, and with two ranks on a periodic axis both neighbours
 * are the same rank, whose first receive (from its upper side: this rank) must meet this
 * rank's first send (down). */
static void swap_sides(gpu_state *g, ncclComm_t comm, void *to_lo, void *to_hi, void *from_lo,
                       void *from_hi, size_t count, ncclDataType_t type, int lo, int hi)
{
    NCCL_CK(fn.group_start());
    if (lo >= 0)
        NCCL_CK(fn.send(to_lo, count, type, lo, comm, g->stream));
    if (hi >= 0)
        NCCL_CK(fn.send(to_hi, count, type, hi, comm, g->stream));
    if (hi >= 0)
        NCCL_CK(fn.recv(from_hi, count, type, hi, comm, g->stream));
    if (lo >= 0)
        NCCL_CK(fn.recv(from_lo, count, type, lo, comm, g->stream));
    NCCL_CK(fn.group_end());
    gpu_trace_mark(g, comm == g->nccl->halo ? "nccl-halo" : "nccl-sort");
}

/* The bands of emf_guard_axis / emf_acc_fold (emf.c) along one axis: nr rows of nc entries
 * sent from send[0] (toward -) and send[1] (toward +), received into recv[0] (from -) and
 * recv[1] (from +), as (row, column). */
typedef struct {
    int nr, nc;
    int2 send[2], recv[2];
} halo_bands;

static halo_bands bands_of(const gpu_state *g, int fold, int axis)
{
    const int G = EMF_GUARD, w = g->i1 - g->i0, h = g->j1 - g->j0;
    halo_bands b;
    if (axis == 0) { /* G columns: of this rank's rows and the edge row above them
                        (yee_fill_top; guard fill), of every row (fold) */
        b.nr = fold ? g->rows : h + yee_fill_top(g->j1, g->ny, g->py);
        b.nc = G;
        const int r0 = fold ? 0 : G;
        if (fold) { /* the guards go, and add into the cells next to the other side */
            b.send[0] = make_int2(r0, 0), b.send[1] = make_int2(r0, G + w);
            b.recv[0] = make_int2(r0, G), b.recv[1] = make_int2(r0, w);
        } else { /* the first and last G cells go, into the guards */
            b.send[0] = make_int2(r0, G), b.send[1] = make_int2(r0, w);
            b.recv[0] = make_int2(r0, 0), b.recv[1] = make_int2(r0, G + w);
        }
    } else { /* G whole rows */
        b.nr = G;
        b.nc = g->stride;
        if (fold) {
            b.send[0] = make_int2(0, 0), b.send[1] = make_int2(G + h, 0);
            b.recv[0] = make_int2(G, 0), b.recv[1] = make_int2(h, 0);
        } else {
            b.send[0] = make_int2(G, 0), b.send[1] = make_int2(h, 0);
            b.recv[0] = make_int2(0, 0), b.recv[1] = make_int2(G + h, 0);
        }
    }
    return b;
}

/* The four message areas (to -, to +, from -, from +). */
static char *area(gpu_state *g, int k) { return g->nccl->buf + k * g->nccl->each; }

static size_t bands_bytes(const halo_bands &b, int ncomp, size_t esz)
{
    return (((size_t)ncomp * b.nr * b.nc * esz) + 15) / 16 * 16;
}

template <typename T> static arrays_n<T> arrays_of(void *const a[], int ncomp)
{
    arrays_n<T> arr;
    for (int c = 0; c < GPU_HALO_MAX; c++)
        arr.p[c] = c < ncomp ? (T *)a[c] : NULL;
    arr.ncomp = ncomp;
    return arr;
}

static unsigned band_blocks(const halo_bands &b, int ncomp)
{
    const size_t n = gpu_blocks(2 * (size_t)ncomp * b.nr * b.nc, 256);
    return n < 1024 ? (unsigned)n : 1024;
}

/* The bands of arrays a[] (T entries) packed into the outgoing areas; a fold's guards
 * zeroed. */
template <typename T>
static void bands_pack(gpu_state *g, void *const a[], int ncomp, const halo_bands &b, int fold)
{
    k_band_pack<T><<<band_blocks(b, ncomp), 256, 0, g->stream>>>(
        arrays_of<T>(a, ncomp), g->stride, b.nr, b.nc, b.send[0], b.send[1],
        (T *)area(g, 0), (T *)area(g, 1), fold);
    GPU_LAUNCHED(g, "k_band_pack");
}

/* What came in (in_lo from the - side, in_hi from the +) into the bands: copied, or added
 * (fold). */
template <typename T>
static void bands_unpack(gpu_state *g, void *const a[], int ncomp, const halo_bands &b,
                         const void *in_lo, const void *in_hi, int fold, int axis)
{
    const int lo = g->nb[2 * axis], hi = g->nb[2 * axis + 1];
    k_band_unpack<T><<<band_blocks(b, ncomp), 256, 0, g->stream>>>(
        arrays_of<T>(a, ncomp), g->stride, b.nr, b.nc, b.recv[0], b.recv[1],
        (const T *)in_lo, (const T *)in_hi, lo >= 0, hi >= 0, fold);
    GPU_LAUNCHED(g, "k_band_unpack");
}

/* One axis: the fold of ncomp arrays of 64-bit sums, or the guard fill of ncomp float arrays,
 * packed into one message per neighbour, one NCCL group, unpacked. */
template <typename T>
static void axis_exchange(gpu_state *g, void *const a[], int ncomp, int fold, int axis)
{
    const halo_bands b = bands_of(g, fold, axis);
    const size_t bytes = bands_bytes(b, ncomp, sizeof(T));
    if (bytes > g->nccl->each)
        EMPIC_DIE("a halo message of %zu bytes exceeds its buffer of %zu", bytes,
                  g->nccl->each);
    bands_pack<T>(g, a, ncomp, b, fold);
    swap_sides(g, g->nccl->halo, area(g, 0), area(g, 1), area(g, 2), area(g, 3),
               bytes, ncclChar, g->nb[2 * axis], g->nb[2 * axis + 1]);
    bands_unpack<T>(g, a, ncomp, b, area(g, 2), area(g, 3), fold, axis);
}

/* The x fold that gpu_nccl_fold_x_send sent: what came in added into the cells (the guards
 * of acc keep the tile sums, which the conversion drops). */
static void fold_x_late(gpu_state *g, void *const a[], int ncomp)
{
    const unsigned long long *f = g->nccl->fold;
    const size_t each = g->nccl->fold_each;
    GPU_CK(cudaStreamWaitEvent(g->stream, g->fold_sent, 0));
    bands_unpack<unsigned long long>(g, a, ncomp, bands_of(g, 1, 0), f + 2 * each,
                                     f + 3 * each, 1, 0);
    g->fold_x_early = 0;
}
#endif

void gpu_nccl_halo(gpu_state *g, void *const a[], int ncomp, int fold,
                   void (*self)(gpu_state *, void *const[], int, int))
{
    for (int axis = 0; axis < 2; axis++) {
        const int kind = gpu_axis_kind(g, axis);
        if (kind == 1)
            self(g, a, ncomp, axis);
#ifdef EMPIC_NCCL
        else if (kind == 0 && axis == 0 && fold && g->fold_x_early)
            fold_x_late(g, a, ncomp);
        else if (kind == 0 && fold)
            axis_exchange<unsigned long long>(g, a, ncomp, 1, axis);
        else if (kind == 0)
            axis_exchange<float>(g, a, ncomp, 0, axis);
#endif
    }
}

unsigned long long *gpu_nccl_fold_x_area(gpu_state *g, int k)
{
#ifdef EMPIC_NCCL
    gpu_nccl *n = g->nccl;
    if (!n->fold) {
        n->fold_each = (size_t)3 * EMF_GUARD * g->rows;
        n->fold = (unsigned long long *)gpu_malloc(g, 4 * n->fold_each * sizeof *n->fold,
                                                   "NCCL fold messages");
    }
    return n->fold + k * n->fold_each;
#else
    (void)g, (void)k;
    return NULL;
#endif
}

void gpu_nccl_fold_x_send(gpu_state *g, int ncomp)
{
#ifdef EMPIC_NCCL
    unsigned long long *f = gpu_nccl_fold_x_area(g, 0);
    const size_t each = g->nccl->fold_each;
    swap_sides(g, g->nccl->comm, f, f + each, f + 2 * each, f + 3 * each,
               (size_t)ncomp * EMF_GUARD * g->rows, ncclUint64, g->nb[0], g->nb[1]);
    GPU_CK(cudaEventRecord(g->fold_sent, g->stream));
    g->fold_x_early = 1;
#else
    (void)g, (void)ncomp;
#endif
}

void gpu_nccl_border(gpu_state *g, const int *which, int nsort, const size_t (*off)[5], int up,
                     int down)
{
#ifdef EMPIC_NCCL
    ncclComm_t comm = g->nccl->comm;
    NCCL_CK(fn.group_start());
    for (int k = 0; k < nsort; k++) { /* sends [up, down], receives [from down, from up] */
        char *d = g->border[which[k]].dev;
        const size_t *o = off[k];
        if (o[1] > o[0] && up >= 0)
            NCCL_CK(fn.send(d + o[0], o[1] - o[0], ncclChar, up, comm, g->stream));
        if (o[2] > o[1] && down >= 0)
            NCCL_CK(fn.send(d + o[1], o[2] - o[1], ncclChar, down, comm, g->stream));
        if (o[4] > o[3] && down >= 0)
            NCCL_CK(fn.recv(d + o[3], o[4] - o[3], ncclChar, down, comm, g->stream));
        if (o[3] > o[2] && up >= 0)
            NCCL_CK(fn.recv(d + o[2], o[3] - o[2], ncclChar, up, comm, g->stream));
    }
    NCCL_CK(fn.group_end());
    gpu_trace_mark(g, "nccl-border");
#else
    (void)g, (void)which, (void)nsort, (void)off, (void)up, (void)down;
#endif
}

/* ==== The sort's migration histograms (gpu_sort.cu: hist_exchange, border_pass) ==========
 * clusters_hist_halo (src/state/species.c) on the device: per axis, x then y, the first line
 * of this rank's clusters goes to the rank below and the last to the rank above, and what
 * comes back fills the line past the last and the one before the first. Along x a line is a
 * cluster column over this rank's rows; along y a cluster row over its columns and the x
 * ring beside them (the ring's entries came in with the x pass: the corners), the ring
 * wrapped around a periodic x (then the line names some clusters twice, with the same
 * entries). Every species of the mask in one message per neighbour and direction, one NCCL
 * group per axis, sent [toward -, toward +] and received [from +, from -] as the halo above;
 * integer copies, so the tables end as the staged path's, entry for entry. */

struct nccl_sort {
    int *buf;            /* four message areas of `each` ints: to -, to +, from -, from + */
    size_t each;         /* every species' line of the longer axis and its ring */
    int4 *cdev, *chost;  /* the border counts (gpu_nccl_count_room) */
    size_t cn;
    cudaEvent_t ready;
};

static void nccl_sort_free(gpu_nccl *n)
{
    nccl_sort *s = n->sort;
    if (!s)
        return;
    if (s->buf)
        cudaFree(s->buf);
    if (s->cdev)
        cudaFree(s->cdev), cudaFreeHost(s->chost);
    if (s->ready)
        cudaEventDestroy(s->ready);
    free(s);
    n->sort = NULL;
}

static nccl_sort *sort_state(gpu_state *g)
{
    if (!g->nccl->sort) {
        nccl_sort *s = (nccl_sort *)empic_calloc(1, sizeof *s, "sort exchange");
        GPU_CK(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming));
        g->nccl->sort = s;
    }
    return g->nccl->sort;
}

gpu_nccl_counts gpu_nccl_count_room(gpu_state *g, size_t n)
{
    nccl_sort *s = sort_state(g);
    if (n > s->cn) {
        if (s->cdev) { /* a copy down may still be under way */
            GPU_CK(cudaStreamSynchronize(g->stream));
            GPU_CK(cudaFree(s->cdev));
            GPU_CK(cudaFreeHost(s->chost));
        }
        s->cdev = (int4 *)gpu_malloc(g, n * sizeof(int4), "sort exchange");
        GPU_CK(cudaMallocHost(&s->chost, n * sizeof(int4)));
        s->cn = n;
    }
    gpu_nccl_counts c = {s->cdev, s->chost, s->ready};
    return c;
}

#ifdef EMPIC_NCCL
/* The histogram tables of the species exchanged, in species order. */
typedef struct {
    int *h[DECK_MAX_SPECIES];
    int n;
} hist_tables;

/* Entry o of the line at `at` (wrapped, as hist_line): along x cluster (at, o), along y
 * (o, at). */
__device__ __forceinline__ int line_cluster(int axis, int at, int o, int ncx, int ncy)
{
    return axis ? (o + ncx) % ncx + (at + ncy) % ncy * ncx
                : (at + ncx) % ncx + (o + ncy) % ncy * ncx;
}

/* Lines lo .. lo + len of every table: at at[0] into out[0] (species after species, 9 ints
 * per entry), at at[1] into out[1]; unpack: the other way, for the sides with use[side]. */
__global__ void k_hist_lines(hist_tables t, int axis, int lo, int len, int2 at, int *m0,
                             int *m1, int unpack, int2 use, int ncx, int ncy)
{
    const int per = 9 * len, n = per * t.n;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < 2 * n; q += gridDim.x * blockDim.x) {
        const int side = q >= n, r = q - (side ? n : 0), e = r % per;
        if (unpack && !(side ? use.y : use.x))
            continue;
        const int c = line_cluster(axis, side ? at.y : at.x, lo + e / 9, ncx, ncy);
        int *h = t.h[r / per] + 9 * (size_t)c + e % 9, *m = (side ? m1 : m0) + r;
        if (unpack)
            *h = *m;
        else
            *m = *h;
    }
}
#endif

void gpu_nccl_hist_halo(gpu_state *g, const clusters *cl, unsigned mask)
{
#ifdef EMPIC_NCCL
    hist_tables t;
    t.n = 0;
    for (int s = 0; s < g->nsp; s++)
        if ((mask >> s) & 1u)
            t.h[t.n++] = g->sp[s].hist;
    nccl_sort *S = sort_state(g);
    if (!S->buf) {
        S->each = (size_t)9 * g->nsp * ((cl->ncx > cl->ncy ? cl->ncx : cl->ncy) + 2);
        S->buf = (int *)gpu_malloc(g, 4 * S->each * sizeof(int), "sort exchange");
    }
    /* as clusters_hist_halo: along x this rank's rows; along y its columns and the x ring */
    const int lo[2] = {cl->cy0, cl->cx0 - (cl->periodic_x || cl->cx0 > 0)};
    const int hi[2] = {cl->cy1, cl->cx1 + (cl->periodic_x || cl->cx1 < cl->ncx)};
    const int first[2] = {cl->cx0, cl->cy0}, last[2] = {cl->cx1 - 1, cl->cy1 - 1};
    int *to_lo = S->buf, *to_hi = S->buf + S->each, *from_lo = S->buf + 2 * S->each;
    int *from_hi = S->buf + 3 * S->each;
    for (int axis = 0; axis < 2 && t.n; axis++) {
        const int down = cl->nb[2 * axis], up = cl->nb[2 * axis + 1];
        if (gpu_axis_kind(g, axis) != 0)
            continue; /* this rank's alone, or box edges on both sides: nothing comes */
        const int len = hi[axis] - lo[axis];
        const size_t count = (size_t)9 * len * t.n;
        if (count > S->each)
            EMPIC_DIE("a histogram message of %zu ints exceeds its buffer of %zu", count,
                      S->each);
        const unsigned blocks = gpu_blocks(2 * count, 256);
        /* the first line down, the last up; what comes from above past the last line, from
         * below before the first */
        k_hist_lines<<<blocks, 256, 0, g->stream>>>(t, axis, lo[axis], len,
                                                    make_int2(first[axis], last[axis]), to_lo,
                                                    to_hi, 0, make_int2(0, 0), cl->ncx, cl->ncy);
        GPU_LAUNCHED(g, "k_hist_lines");
        swap_sides(g, g->nccl->comm, to_lo, to_hi, from_lo, from_hi, count, ncclInt32, down,
                   up);
        k_hist_lines<<<blocks, 256, 0, g->stream>>>(
            t, axis, lo[axis], len, make_int2(first[axis] - 1, last[axis] + 1), from_lo,
            from_hi, 1, make_int2(down >= 0, up >= 0), cl->ncx, cl->ncy);
        GPU_LAUNCHED(g, "k_hist_lines");
    }
#else
    (void)g, (void)cl, (void)mask;
#endif
}

/* ==== The moving window: the PML memories' border columns (gpu_window.cu) ======== */

#ifdef EMPIC_NCCL
/* Column `col` of the layers as layer_column (fbnd.c) walks it: layer l's rows [jlo, jlo +
 * cnt) (an x layer: all of [j0, j1) when col is one of its columns, else none; a y layer:
 * those of [j0, j1) inside it), its four arrays' runs one after the other from at[l] of the
 * message. */
typedef struct {
    float *p[4][4];
    int axis[4], first[4], n[4], len[4], jlo[4], cnt[4];
    size_t at[4];
    int col, nlayers;
    size_t total;
} psi_column;

static psi_column psi_column_of(const gpu_state *g, int col)
{
    psi_column c;
    memset(&c, 0, sizeof c);
    c.col = col;
    c.nlayers = g->nlayers;
    for (int l = 0; l < g->nlayers; l++) {
        const gpu_layer *L = &g->layer[l];
        int lo = g->j0, hi = g->j1;
        if (L->axis == 0 && (col < L->first || col >= L->first + L->n))
            hi = lo;
        else if (L->axis == 1) {
            lo = L->first > lo ? L->first : lo;
            hi = L->first + L->n < hi ? L->first + L->n : hi;
        }
        for (int m = 0; m < 4; m++)
            c.p[l][m] = L->psi[m];
        c.axis[l] = L->axis, c.first[l] = L->first, c.n[l] = L->n, c.len[l] = L->len;
        c.jlo[l] = lo;
        c.cnt[l] = hi > lo ? hi - lo : 0;
        c.at[l] = c.total;
        c.total += 4 * (size_t)c.cnt[l];
    }
    return c;
}

/* Two columns, one message: the first's entries, then the second's. */
typedef struct {
    psi_column c[2];
    size_t total;
} psi_columns;

static psi_columns psi_columns_of(const gpu_state *g, int col)
{
    psi_columns a = {{psi_column_of(g, col), psi_column_of(g, col + 1)}, 0};
    a.total = a.c[0].total + a.c[1].total;
    return a;
}

/* Entry t of the columns' message to msg (out) or from it, as layer_column's copies. */
__global__ void k_psi_column(const psi_columns a, float *msg, int out)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < a.total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int second = e >= a.c[0].total;
        const psi_column &c = a.c[second];
        const size_t t = e - (second ? a.c[0].total : 0);
        int l = 0;
        while (t >= c.at[l] + 4 * (size_t)c.cnt[l]) /* a layer without entries is passed */
            l++;
        const size_t q = t - c.at[l];
        const int m = (int)(q / c.cnt[l]), j = c.jlo[l] + (int)(q % c.cnt[l]);
        float *p = c.p[l][m] + (c.axis[l] == 0
                                    ? (size_t)j * c.n[l] + (size_t)(c.col - c.first[l])
                                    : (size_t)(j - c.first[l]) * c.len[l] + (size_t)c.col);
        if (out)
            msg[e] = *p;
        else
            *p = msg[e];
    }
}
#endif

void gpu_nccl_psi_column(gpu_state *g)
{
#ifdef EMPIC_NCCL
    const int left = g->nb[SIDE_XMIN], right = g->nb[SIDE_XMAX];
    /* fbnd_shift_exchange sends when left >= 0 and i0 > 0; the rank on the right does so
     * exactly when right >= 0 and i1 < nx (its i0 is this rank's i1, or 0 across a periodic
     * side), with the same rows [j0, j1) and columns i1 - 1, i1: the same count */
    const psi_columns out = psi_columns_of(g, g->i0 - 1), in = psi_columns_of(g, g->i1 - 1);
    const size_t nout = left >= 0 && g->i0 > 0 ? out.total : 0;
    const size_t nin = right >= 0 && g->i1 < g->nx ? in.total : 0;
    if (!nout && !nin)
        return;
    const size_t room = 2 * g->nccl->each; /* the halo's areas to - and + / from - and + */
    if ((nout > nin ? nout : nin) * sizeof(float) > room)
        EMPIC_DIE("a PML column of %zu bytes exceeds its buffer of %zu",
                  (nout > nin ? nout : nin) * sizeof(float), room);
    float *to = (float *)g->nccl->buf, *from = (float *)(g->nccl->buf + room);
    if (nout) {
        k_psi_column<<<gpu_blocks(nout, 256), 256, 0, g->stream>>>(out, to, 1);
        GPU_LAUNCHED(g, "k_psi_column");
    }
    ncclComm_t comm = g->nccl->halo; /* on the field stream with the halos */
    NCCL_CK(fn.group_start());
    if (nout)
        NCCL_CK(fn.send(to, nout, ncclFloat, left, comm, g->stream));
    if (nin)
        NCCL_CK(fn.recv(from, nin, ncclFloat, right, comm, g->stream));
    NCCL_CK(fn.group_end());
    gpu_trace_mark(g, "nccl-psi");
    if (nin) {
        k_psi_column<<<gpu_blocks(nin, 256), 256, 0, g->stream>>>(in, from, 0);
        GPU_LAUNCHED(g, "k_psi_column");
    }
#else
    (void)g;
#endif
}
