/* gpu_internal.h - device state and helpers shared by the CUDA backend's translation units
 * (the twins of src/cpu/'s files: gpu_backend.cu, gpu_particles.cu, gpu_sort.cu,
 * gpu_walls.cu, gpu_fields.cu, gpu_fbnd.cu, gpu_window.cu, gpu_collide.cu; with gpu_core.cu,
 * gpu_halo.cu, gpu_diag.cu and gpu_debug.cu).
 *
 * The device keeps the host's Yee arrays with EMF_GUARD guard cells (emf.h) and its
 * segments, one per cluster (species.h: start, count, capacity; segments start on multiples
 * of 32 slots, so each thread can move 4 particles with 16-byte loads), but pairs a
 * particle's values where the host keeps one array each: (x, y), (ux, uy), (uz, w), then
 * cell and code. The sort then moves a particle in 5 memory sectors instead of 8 (its time
 * per particle-step measured about 30 % shorter on an H200); the transfers to and from the
 * host split and join the pairs on the device (gpu_core.cu). Kernels live in the file of
 * their phase; other files reach them through the host functions declared here. */
#ifndef GPU_INTERNAL_H
#define GPU_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ebal.h"
#include "empic.h"
#include "rng.h" /* Random123 is C++-aware: outside the C block below */
#include "phasespace.h"
extern "C" {     /* host C code: the state backend.h hands over, the boundaries' setup */
#include "comm.h"
#include "emf.h"
#include "species.h"
#include "fbnd.h"
#include "lasers.h"
}
#include "backend.h"
#include "gpu_nccl.h"

#include <cuda_runtime.h>

#define GPU_THREADS 256       /* threads per block of the particle and sort kernels */
#define GPU_VEC 4             /* particles per thread and loop trip (two pairs of slots) */
#define GPU_CHUNK 16384       /* particles of one part of a heavy cluster (gpu_particles.cu) */
#define GPU_EVENTS 4096       /* event pool for the phase timers: a full pool is harvested
                                 with a wait for every stream (gpu_tic), which with 256
                                 came every ~11 steps of a laser-wakefield deck on 4 ranks */
#define GPU_HALO_MAX 6        /* arrays in one halo exchange (gpu_halo; folds: 3 at most) */
#define SLOT_BYTES (3 * 8 + 4 + 1) /* one particle slot: (x, y), (ux, uy), (uz, w), cell, code */

typedef struct {
    int mobile;
    float q, m, qm;
    size_t alloc;                 /* slots of the segment layout (start, cap) */
    size_t slots;                 /* slots every array below has (>= alloc) */
    float2 *xy, *uxy, *uzw;       /* offsets in the cell, momenta, weight */
    uint32_t *cell;
    uint8_t *code;
    void *id;                     /* tracking ids, NULL when the species is untracked */
    int idb;                      /* their bytes: 4 when every id of the run fits
                                     (species.id_max), else 8 (0: untracked) */
    uint8_t *z;                   /* charge states of an ionizing species, else NULL */
    int zb;                       /* their bytes per slot: 1, or 0 (no charge states) */
    unsigned long long *spare;    /* the last rearrangement's spare array (slots 8-byte
                                     entries), kept for the next while memory is ample
                                     (gpu_relayout), else NULL */
    int cold;                     /* species.cold: a neutral atom stays at rest */
    const ionize_table *ion;      /* the host species' levels (species.ion), or NULL */
    int ion_to;                   /* the species its electrons join */
    int *start, *count, *cap;     /* per cluster */
    int cap_max;                  /* the largest cap (the particle kernel splits clusters of
                                     more than GPU_CHUNK particles only where one can hold
                                     that many) */
    int *hist;                    /* 9 migration bins per cluster */
    int *need;                    /* per cluster: room needed during the sort */
    int4 *movers;                 /* per cluster: +x, -x, +y, -y leavers of the sort passes */
    /* particle walls (gpu_walls.cu): edge clusters on a non-periodic side of this species */
    pbnd_walls walls;
    int nedge, *edge;             /* how many, and their ids (device): the border clusters
                                     (gpu_state.border_entries) first, nedge_border of them */
    int nedge_border;
    int absorbing;                /* some side absorbs: drop marked particles before the sort */
} gpu_species;

/* Floats of room behind each array the moving window slides (gpu_window.cu): so many shifts
 * before one copy. */
#define GPU_SLIDE 128

/* One CPML layer on the device (fbnd.h's pml_layer): coefficients eb, ec, bb, bc (n each)
 * and the four psi arrays. */
typedef struct {
    int axis, n, first, len;
    float *coef;
    float *psi[4];
    float *psi_mem[4];            /* their allocations: n len + GPU_SLIDE floats each */
} gpu_layer;

/* The blocks of a phase's boundary launch (gpu_fbnd.cu) that hold cells with terms, and the
 * geometry they were listed for. */
typedef struct {
    int4 box, quiet;
    int nlines, at[DECK_MAX_LASERS], axis[DECK_MAX_LASERS];
} gpu_bound_key;

typedef struct {
    gpu_bound_key key;
    int2 *dev;
    int n, cap;
} gpu_bound_blocks;

/* Their slots: E's, and B's over the cells of a box (its own, or the part of a split B
 * step: the inner box, the strips next to the - and + x borders). */
enum { BOUND_E, BOUND_B, BOUND_B_LO, BOUND_B_HI, GPU_BOUND_SLOTS };

/* A species' staging for the sort across rank borders (gpu_sort.cu: border_pass): four
 * areas (leavers going up and down, leavers come from up and down) on the device and, for
 * the staged transport, in pinned host memory (else host is NULL), and the table of the
 * border clusters. */
typedef struct {
    char *dev, *host;
    size_t bytes;
    int4 *table, *h_table;
    int tcap;
} gpu_border;

/* The particle kernel's parts of the clusters of more than GPU_CHUNK particles, one block
 * each (gpu_particles.cu, k_cluster_plan): per entry (mobile species m, cluster c at
 * m ncl + c) its first part's slot, or -1 when it runs whole, and a count of its parts done;
 * the parts after each entry's first, which spare blocks take in turn; each part's tile,
 * histogram, kinetic-energy sum and tile flag in its slot, until the entry's last part adds
 * them up. */
typedef struct {
    int *first, *done;            /* per entry (device) */
    int *queue;                   /* [0] next part to take, [1] parts in `parts`, [2] slots
                                     the last plan wanted, [3] entries it split */
    int2 *parts;                  /* (entry, part) of the parts after the first */
    long long *tiles;
    int *hist, *live;
    double *ke;
    int slots;                    /* slots allocated (tiles, hist, live, ke, parts) */
    int *h_want;                  /* pinned copy of queue[2] */
} gpu_split;

typedef struct gpu_state gpu_state;
struct gpu_state {
    int device;
    int nsm;
    size_t smem_optin;            /* largest dynamic shared memory a block may ask for */
    /* mesh: this rank's cells [i0, i1) x [j0, j1) of the nx x ny box, with guards (emf.h) */
    int nx, ny, stride, rows, off;
    int i0, i1, j0, j1;
    size_t size;
    long long *acc;               /* fixed-point current or charge sums (3 x size) */
    /* ranks (comm.h): this one, how many, the rank across each side (emf.nb), and the host
     * copy of the fields (emf) and the pinned mirror the exchanges stage through */
    int rank, ranks, nb[4];
    const emf *hf;
    void *h_halo;
    struct gpu_nccl *nccl;        /* NCCL's state when the ranks exchange through it, else
                                     NULL: staged (gpu_nccl.h) */
    int4 own;                     /* this rank's clusters: columns [x, y), rows [z, w) */
    int *h_hist;                  /* over several ranks: the migration histograms, with those
                                     around this rank's share (pinned; nsp x ncl x 9) */
    gpu_border border[DECK_MAX_SPECIES];
    float *store;                 /* e[3], b[3], j[3], rho, tmp, rho2, bn[3]: slots of pitch
                                     floats, size of them in use from where each array
                                     points (the window slides e, b and j on, bn by its swaps
                                     with b: gpu_window.cu) */
    size_t pitch;
    float *e[3], *b[3], *j[3], *rho, *tmp, *rho2;
    float *bn[3];                 /* B(n+1/2), made with B(n) (gpu_b_half) and swapped with
                                     b by gpu_fields */
    float *ext[6];                /* the external fields' arrays (extfield.h) of the components
                                     that vary in space, else NULL: copies of st->ext.a */
    float *h_ext;                 /* their pinned staging (gpu_ext_fields), and the event of */
    cudaEvent_t ext_done;         /* its last copy */
    double *avg;                  /* the averaged field dumps' sums (average.h: the arrays of
                                     st->avg_q, size entries each), or NULL */
    /* clusters */
    int ncx, ncy, ncl, wmax, hmax;
    int *x0, *y0;                 /* device copies of clusters.x0 / y0 */
    int tsz_max;                  /* floats per component of the largest tile */
    long long *tiles;             /* one 3-component fixed-point tile per cluster for each
                                     mobile species, ntiles sets of tile_set entries (the
                                     charge deposit uses the first) */
    int ntiles;
    size_t tile_set;
    int *tile_live;               /* per tile set and cluster: whether the particle kernel
                                     stored the tile (it deposited something; else it is zero
                                     and the sums skip it) */
    uint8_t *rest;                /* per tile set and cluster of an ionizing species: its
                                     particles are all neutral atoms at rest (k_rest) */
    int rest_valid;               /* rest is that of the particles as they are (set by
                                     gpu_rest_flags, cleared by what moves them) */
    /* current and charge tiles in shared memory */
    int tszp;                     /* padded component stride in shared memory */
    size_t smem_move, smem_rho;   /* dynamic shared memory of k_push_move and k_rho */
    float scale;                  /* fixed-point scale of the tiles (species_acc_scale) */
    /* reductions and flags */
    double *partial, *h_partial;  /* ncl * max(3, nsp) doubles (device / pinned host) */
    int *order;                   /* the particle kernel's blocks (k_cluster_order) */
    long order_age;               /* particle steps so far (k_cluster_order: ORDER_EVERY) */
    gpu_split split;              /* the parts of heavy clusters (gpu_particles.cu) */
    int *flags, *h_flags;         /* per species s, at 4 s: [0] overflowing clusters, [1] max
                                     leavers, [2] errors, [3] particles dropped */
    cudaEvent_t flags_ready;      /* the flags (and room) of the last prepare are in h_flags */
    cudaEvent_t ion_ready;        /* the ionization's tables of the step are in h_ion_tab */
    int prepared;                 /* what gpu_sort_prepare ran this step (gpu_sort.cu) */
    int spec_now;                 /* the list capacity of the passes it launched (0: none) */
    int spec_lcap;                /* list capacity of the passes launched before the flags are
                                     read (decks with drops); 0 until the first such sort */
    int *room, *h_room;           /* per species s, at s ncy: cap - need of the clusters of the
                                     injection column (device / pinned host) */
    int room_valid;               /* h_room holds the last sort's room, no rearrangement since */
    cudaEvent_t stage_done;       /* the last injection's upload (on up_stream) is done */
    cudaEvent_t stage_read;       /* k_inject has read it (main stream) */
    cudaStream_t up_stream;       /* the injections' uploads, beside the sort's passes */
    int *lists;                   /* sort lists when they do not fit in shared memory */
    size_t lists_n;
    int *heavy;                   /* the sort passes' heavy pairs (gpu_sort.cu): two lists of
                                     heavy_n entries, the main stream's and the border's */
    int heavy_n;
    int nsp;
    gpu_species sp[DECK_MAX_SPECIES];
    /* non-periodic field sides, lasers, walls and the moving window (gpu_fbnd.cu,
     * gpu_walls.cu, gpu_window.cu); all unused by a periodic deck */
    int px, py;                   /* the box is periodic along x, y */
    int nlayers;
    gpu_layer layer[4];
    gpu_bound_blocks bound[GPU_BOUND_SLOTS]; /* the boundary launches (gpu_fbnd.cu) */
    float *mur_old[4];            /* per Mur side: its 4 lines of old values (pml.h) */
    int *cx_of, *cy_of;           /* device copies of clusters.cx_of / cy_of */
    int *spare_start;             /* the segment starts a global rearrangement makes */
    int2 *chunk;                  /* its copy blocks (relayout_chunks), room for nchunk */
    size_t nchunk;
    int *h_relay;                 /* pinned: a rearrangement's tables on the host (ncl x 13:
                                     count, need, hist x 9, start, cap; gpu_sort.cu) */
    int2 *h_chunk;                /* pinned: the copy blocks, room for nchunk */
    int *scratch;                 /* the collision index of overfull clusters (gpu_collide.cu) */
    int nrim, *rim;               /* this rank's clusters on the box's edges (device): the
                                     drops' (gpu_walls.cu) */
    size_t scratch_n;
    long shift;                   /* cells the window has moved (fbnd.shift): laser sources */
    int j_behind;                 /* window shifts J has not taken (one rank: nothing but the
                                     copies and probes reads it before the next current
                                     overwrites it, and they shift it first) */
    long psi_step;                /* field step of the last B psi update (fbnd.psi_step) */
    int window;                   /* the deck has a moving window (no early sort prepare) */
    void *stage, *h_stage;        /* injected particles before they join their clusters
                                     (device, pinned host) */
    size_t stage_n;
    /* streams: `stream` is where work is queued now, main_stream but while the field phase
     * is queued on field_stream (gpu_fields_begin .. gpu_fields_end) or the sort's early
     * clusters' push and their histogram halo on border_stream (gpu_particles,
     * gpu_sort_halo_early), and the current's and E's updates of the cells that J's fold
     * does not reach on inner_stream over several ranks (tiles_current, gpu_fields) */
    cudaStream_t stream, main_stream, field_stream, border_stream, inner_stream;
    int overlap;                  /* the field phase runs on field_stream beside the sort */
    int fields_pending;           /* field_stream has work the main stream has not joined */
    int fbnd;                     /* the box has field boundaries (st->f->fb) */
    cudaEvent_t pushed, fields_done; /* main stream -> field stream, and back */
    /* field -> inner_stream: the push's tiles (tiles_ready); inner -> field: J's cells that no
     * fold reaches (j_inner, tiles_current) and E's update there (e_inner, gpu_fields) */
    cudaEvent_t tiles_ready, j_inner, e_inner;
    /* field -> inner: E(n+1) with its boundary terms made (e_made); the energy balance's
     * sums -> the stream that changes E next (flows_done): those before E's update
     * (gpu_particles), those of E(n+1) beside E's guard fill (gpu_fields) */
    cudaEvent_t e_made, flows_done;
    /* field -> inner: the cells of E(n+1) final, its guards' exchange queued next (e_cells);
     * inner -> field: B's half steps there done (b_inner): gpu_b_half's split */
    cudaEvent_t e_cells, b_inner;
    /* NCCL ranks: the clusters whose histograms the neighbours need (nborder entries at
     * border_entries, device) are pushed on border_stream beside the main stream's push of
     * the rest (not on a window shift's step with an immobile or ionizing species), their
     * walls run, and their histograms travel there once pushed (border_ready: main -> border
     * stream; border_pushed, border_done: back) */
    int *border_entries, nborder;
    int border_axes;              /* bit 0: the border columns, bit 1: the border rows */
    cudaEvent_t border_ready, border_pushed, border_done;
    int halo_early;               /* this step's histogram halo went on border_stream */
    /* J's fold along x went there too: the border clusters' guard sums sent while the rest
     * is pushed (fold_sent: border -> field stream), added by k_tiles_frame or unpacked by
     * gpu_acc_finish (gpu_nccl_halo) */
    int fold_x_early;
    cudaEvent_t fold_sent;
    /* phase timers: events recorded in the stream, read once the stream has passed them */
    cudaEvent_t ev[GPU_EVENTS];
    int nev, npend;
    int pend_a[GPU_EVENTS / 2], pend_b[GPU_EVENTS / 2], pend_phase[GPU_EVENTS / 2];
    int pend_within[GPU_EVENTS / 2]; /* an exchange's: the tic of the phase it interrupts */
    int open;                     /* the tic of the phase being timed, or -1 */
    /* switches from the environment */
    int sync_each;                /* EMPIC_GPU_SYNC=1: synchronise after every kernel */
    int debug;                    /* EMPIC_GPU_CHECK=1: verify the state after each phase
                                     (gpu_debug.cu) */
    struct gpu_trace *trace;      /* EMPIC_GPU_TRACE: the time line's marks (gpu_trace.cu) */
    long long dropped[DECK_MAX_SPECIES]; /* particles the last sort dropped or sent to other
                                            ranks less received (for gpu_debug.cu) */
    probe_req *probe_req;         /* field probes: the requests and their values (device; */
    float *probe_out;             /* probe_cap entries each, grown when a call needs more) */
    int probe_cap;
    size_t bytes;                 /* device bytes allocated */
    char *xfer[2];                /* the particle transfers' pinned halves (gpu_core.cu), */
    cudaEvent_t xfer_done[2];     /* each one's last copy */
    void *pinned;                 /* pinned host buffer of the compacted dumps (gpu_diag.cu) */
    void *trk;                    /* device buffer of the compacted dumps, kept between them */
    size_t trk_n;
    /* field ionization (gpu_ionize.cu): per-cluster tables (device, pinned host: electrons,
     * the electron species' counts and capacities, sums of w z and w) and the ions'
     * increments, grown on demand */
    char *ion_tab, *h_ion_tab;
    size_t ion_tab_n;
    uint8_t *ion_dz;
    size_t ion_dz_n;
    struct gpu_ionq *ionq;        /* the draws queued by gpu_ionize that gpu_ionize_end emits */
    int ion_open;                 /* gpu_ionize_end is due */
    int pinned_fields;            /* the host field arrays (emf.store) are page-locked */
    size_t pinned_n;
    /* the energy balance (ebal.h): device copies of st->flow (nterm x nslot) and st->lost
     * (nsp x ncl) in one array, bal_n doubles; lost = bal + nterm nslot */
    double *bal, *lost;
    size_t bal_n;
};

/* A species' particle arrays as the kernels that move particles between slots see them. */
typedef struct {
    float2 *xy, *uxy, *uzw;
    uint32_t *cell;
    uint8_t *code;
    void *id;                     /* tracking ids (gpu_species.id, idb), or NULL */
    int idb;
    uint8_t *z;                   /* charge states (gpu_species.z), or NULL */
} gpu_parts;

__host__ __device__ static inline gpu_parts gpu_parts_of(const gpu_species *d)
{
    return gpu_parts{d->xy, d->uxy, d->uzw, d->cell, d->code, d->id, d->idb, d->z};
}

/* The tracking id of slot i (0: not tracked, or an untracked species). */
__device__ __forceinline__ unsigned long long gpu_parts_id(const gpu_parts &a, int i)
{
    return a.idb == 8   ? ((const unsigned long long *)a.id)[i]
           : a.idb == 4 ? (unsigned long long)((const uint32_t *)a.id)[i]
                        : 0ull;
}

/* One particle's fields in registers. */
typedef struct {
    float2 xy, uxy, uzw;
    uint32_t cell;
    unsigned code;
    unsigned long long id;
    unsigned z;                   /* charge state (an ionizing species), else 0 */
} gpu_part;

/* Read slot i: every load is issued before the caller stores anything (the arrays might
 * alias as far as the compiler knows, so a field-by-field copy waits for each load in turn). */
__device__ __forceinline__ gpu_part gpu_parts_get(const gpu_parts &a, int i)
{
    gpu_part q;
    q.xy = a.xy[i];
    q.uxy = a.uxy[i];
    q.uzw = a.uzw[i];
    q.cell = a.cell[i];
    q.code = a.code[i];
    q.id = gpu_parts_id(a, i);
    q.z = a.z ? a.z[i] : 0u;
    return q;
}

__device__ __forceinline__ void gpu_parts_put(const gpu_parts &a, int i, const gpu_part &q)
{
    a.xy[i] = q.xy;
    a.uxy[i] = q.uxy;
    a.uzw[i] = q.uzw;
    a.cell[i] = q.cell;
    a.code[i] = (uint8_t)q.code;
    if (a.idb == 8)
        ((unsigned long long *)a.id)[i] = q.id;
    else if (a.idb == 4)
        ((uint32_t *)a.id)[i] = (uint32_t)q.id;
    if (a.z)
        a.z[i] = (uint8_t)q.z;
}

/* The pairs of slots p and p + 1 (p even): (a0, b0), (a1, b1), in one 16-byte load or
 * store. */
__device__ __forceinline__ void pairs_load2(const float2 *v, int p, float &a0, float &b0,
                                            float &a1, float &b1)
{
    const float4 t = *(const float4 *)(v + p);
    a0 = t.x, b0 = t.y, a1 = t.z, b1 = t.w;
}

__device__ __forceinline__ void pairs_store2(float2 *v, int p, float a0, float b0, float a1,
                                             float b1)
{
    *(float4 *)(v + p) = make_float4(a0, b0, a1, b1);
}

/* Copy the particle in slot src to slot dst (wall drops). */
__device__ __forceinline__ void gpu_parts_copy(const gpu_parts &a, int dst, int src)
{
    gpu_parts_put(a, dst, gpu_parts_get(a, src));
}

/* Sum of v over the block, in a fixed order (warp shuffles, then the warps' sums in order):
 * the same double for the same values whatever the scheduling; the sum in thread 0. Every
 * thread of the block calls it; blockDim a multiple of 32, at most 1024; sh: 32 doubles of
 * shared memory. */
__device__ __forceinline__ double gpu_block_sum(double v, double *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        sh[threadIdx.x >> 5] = v;
    __syncthreads();
    double s = 0.0;
    if (threadIdx.x == 0)
        for (int w = 0; w < (int)(blockDim.x >> 5); w++)
            s += sh[w];
    return s;
}

/* Block-wide exclusive prefix sum of v and the block's total (an int, or four 16-bit counts
 * packed in one 64-bit word); every thread of the block calls it; warp_tot: one T per warp
 * of shared memory. */
template <typename T>
__device__ __forceinline__ T gpu_block_scan(T v, T *warp_tot, T *total)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    T inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        const T t = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o)
            inc += t;
    }
    if (lane == 31)
        warp_tot[wid] = inc;
    __syncthreads();
    T before = 0, all = 0;
    for (int w = 0; w < nw; w++) {
        before += w < wid ? warp_tot[w] : (T)0;
        all += warp_tot[w];
    }
    __syncthreads(); /* warp_tot read by all before the next scan writes it */
    *total = all;
    return before + inc - v;
}

/* Whether (x, y) lies in box b: x in [b.x, b.y), y in [b.z, b.w) (this rank's clusters or
 * cells, as the int4 boxes of gpu_state). */
__host__ __device__ __forceinline__ bool in_box(int4 b, int x, int y)
{
    return x >= b.x && x < b.y && y >= b.z && y < b.w;
}

/* CUDA errors: report the failed call or kernel with file and line, then exit. */
void gpu_cuda_ok(cudaError_t e, const char *what, const char *file, int line);
void gpu_launched(gpu_state *g, const char *kernel, const char *file, int line);
#define GPU_CK(call) gpu_cuda_ok((call), #call, __FILE__, __LINE__)
#define GPU_LAUNCHED(g, name) gpu_launched((g), (name), __FILE__, __LINE__)

/* Device allocation that reports the bytes and what they are for on failure. */
void *gpu_malloc(gpu_state *g, size_t bytes, const char *what);
/* The same in g->stream from the device's memory pool, for the particle arrays, which a
 * global rearrangement may replace: gpu_free_async frees them in the stream, where cudaFree
 * waits for every stream (over NCCL ranks, for transfers that wait for the other ranks). */
void *gpu_malloc_async(gpu_state *g, size_t bytes, const char *what);
void gpu_free_async(gpu_state *g, void *p);

/* Host arrays a, b of n values from the device's pairs p[k] = (a[k], b[k]) (through a host
 * buffer: gpu_debug.cu's copies). */
void gpu_get_pairs(float *a, float *b, const float2 *p, size_t n); /* a or b NULL: not kept */

/* Phase timers. gpu_tic records a start event; gpu_toc the stop event of `phase`; gpu_tictoc
 * the stop event of `phase` that also starts the next phase (returned as its tic: one event
 * less for phases that follow each other on the stream). gpu_harvest synchronises the
 * stream and adds every finished interval to st->phase_s. */
int gpu_tic(gpu_state *g, pic_state *st);
void gpu_toc(gpu_state *g, int tic, int phase);
int gpu_tictoc(gpu_state *g, pic_state *st, int tic, int phase);
void gpu_harvest(gpu_state *g, pic_state *st);
/* An exchange with the neighbour ranks, timed as the phase "exchange" and taken out of the
 * phase it happens in: gpu_exchange_begin's result goes to gpu_exchange_end (-1: no room
 * left in the event pool, the exchange stays in its phase). */
int gpu_exchange_begin(gpu_state *g);
void gpu_exchange_end(gpu_state *g, int begin);
/* The field phase beside the sort (gpu_core.cu). From the particle kernel's tiles to the
 * next step's B(n+1) and its guards, the field work (gpu_fields, the window's field shift,
 * gpu_b_half) reads and writes the fields, J, the current sums and the tiles, none of which
 * the sort, the injection and the collisions touch, and they read and write the particles
 * alone: queued on a stream of its own, the field phase and its halo exchanges run while they
 * run. gpu_fields_begin sends queueing to field_stream (the first time after a join, behind
 * everything queued so far on the main stream); gpu_fields_end returns it to the main stream;
 * gpu_fields_join makes the main stream wait for the field work queued: called by everything
 * on the main stream that reads the fields or shares their scratch arrays (ionization, the
 * charge density and field diagnostics, fetches, close).
 * gpu_fields_continue queues on field_stream behind its own work alone: B's half step at a
 * step's start, which writes B, read on the main stream by nothing before the push, which
 * joins (ionization reads E), so that it runs beside the last step's ionization and
 * collisions. No-ops when g->overlap is 0 (staged exchanges). */
void gpu_fields_begin(gpu_state *g);
void gpu_fields_continue(gpu_state *g);
void gpu_fields_end(gpu_state *g);
void gpu_fields_join(gpu_state *g);

/* gpu_state.rest of the particles as they are, queued (gpu_particles.cu); after the
 * ionization's charge draws, which alone change the charge states, it runs while the host
 * reads their counts, and the push that follows needs no launch of its own. */
void gpu_rest_flags(gpu_state *g);

/* Launch geometry helpers. */
/* Species s's flags of clusters holding neutral atoms at rest only (gpu_state.rest: one row
 * per mobile species, in species order, as the tile sets), or NULL (no charge states). */
static inline uint8_t *gpu_rest_of(const gpu_state *g, int s)
{
    int m = 0;
    for (int k = 0; k < s; k++)
        m += g->sp[k].mobile;
    return g->sp[s].z && g->sp[s].mobile ? g->rest + (size_t)m * g->ncl : NULL;
}

static inline unsigned gpu_blocks(size_t n, int threads)
{
    return (unsigned)((n + (size_t)threads - 1) / (size_t)threads);
}

/* The operations of the backend table (backend.h, which says what each does; filled in
 * gpu_backend.cu), in the files of their phase; ctx is the gpu_state. */
int gpu_open(pic_state *st, void **ctx);                                  /* gpu_backend.cu */
void gpu_close(void *ctx, pic_state *st);
void gpu_rho(void *ctx, pic_state *st, float *per);
void gpu_field_diag(void *ctx, pic_state *st, double *energy_e, double *energy_b,
                    double *fbal, double *gauss);
void gpu_flows(void *ctx, pic_state *st);
void gpu_fetch_fields(void *ctx, pic_state *st, float *per);
void gpu_ext_fields(void *ctx, pic_state *st);
void gpu_avg_add(void *ctx, pic_state *st, int first);
void gpu_avg_fetch(void *ctx, pic_state *st);
void gpu_finish(void *ctx, pic_state *st);
void gpu_fetch_particles(void *ctx, pic_state *st);                       /* gpu_core.cu */
void gpu_counts(void *ctx, pic_state *st, int *count);
int gpu_fits(void *ctx, const pic_state *st, size_t size, const size_t *alloc,
             const long long *np);
double gpu_bandwidth(void *ctx);
double gpu_particle_bytes(void *ctx, const pic_state *st);
void gpu_b_half(void *ctx, pic_state *st);                                /* gpu_fields.cu */
void gpu_fields(void *ctx, pic_state *st);
void gpu_particles(void *ctx, pic_state *st, int want_ke, double *kinetic); /* gpu_particles.cu */
void gpu_sort(void *ctx, pic_state *st, int window, long long *dropped);   /* gpu_sort.cu */
void gpu_collide(void *ctx, pic_state *st, const struct collide_par *p);  /* gpu_collide.cu */
void gpu_window_shift(void *ctx, pic_state *st);                          /* gpu_window.cu */
void gpu_inject(void *ctx, pic_state *st, species *col, const int *add);
int gpu_ionize(void *ctx, pic_state *st, long long step, int sums, ionize_stats *out); /* gpu_ionize.cu */
void gpu_ionize_end(void *ctx, pic_state *st, ionize_stats *out);
species *gpu_fetch_tracked(void *ctx, pic_state *st, species *out);       /* gpu_diag.cu */
void gpu_release_tracked(void *ctx, species *out);
void gpu_phasespace(void *ctx, pic_state *st, int s, const ps_grid *g, double *h);
int gpu_phasespace_extent(void *ctx, pic_state *st, int s, const ps_grid *g, int axis,
                          int positive, double mm[2]);

/* The steps of gpu_open and gpu_close (gpu_core.cu). gpu_available: 1 when a usable CUDA
 * device exists (its name into name), else 0 (the reason into name). gpu_state_open: the
 * state with this rank's device (its name into name), the environment switches and the
 * geometry. gpu_memory_fits: the tile sets planned; 0 when the deck fits in the device's free
 * memory, else -1 after reporting. gpu_memory_open: stream, fields, tables and every species
 * uploaded; gpu_memory_close frees them and the state. */
int gpu_available(char *name, size_t len);
gpu_state *gpu_state_open(const pic_state *st, char *name, size_t len);
int gpu_memory_fits(gpu_state *g, const pic_state *st, const char *name);
void gpu_memory_open(gpu_state *g, pic_state *st);
void gpu_memory_close(gpu_state *g, pic_state *st);

/* Fields (gpu_fields.cu). Guards of up to three arrays filled (from the neighbour ranks
 * too); the fixed-point sums g->acc (ncomp components) finished into d0.. (emf_acc_finish:
 * guard deposits folded into their cells, here or on the neighbours, one rounding). */
void gpu_guard_fill(gpu_state *g, float *a0, float *a1, float *a2);
void gpu_guard_fill_n(gpu_state *g, float *const a[], int n); /* n <= GPU_HALO_MAX arrays */
void gpu_acc_finish(gpu_state *g, int ncomp, float *d0, float *d1, float *d2, int frame);
/* Whether element (c, r) of a rank's w x h box with guards lies in acc's frame: a guard, or a
 * cell within G of a side, which a fold across that side adds into. With `frame`,
 * gpu_acc_finish rounds these only: k_tiles_mesh wrote the other cells. */
__host__ __device__ __forceinline__ bool acc_frame(int c, int r, int w, int h)
{
    return c < 2 * EMF_GUARD || c >= w || r < 2 * EMF_GUARD || r >= h;
}
/* Element t of acc's frame (acc_frame) as (column, row): the 2G rows at the top, the 4G
 * elements of each row between (2G columns at each end), the 2G rows at the bottom; a box
 * less than 4G cells wide gives some columns twice (the same value written twice). */
__device__ __forceinline__ int2 frame_element(size_t t, int s, int w, int h)
{
    const int G = EMF_GUARD, mid = h > 2 * G ? h - 2 * G : 0;
    const size_t top = (size_t)2 * G * s, between = (size_t)mid * 4 * G;
    if (t < top || mid == 0)
        return make_int2((int)(t % s), (int)(t / s));
    if (t < top + between) {
        const int q = (int)(t - top), k = q % (4 * G);
        return make_int2(k < 2 * G ? k : w + k - 2 * G, 2 * G + q / (4 * G));
    }
    const size_t q = t - top - between;
    return make_int2((int)(q % s), 2 * G + mid + (int)(q / s));
}

/* frame_element's count (2G rows at the top and at the bottom, 4G elements of each row
 * between), or 0 for a box of at most 2G rows (all of it frame: taken whole). */
static inline size_t acc_frame_n(const gpu_state *g)
{
    const int G = EMF_GUARD, h = g->j1 - g->j0, mid = h > 2 * G ? h - 2 * G : 0;
    return mid ? (size_t)4 * G * (g->stride + mid) : 0;
}

/* The elements of a pass over acc: with `frame`, acc's frame where the box has one (*framed
 * = 1), else the whole mesh. */
static inline size_t acc_elements(const gpu_state *g, int frame, int *framed)
{
    const size_t nf = frame ? acc_frame_n(g) : 0;
    *framed = nf > 0;
    return nf ? nf : g->size;
}
void gpu_fields_filter(gpu_state *g, const pic_state *st, float *a0, float *a1, float *a2);
/* Field energies and max |div E - rho + rho_bg| with g->rho as deposited (gpu_field_diag). */
void gpu_fields_energy(gpu_state *g, pic_state *st, double *energy_e, double *energy_b,
                       double *fbal, double *gauss);
/* Several ranks (gpu_halo.cu): the guard fill (fold = 0: float arrays) or the fold of the
 * fixed-point sums (fold = 1) of ncomp arrays a[] with the neighbour ranks, staged through
 * the pinned host mirror with emf.c's own exchanges, x then y; an axis this rank holds alone
 * is done by self(g, a, ncomp, axis) on the device, in its turn. gpu_axis_kind: 1 for such
 * an axis, 0 for one with other ranks (or one box edge), -1 for box edges on both sides. */
static inline int gpu_axis_kind(const gpu_state *g, int axis)
{
    const int lo = g->nb[2 * axis], hi = g->nb[2 * axis + 1];
    if (lo == g->rank && hi == g->rank)
        return 1;
    return lo < 0 && hi < 0 ? -1 : 0;
}
void gpu_halo(gpu_state *g, void *const a[], int ncomp, int fold,
              void (*self)(gpu_state *, void *const[], int, int));
/* The largest of n per-cluster values, at least `least` (gpu_species.cap_max). */
static inline int gpu_most(const int *v, size_t n, int least)
{
    int most = least;
    for (size_t c = 0; c < n; c++)
        most = v[c] > most ? v[c] : most;
    return most;
}
/* Particles (gpu_particles.cu). */
void gpu_particles_setup(gpu_state *g, const pic_state *st);
/* Whether the border clusters go first (gpu_state.border_entries), once the transport is
 * set up; their stream and events. cluster_border: whether cluster c (of a grid ncx wide) is
 * one of this rank's (own: gpu_state's) border clusters, those whose histograms the
 * neighbours need (along the axes of gpu_state.border_axes). */
void gpu_particles_border_setup(gpu_state *g);
__host__ __device__ __forceinline__ bool cluster_border(int4 own, int axes, int ncx, int c)
{
    const int cx = c % ncx, cy = c / ncx;
    return in_box(own, cx, cy) && (((axes & 1) && (cx == own.x || cx == own.y - 1)) ||
                                   ((axes & 2) && (cy == own.z || cy == own.w - 1)));
}
/* Charge density of species s (all when s < 0) into dst: deposit, fixed-point sums
 * finished (gpu_acc_finish). */
void gpu_particles_rho(gpu_state *g, int s, float *dst);
/* Right after the particle kernels (the end of gpu_particles): the sort's bookkeeping
 * (overflow, leavers per cluster), so that the host's wait for its result overlaps the field
 * kernels; with drops also the drops and the passes that need no read-back, queued before
 * the field kernels (on a window shift's step after the immobile species' shift). */
void gpu_sort_prepare(gpu_state *g, pic_state *st);
/* After the border clusters' push on border_stream (gpu_state.border_entries): their
 * histograms' halo and the border counts there; back to the main stream (gpu_border_leave). */
void gpu_sort_halo_early(gpu_state *g, const pic_state *st);
/* Work queued on border_stream from here, after what the main stream has queued
 * (border_ready); gpu_border_leave records border_done after it and queues on the main
 * stream again (gpu_core.cu). */
void gpu_border_enter(gpu_state *g);
void gpu_border_leave(gpu_state *g);

/* Debug-only hooks, environment switches read by gpu_open: EMPIC_GPU_SYNC=1 synchronises
 * after every kernel (in gpu_launched); EMPIC_GPU_CHECK=1 (gpu_debug.cu) copies the device
 * state back at the points below and verifies it on the host (slow). gpu_debug is the one
 * call the phases make: nothing unless EMPIC_GPU_CHECK is set. */
enum gpu_debug_point {
    DBG_BEFORE_MOVE, /* sorted clusters; keep particles and fields to verify the push */
    DBG_AFTER_MOVE,  /* the push recomputed on the host, fields finite, codes and histograms */
    DBG_B_HALF,      /* fields finite */
    DBG_FIELDS,
    DBG_RHO,
    DBG_AFTER_SORT   /* sorted clusters, counts less the particles dropped */
};
void gpu_debug_at(gpu_state *g, const pic_state *st, enum gpu_debug_point at);
static inline void gpu_debug(gpu_state *g, const pic_state *st, enum gpu_debug_point at)
{
    if (g->debug)
        gpu_debug_at(g, st, at);
}
/* EMPIC_GPU_TRACE=PREFIX (gpu_trace.cu): a mark after each kernel launch (gpu_launched),
 * NCCL group and host wait into PREFIX.rankN.csv; nothing when unset. gpu_trace_wait: a host
 * wait that began at `since` (gpu_trace_now's clock) and ends now; gpu_trace_host: the
 * host's work since the last mark, marked as such a wait. */
typedef struct gpu_trace gpu_trace;
void gpu_trace_open(gpu_state *g);
void gpu_trace_mark(gpu_state *g, const char *what);
double gpu_trace_now(const gpu_state *g);
void gpu_trace_wait(gpu_state *g, const char *what, double since);
void gpu_trace_host(gpu_state *g, const char *what);
void gpu_trace_step(gpu_state *g, long step);
void gpu_trace_close(gpu_state *g);
/* Field boundaries (gpu_fbnd.cu, the twin of cpu_fbnd.c): setup and free, the hooks of the
 * Yee phases (as fbnd_b, fbnd_e_save, fbnd_e) and the fetch of their state for checkpoints. */
void gpu_fbnd_setup(gpu_state *g, const pic_state *st);
void gpu_fbnd_free(gpu_state *g);
/* After B's two half steps in one pass over the cells of box (global columns [x, y), rows
 * [z, w)): the boundary terms of B(n) (the layers' psi updated when upd), B(n+1/2) made
 * again from B(n) with them (hx, hy the half step's), and its terms in bn; after the E step:
 * Mur's save before it, the terms after it. */
void gpu_fbnd_b(gpu_state *g, const pic_state *st, int4 box, int slot, int upd, float hx,
                float hy);
void gpu_fbnd_e_save(gpu_state *g, const pic_state *st);
void gpu_fbnd_e(gpu_state *g, const pic_state *st);
void gpu_fbnd_fetch(gpu_state *g, pic_state *st);
/* The energy balance's field sums (the CPU's fbnd_flows: after = 0 before the E step, 1
 * after it and its boundaries) into g->bal, one thread per slot, on the device, with bh the
 * arrays of B(n+1/2). */
void gpu_fbnd_flows(gpu_state *g, const pic_state *st, int after, float *const bh[3]);
/* Particle walls (gpu_walls.cu, the twin of cpu_walls.c): setup (after
 * gpu_particles_border_setup) and free; the wall fix-ups of species which[0 .. n) after their
 * move (which[k]'s current in tile set k: the mobile species in order; before the colour
 * write-back) on all their edge clusters, the border clusters' or the rest, one launch; the
 * drop of the marked particles of every species with drop[s] set before their sort, one
 * launch (adds the number species s dropped to its flags[3]). */
void gpu_walls_setup(gpu_state *g, const pic_state *st);
void gpu_walls_free(gpu_state *g);
enum { WALLS_ALL, WALLS_BORDER, WALLS_REST }; /* gpu_walls_clusters' edge clusters */
void gpu_walls_clusters(gpu_state *g, const pic_state *st, int n, const int *which, int part);
void gpu_walls_drop(gpu_state *g, const int *drop, int window);
/* Sort (gpu_sort.cu): re-lay species s's segments for clusters that hold counts[c]
 * particles (NULL: their counts now) and need room for need[c] during a sort
 * (species_segments); stop on the error flag the sort passes raise (h_flags as last read
 * back). */
void gpu_relayout(gpu_state *g, pic_state *st, int s, const int *counts, const int *need,
                  const int *hist);
void gpu_sort_errors(const gpu_state *g, const pic_state *st, int s);
/* The sort's flags [0], [1] and [3] of every species zeroed for the next sort ([2], the
 * error flag, stays): entry t by thread t < 4 DECK_MAX_SPECIES of the particle kernel's first
 * block, or by gpu_sort_flags_clear's launch where no particle kernel runs. */
__device__ __forceinline__ void gpu_flags_clear(int *flags, unsigned t)
{
    if (t < 4 * DECK_MAX_SPECIES && t % 4 != 2)
        flags[t] = 0;
}
void gpu_sort_flags_clear(gpu_state *g);
void gpu_diag_free(gpu_state *g);
/* The moving window (gpu_window.cu): its injection staging freed; J shifted by the shifts it
 * missed (j_behind) before it is read; after the push of a window shift's step the shift of
 * the particles the particle kernel and the walls do not shift (immobile species, atoms at
 * rest off the walls: gpu_window_particles), whether there may be such (after_push). */
void gpu_window_free(gpu_state *g);
void gpu_window_j(gpu_state *g);
void gpu_window_particles(gpu_state *g, const pic_state *st);
int gpu_window_after_push(const gpu_state *g);

/* The moving window's shift of the n particles from slot b of a cluster whose first cell
 * column is xlo (cluster.h's window_shift_particle), its 9-bin histogram counted into sh (9
 * ints of shared memory, zeroed before). A thread takes GPU_VEC consecutive particles with
 * one 16-byte load of their cells and one 4-byte load of their codes (segments start on
 * 32-slot multiples); a warp's bins counted by ballots (nearly every particle lands in the
 * same bin: one shared atomic per warp and bin). */
__device__ __forceinline__ void window_shift_slots(uint32_t *cell, uint8_t *code, int b, int n,
                                                   int xlo, int *sh)
{
    const int lane = threadIdx.x & 31;
    for (int base = 0; base < n; base += GPU_VEC * blockDim.x) { /* the same trips per warp */
        const int k = base + GPU_VEC * threadIdx.x;
        const bool whole = k + GPU_VEC <= n; /* 16- and 4-byte accesses, else one by one */
        uint32_t cv[GPU_VEC] = {0, 0, 0, 0};
        unsigned kv[GPU_VEC] = {0, 0, 0, 0};
        int bin[GPU_VEC];
        if (whole) {
            const uint4 c4 = *(const uint4 *)(cell + b + k);
            const uchar4 k4 = *(const uchar4 *)(code + b + k);
            cv[0] = c4.x, cv[1] = c4.y, cv[2] = c4.z, cv[3] = c4.w;
            kv[0] = k4.x, kv[1] = k4.y, kv[2] = k4.z, kv[3] = k4.w;
        } else {
#pragma unroll
            for (int q = 0; q < GPU_VEC; q++)
                if (k + q < n)
                    cv[q] = cell[b + k + q], kv[q] = code[b + k + q];
        }
#pragma unroll
        for (int q = 0; q < GPU_VEC; q++) {
            bin[q] = -1;
            if (whole || k + q < n) {
                kv[q] = window_shift_particle(&cv[q], kv[q], xlo);
                bin[q] = mig_bin_of_code(kv[q]);
            }
        }
        if (whole) {
            *(uint4 *)(cell + b + k) = make_uint4(cv[0], cv[1], cv[2], cv[3]);
            *(uchar4 *)(code + b + k) = make_uchar4(kv[0], kv[1], kv[2], kv[3]);
        } else {
#pragma unroll
            for (int q = 0; q < GPU_VEC; q++)
                if (k + q < n)
                    cell[b + k + q] = cv[q], code[b + k + q] = (uint8_t)kv[q];
        }
#pragma unroll
        for (int q = 0; q < 9; q++) {
            int nq = 0;
#pragma unroll
            for (int v = 0; v < GPU_VEC; v++)
                nq += __popc(__ballot_sync(0xffffffffu, bin[v] == q));
            if (lane == 0 && nq)
                atomicAdd(&sh[q], nq);
        }
    }
}

/* The moving window's shift of a cluster's particles where no other pass has them in
 * registers (immobile species, atoms at rest, the walls' clusters; the particle kernel shifts
 * the others as it stores them): its n particles from slot b, its first cell column xlo. In
 * the back column (back: not atoms at rest, which take nothing away), before the shift, the
 * energy (ebal.h) of the particles it drops added to *lost: each thread's in order, then a
 * fixed-order sum over the block; then the particles shifted (window_shift_slots) and the
 * cluster's 9-bin histogram written to hist. Every thread of the block calls it. */
__device__ __forceinline__ void gpu_window_cluster(uint32_t *cell, uint8_t *code,
                                                   const float2 *uxy, const float2 *uzw, int b,
                                                   int n, int xlo, bool back, double *lost,
                                                   int *hist)
{
    __shared__ int bins[9];
    __shared__ double red[32];
    if (threadIdx.x < 9)
        bins[threadIdx.x] = 0;
    if (back) { /* the same in the block */
        double gone = 0.0;
#pragma unroll 4
        for (int p = b + threadIdx.x; p < b + n; p += blockDim.x)
            if (ebal_window_drops(cell_i(cell[p]), code[p]))
                gone += ebal_particle(uzw[p].y, uxy[p].x, uxy[p].y, uzw[p].x);
        gone = gpu_block_sum(gone, red);
        if (threadIdx.x == 0)
            *lost += gone;
    }
    __syncthreads();
    window_shift_slots(cell, code, b, n, xlo, bins);
    __syncthreads();
    if (threadIdx.x < 9)
        hist[threadIdx.x] = bins[threadIdx.x];
}

#endif
