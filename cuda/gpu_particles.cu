/* gpu_particles.cu - push, move and charge-conserving deposit on the device (the twin of
 * src/cpu/cpu_particles.c and cpu_deposit.c), and the charge density; one thread block per
 * cluster of every mobile species in one launch (heaviest clusters first: k_cluster_order), a
 * cluster that holds more than a block's share of the particles in parts of GPU_CHUNK, one
 * block each (k_cluster_plan: a dense foil's few clusters would otherwise leave most
 * multiprocessors idle), and one pass over its particles, with the CPU's per-particle functions
 * (particle.h, cluster.h): the kernel stages its cluster's E and B (plus ghosts) in shared
 * memory, gathers them (gather_yee), applies boris_push, moves the particle (particle_move's
 * rule: move_end, kong_split3, move_cell, then move_piece for each piece it deposits) into a
 * shared-memory tile of the cluster's current (cluster_tile). The tile holds 64-bit fixed-point
 * integers (particle.h's fixed_of, scale from the deck: species_acc_scale), added with native
 * 32-bit integer atomics: a sum that does not depend on the order of the adds, so the current
 * is the same in every run. Threads take 4 particles, two pairs of neighbouring slots read with
 * 16-byte loads (group_off), so the lanes of a warp work in several cells at once. The kernel
 * runs GPU_MOVE_THREADS (512) threads per block, 2 blocks per multiprocessor, and keeps each
 * entry of its tile as two 32-bit words in separate arrays (low words of neighbouring entries
 * in neighbouring banks), each entry starting at 2^31 so that its high word seldom changes,
 * joined into 64-bit entries as the tile is stored; a particle with no vz adds nothing to Jz
 * (cold plasmas, and 2D runs with an in-plane polarised laser, where uz stays 0). The charge
 * kernel adds into one 64-bit tile (private copies per group of lanes measured no faster with
 * integer atomics). Each block writes its tile, still fixed point, to a per-cluster buffer (one
 * set per mobile species); one kernel then sums, for each mesh element, the tiles that cover it
 * (integers: exact, in any order, so the split of the box among ranks changes nothing), and
 * gpu_acc_finish folds the guard deposits and rounds each element once to float (the CPU's
 * emf_acc_finish). The particle kernel also writes each particle's 4-bit migration code and the
 * cluster's 9-bin histogram; a warp stores its cells only when one changed, its codes only when
 * one is not 0 (the sort leaves every code 0).
 */
#include "gpu_internal.h"
#include "particle.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define FULL 0xffffffffu
/* threads per block of the particle kernel (k_push_move; the charge kernel runs GPU_THREADS) */
#define GPU_MOVE_THREADS 512
/* A cluster's particles in chunks of GPU_CHUNK slots (GPU_CHUNK_TRIPS trips), the kinetic
 * energy summed per chunk and the chunks' sums in order: the same sum whether one block runs
 * the cluster or each chunk is a part of its own (the parts of a heavy cluster) */
#define GPU_CHUNK_TRIPS (GPU_CHUNK / (GPU_MOVE_THREADS * GPU_VEC))
static_assert(GPU_CHUNK % (GPU_MOVE_THREADS * GPU_VEC) == 0, "whole trips per chunk");

/* One mobile species of the particle kernel: its arrays, cluster table, tile set and slot
 * of the kinetic-energy sums. */
typedef struct {
    float2 *xy, *uxy, *uzw;
    uint32_t *cell;
    uint8_t *code;
    const int *start, *count;
    int *hist;
    long long *tiles;
    int *live;                  /* per cluster: whether its tile was stored (gpu_state) */
    double *partial;
    float qdt2m;
    move_step mv;
    const uint8_t *z;           /* charge states of an ionizing species (charge q z), or NULL */
    uint8_t *rest;              /* with z, per cluster: its particles are all neutral atoms
                                   at rest (k_rest) */
    int cold;                   /* with z: a neutral atom is at rest (gpu_species.cold) */
    unsigned walls;             /* its walls (pbnd_sides): their clusters the walls shift */
} kspecies;

/* The particle kernel's launch: every mobile species at once, block b running cluster
 * order[b] % ncl of species order[b] / ncl (heaviest clusters first, k_cluster_order). */
typedef struct {
    kspecies sp[DECK_MAX_SPECIES];
    const int *order;
    /* which entries: all (PUSH_ALL), the border entries (PUSH_BORDER: block b runs
       border[b]) or the others (PUSH_REST: the border entries and the histograms of other
       ranks' clusters skipped); own, border_axes: gpu_state's */
    int which;
    const int *border;
    int4 own;
    int border_axes;
    int spare;                  /* blocks before the entries' that take the split parts */
    gpu_split split;            /* the parts (split.first NULL: every entry runs whole) */
    const float *f[6];          /* ex, ey, ez, bx, by, bz */
    const int *x0, *y0;
    int ncl, ncx, stride, off, nx, ny;
    int tszp, tile_stride;
    float scale;                /* fixed-point scale of the current tile */
    float ext[6];               /* external E, B: uniform values, added after the gather */
    const float *x[6];          /* their arrays where they vary in space (else NULL), added
                                   to the staged fields (extfield.h) */
    int *flags;                 /* the sort's flags, cleared for this step's sort (gpu_sort.cu;
                                   NULL: by another launch) */
} kpart;

enum { PUSH_ALL, PUSH_BORDER, PUSH_REST };

/* An index the compiler must treat as unknown (an empty asm that may change it). */
__device__ __forceinline__ int opaque(int v)
{
    asm volatile("" : "+r"(v));
    return v;
}

/* E and B at offset (x, y) of tile cell k: gather_eb's weights and operations on the staged
 * components, each axis' weights worked out once for the unstaggered (offset x, stencil at
 * the cell) and the staggered components (gather_axis), and each component's stencil index
 * passed through opaque(). nvcc 13.0 (-O3, sm_90) miscompiles gather_eb's six inlined
 * gathers: it derives the Ez address from the Ex address with the cell shift of the x < 0.5
 * half-cell select taken with the wrong sign (PTX: xor.pred of the two selects, then -4
 * bytes instead of +4), which reads Ez one cell to the left for x < 0.5; opaque indices stop
 * that rewrite. */
__device__ __forceinline__ void gather_tile(const float *sf, int tszp, int k, int tw, float x,
                                            float y, float e[3], float b[3])
{
    int ox, oy;
    const float sx = gather_axis(x, 1, &ox), sy = gather_axis(y, 1, &oy);
    float v[6];
#pragma unroll
    for (int m = 0; m < 6; m++) {
        const int hx = yee_hx(m), hy = yee_hy(m);
        const int i = opaque(k + (hx ? ox : 0) + (hy ? oy : 0) * tw);
        const float *f = sf + m * tszp + i;
        v[m] = gather_bilinear(f[0], f[1], f[tw], f[tw + 1], hx ? sx : x, hy ? sy : y);
    }
    e[0] = v[YEE_EX];
    e[1] = v[YEE_EY];
    e[2] = v[YEE_EZ];
    b[0] = v[YEE_BX];
    b[1] = v[YEE_BY];
    b[2] = v[YEE_BZ];
}

/* A thread's GPU_VEC particles in registers. */
typedef struct {
    uint32_t cell[GPU_VEC];
    float x[GPU_VEC], y[GPU_VEC], u[3][GPU_VEC], w[GPU_VEC];
} pgroup;

/* Trips of a block of nt threads over a cluster of n particles, GPU_VEC per thread and trip. */
__device__ __forceinline__ int group_trips(int n, int nt)
{
    return (n + GPU_VEC * nt - 1) / (GPU_VEC * nt);
}

/* Slot of particle q of lane's group among its warp's 32 GPU_VEC slots: two pairs of
 * neighbouring slots (q = 2h, 2h + 1), pair h at 16-byte chunk (lane & 7) + 8 h + 16 (lane >> 3)
 * of a pair array. Eight lanes then read or write 128 contiguous bytes (whole sectors) with
 * one 16-byte access; and in each q the warp's lanes lie in four runs of 16 slots, 32 apart,
 * so that they work in several cells at once (neighbouring slots often share a cell: their
 * atomics on one tile entry wait for each other). */
__device__ __forceinline__ int group_off(int lane, int q)
{
    return 2 * ((lane & 7) + 8 * (q >> 1) + 16 * (lane >> 3)) + (q & 1);
}

/* Lane's group of the warp's slots from p, of which `left` are in the cluster (none when
 * left <= 0; a pair is read whole: segments start on 32-slot multiples, so slots up to
 * 4 ceil(n/4) exist). Particles beyond the cluster are not read, and the caller uses none. */
__device__ __forceinline__ void group_load(pgroup &g, const kspecies &a, int p, int lane,
                                           int left)
{
#pragma unroll
    for (int q = 0; q < GPU_VEC; q += 2) {
        const int o = group_off(lane, q);
        if (o >= left)
            continue;
        const uint2 c = *(const uint2 *)(a.cell + p + o);
        g.cell[q] = c.x, g.cell[q + 1] = c.y;
        pairs_load2(a.xy, p + o, g.x[q], g.y[q], g.x[q + 1], g.y[q + 1]);
        pairs_load2(a.uxy, p + o, g.u[0][q], g.u[1][q], g.u[0][q + 1], g.u[1][q + 1]);
        pairs_load2(a.uzw, p + o, g.u[2][q], g.w[q], g.u[2][q + 1], g.w[q + 1]);
    }
}

/* Stage the cluster's six field components (tile T, with ghosts) in shared memory, the
 * external fields' arrays added at the same points (gather_yee_ext's sums). */
__device__ __forceinline__ void stage_fields(const kpart &a, const cluster_tile &T, float *sf)
{
    const int tsz = T.w * T.h;
    for (int idx = threadIdx.x; idx < tsz; idx += blockDim.x) {
        int r = idx / T.w;
        int gk = a.off + T.i0 + (idx - r * T.w) + (T.j0 + r) * a.stride;
#pragma unroll
        for (int comp = 0; comp < 6; comp++)
            sf[comp * a.tszp + idx] = a.x[comp] ? a.f[comp][gk] + a.x[comp][gk] : a.f[comp][gk];
    }
}

/* Push particle q of the group, of charge state zq (1 for a species without charge states):
 * u(n-1/2) -> u(n+1/2); returns w (gamma - 1) at time n when KE. A neutral atom (zq 0) feels
 * no field: its u is kept as it is, unpushed (a push at zero charge changes nothing but the
 * sign of a zero component). */
template <bool KE>
__device__ __forceinline__ double push_one(const kpart &a, const kspecies &sp,
                                           const cluster_tile &T, const float *sf, pgroup &g,
                                           int q, float zq)
{
    float e[3], b[3], u[3] = {g.u[0][q], g.u[1][q], g.u[2][q]};
    if (zq == 0.0f)
        return KE ? kinetic_share(g.w[q], u[0], u[1], u[2], u[0], u[1], u[2]) : 0.0;
    gather_tile(sf, a.tszp, cluster_tile_k(&T, g.cell[q]), T.w, g.x[q], g.y[q], e, b);
    for (int d = 0; d < 3; d++) {
        e[d] += a.ext[d];
        b[d] += a.ext[3 + d];
    }
    const float u0[3] = {u[0], u[1], u[2]};
    boris_push(u, e, b, sp.qdt2m * zq);
    g.u[0][q] = u[0];
    g.u[1][q] = u[1];
    g.u[2][q] = u[2];
    if (!KE)
        return 0.0;
    return kinetic_share(g.w[q], u0[0], u0[1], u0[2], u[0], u[1], u[2]);
}

/* The block's sum of v into *out (every thread calls it). */
__device__ __forceinline__ void block_sum(double v, double *red, double *out)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(FULL, v, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int w = 0; w < (int)blockDim.x / 32; w++)
            s += red[w];
        *out = s;
    }
}

/* Each tile entry starts at 2^31 (its low word half way round) and the bias is taken off as
 * the tile is stored: a sum of small contributions of either sign then seldom carries into
 * the high word, which an entry starting at 0 did at every change of sign of its sum. */
#define TILE_BIAS 0x80000000ull

/* The split tile keeps each entry as two 32-bit words in separate arrays, lo[i] and hi[i]:
 * the low words of neighbouring entries then lie in neighbouring banks (in a 64-bit entry
 * every low word lies in one of the 16 even banks, so the low-word atomics of lanes in
 * different cells met twice the bank conflicts). fixed_atomic_add_low adds the low words;
 * the same exact sum modulo 2^64. */

/* Move particle q of the group, of charge state zq, and deposit its current into the split
 * tile (the low words of the three components, tszp apart, then their high words, 3 tszp
 * further; the pieces, their order and their fixed_of values are deposit_pieces_fixed's);
 * returns its migration code.
 * Only the pieces deposited are worked out (move_to's rule, piece by piece): a particle that
 * stays in its cell, most of them, needs one of the three. */
__device__ __forceinline__ unsigned move_one(const kpart &a, const kspecies &sp,
                                             const cluster_tile &T, unsigned *lo, pgroup &g,
                                             int q, float zq, unsigned &cells)
{
    const int k = cluster_tile_k(&T, g.cell[q]), s = T.w, tp = a.tszp;
    const move_endpoint e =
        move_end(&sp.mv, g.u[0][q], g.u[1][q], g.u[2][q], g.w[q] * zq, g.x[q], g.y[q]);
    /* no vz, no Jz (uz = 0 in a cold plasma, or with Ez = Bx = By = 0: an in-plane
       polarised laser in 2D) */
    const bool jz = e.cz != 0.0f;
    int dcx, dcy;
    if (zq == 0.0f) { /* a neutral atom: it moves, it carries no current */
        cells |= move_cell(&T, a.nx, a.ny, e.x1, e.y1, &g.cell[q], &g.x[q], &g.y[q], &dcx, &dcy,
                           0) & 4u;
        return mig_code(dcx, dcy);
    }
    kong_split path;
    kong_split3(g.x[q], g.y[q], e.x1, e.y1, &path);
    const unsigned pieces = move_cell(&T, a.nx, a.ny, e.x1, e.y1, &g.cell[q], &g.x[q], &g.y[q],
                                      &dcx, &dcy, path.t[2] != path.t[1]);
    cells |= pieces & 4u; /* a new cell */
    unsigned *hi = lo + 3 * tp;
    const float scale = a.scale;
#pragma unroll
    for (int m = 0; m < 3; m++)
        if (pieces & (1u << m)) {
            int o;
            float w[8];
            move_piece(&path, m, e.cx, e.cy, e.cz, s, &o, w, 1);
            int at[8];
#pragma unroll
            for (int e = 0; e < 8; e++)
                at[e] = piece_entry(e, k + o, s, tp);
            unsigned h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
            for (int e = 0; e < 4; e++)
                h[e] = fixed_atomic_add_low(&lo[at[e]], fixed_of(w[e], scale));
            if (jz)
#pragma unroll
                for (int e = 4; e < 8; e++)
                    h[e] = fixed_atomic_add_low(&lo[at[e]], fixed_of(w[e], scale));
            /* one test for the eight (TILE_BIAS: a high word seldom needs anything), not a
               branch per add, which would keep each add from being issued before the last
               one's atomic has returned */
            if (h[0] | h[1] | h[2] | h[3] | h[4] | h[5] | h[6] | h[7])
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (h[e])
                        atomicAdd(&hi[at[e]], h[e]);
        }
    return mig_code(dcx, dcy);
}

/* The split tile's 3 components (low words lo, high words 3 tszp further) joined into 64-bit
 * entries in the block's slot of the buffer (component k at k tsz, as the tile sums read). */
__device__ __forceinline__ void tile_store_split(const unsigned *lo, int tszp, int tsz,
                                                 long long *dst)
{
    const unsigned *hi = lo + 3 * tszp;
    for (int idx = threadIdx.x; idx < 3 * tsz; idx += blockDim.x) {
        const int comp = idx / tsz, r = comp * tszp + idx - comp * tsz;
        dst[idx] = (long long)((((unsigned long long)hi[r] << 32) | lo[r]) - TILE_BIAS);
    }
}

/* The 8 migration codes of movers, in histogram-bin order of their (dx, dy). */
__constant__ unsigned char mover_code[8] = {10, 8, 9, 2, 1, 6, 4, 5};
__constant__ unsigned char mover_bin[8] = {0, 1, 2, 3, 5, 6, 7, 8};

/* Store lane's group (w unchanged) and its codes (byte q of `codes`, group_load's slots);
 * the cells only when one of the warp's changed, the codes only when the warp has a mover
 * (the sort leaves every code 0: gpu_debug.cu's after-sort rule). */
__device__ __forceinline__ void group_store(const kspecies &a, const pgroup &g, unsigned codes,
                                            int p, int lane, int left, bool cells, bool movers)
{
#pragma unroll
    for (int q = 0; q < GPU_VEC; q += 2) {
        const int o = group_off(lane, q), k = p + o;
        if (o + 1 < left) {
            pairs_store2(a.xy, k, g.x[q], g.y[q], g.x[q + 1], g.y[q + 1]);
            pairs_store2(a.uxy, k, g.u[0][q], g.u[1][q], g.u[0][q + 1], g.u[1][q + 1]);
            pairs_store2(a.uzw, k, g.u[2][q], g.w[q], g.u[2][q + 1], g.w[q + 1]);
            if (cells)
                *(uint2 *)(a.cell + k) = make_uint2(g.cell[q], g.cell[q + 1]);
            if (movers)
                *(unsigned short *)(a.code + k) = (unsigned short)(codes >> (8 * q));
        } else if (o < left) {
            a.xy[k] = make_float2(g.x[q], g.y[q]);
            a.uxy[k] = make_float2(g.u[0][q], g.u[1][q]);
            a.uzw[k] = make_float2(g.u[2][q], g.w[q]);
            if (cells)
                a.cell[k] = g.cell[q];
            if (movers)
                a.code[k] = (uint8_t)(codes >> (8 * q));
        }
    }
}

/* Count the movers per code (mv[b], the same in all lanes) by warp votes. */
__device__ __forceinline__ void count_movers(unsigned codes, int mv[8])
{
#pragma unroll
    for (int q = 0; q < GPU_VEC; q++)
#pragma unroll
        for (int b = 0; b < 8; b++)
            mv[b] += __popc(__ballot_sync(FULL, ((codes >> (8 * q)) & 0xffu) == mover_code[b]));
}

/* On a window shift's step nearly every warp has movers (its particles in the cluster's
 * first column): count them into the block's histogram with one vote and one shared atomic
 * for each code the warp holds (few: most of its movers leave toward -x), not count_movers'
 * eight votes. */
__device__ __forceinline__ void count_codes(unsigned codes, int *hist)
{
#pragma unroll
    for (int q = 0; q < GPU_VEC; q++) {
        const unsigned c = (codes >> (8 * q)) & 0xffu;
        for (unsigned left = __ballot_sync(FULL, c != 0u); left;) { /* the same in the warp */
            const unsigned lead = __shfl_sync(FULL, c, __ffs(left) - 1);
            const unsigned same = __ballot_sync(FULL, c == lead);
            if ((threadIdx.x & 31) == 0)
                atomicAdd(&hist[mig_bin_of_code(lead)], __popc(same));
            left &= ~same;
        }
    }
}

/* The parts of entry e (species slot e / ncl, cluster e % ncl) of n particles: 1 when it runs
 * whole. */
__device__ __forceinline__ int entry_parts(const kpart &a, int e, int n)
{
    return a.split.first && a.split.first[e] >= 0 ? (n + GPU_CHUNK - 1) / GPU_CHUNK : 1;
}

/* The particle kernel's shared scalars: the histogram, the part a block runs (entry, part),
 * whether it is its entry's last, the reductions' warp sums, their result and the kinetic
 * energy of the chunks so far (kept here, not in registers, across the particle loop). */
typedef struct {
    int hist[9];
    int e, part, last, take;
    double red[GPU_MOVE_THREADS / 32], sum, ke;
} pshared;

/* The entry a block runs: e (species slot s = e / ncl, cluster c), its n particles, its
 * tile T and the part (0 when it runs whole). */
typedef struct {
    int e, s, c, n, part;
    cluster_tile T;
} pentry;

__device__ __forceinline__ pentry entry_of(const kpart &a, int e, int part)
{
    pentry E;
    E.e = e;
    E.s = e / a.ncl;
    E.c = e - E.s * a.ncl;
    E.n = a.sp[E.s].count[E.c];
    E.part = part;
    E.T = cluster_tile_of(a.x0, a.y0, a.ncx, E.c);
    return E;
}

/* Part E.part of entry E: the whole cluster (entry_parts 1) or its chunk E.part, each
 * particle read and written once: gather E(n), B(n) at x(n) from the staged
 * fields, Boris u(n-1/2) -> u(n+1/2) (with KE the sum of w (gamma - 1) at time n, per chunk),
 * move x(n) -> x(n+1), deposit J(n+1/2) into the split tile, with SHIFT the window's shift
 * (window_shift_particle: no particle here is dropped by it), migration codes and the
 * histogram; returns whether a particle deposited (on every thread). */
template <bool KE, bool PARTS, bool SHIFT>
__device__ __forceinline__ int push_run(const kpart &a, float *sf, pshared &sh, const pentry &E)
{
    unsigned *sw = (unsigned *)(sf + 6 * a.tszp);
    const int tid = threadIdx.x, lane = tid & 31;
    const kspecies &sp = a.sp[E.s];
    const cluster_tile &T = E.T;
    const int n = E.n, split = PARTS && entry_parts(a, E.e, n) > 1;
    const int from = split ? E.part * GPU_CHUNK : 0;
    const int cnt = split ? min(n - from, GPU_CHUNK) : n, s1 = sp.start[E.c] + from;
    for (int idx = tid; idx < 6 * a.tszp; idx += GPU_MOVE_THREADS)
        sw[idx] = idx < 3 * a.tszp ? (unsigned)TILE_BIAS : 0u;
    if (tid < 9)
        sh.hist[tid] = 0;
    if (tid == 0)
        sh.ke = 0.0;
    if (n > 0) /* another rank's cluster: no fields here, an empty tile */
        stage_fields(a, T, sf);
    __syncthreads();
    int mv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    /* not in an edge cluster, whose walls come first (k_walls shifts those) */
    const bool shift =
        SHIFT && !pbnd_edge_cluster(sp.walls, E.c % a.ncx, E.c / a.ncx, a.ncx, a.ncl / a.ncx);
    bool charged = false; /* a particle of this thread deposited */
    double ke = 0.0;
    const int trips = group_trips(cnt, GPU_MOVE_THREADS);
    for (int t = 0; t < trips; t++) {
        /* the warp's 32 GPU_VEC slots from base */
        const int base = GPU_VEC * (t * GPU_MOVE_THREADS + 32 * (tid >> 5));
        const int left = cnt - base, p = s1 + base;
        pgroup g;
        group_load(g, sp, p, lane, left);
        unsigned codes = 0, cells = 0; /* byte q: particle q's code */
#pragma unroll
        for (int q = 0; q < GPU_VEC; q++)
            if (group_off(lane, q) < left) {
                /* read here, not in the group: one register, and only ions read it */
                const float zq = sp.z ? (float)sp.z[p + group_off(lane, q)] : 1.0f;
                charged |= zq != 0.0f;
                ke += push_one<KE>(a, sp, T, sf, g, q, zq);
                unsigned code = move_one(a, sp, T, sw, g, q, zq, cells);
                if (shift) {
                    code = window_shift_particle(&g.cell[q], code, T.xlo);
                    cells |= 4u;
                }
                codes |= code << (8 * q);
            }
        const bool movers = __any_sync(FULL, codes != 0u);
        group_store(sp, g, codes, p, lane, left, __any_sync(FULL, cells != 0u), movers);
        if (movers && SHIFT)
            count_codes(codes, sh.hist);
        else if (movers)
            count_movers(codes, mv);
        if (KE && ((t + 1) % GPU_CHUNK_TRIPS == 0 || t + 1 == trips)) { /* a chunk's end */
            block_sum(ke, sh.red, &sh.sum); /* synchronises the block */
            if (tid == 0)
                sh.ke += sh.sum;
            ke = 0.0;
            __syncthreads(); /* red read before the next chunk's sum */
        }
    }
    if (!SHIFT && lane == 0)
        for (int b = 0; b < 8; b++)
            if (mv[b])
                atomicAdd(&sh.hist[mover_bin[b]], mv[b]);
    return __syncthreads_or(charged);
}

/* The histogram of a cluster of n particles from its movers' bins (thread tid < 9). */
__device__ __forceinline__ void hist_store(int *hist, const int *bins, int n, int tid)
{
    int moved = 0;
    for (int b = 0; b < 9; b++)
        moved += b == 4 ? 0 : bins[b];
    hist[tid] = tid == 4 ? n - moved : bins[tid];
}

/* The outputs of push_run (live: a particle deposited): a whole cluster's to its tile slot,
 * histogram, kinetic-energy sum and tile flag; a part's to its slot of the split, and the
 * entry's last part to finish adds the parts up there (integers, and the chunks' energies in
 * chunk order: the same bits as one block). A tile nothing was deposited into (no particle,
 * or neutral atoms only) is not stored: the sums skip it (most of them in a foil's vacuum or
 * an unionized gas). */
template <bool KE, bool PARTS>
__device__ __forceinline__ void push_finish(const kpart &a, float *sf, pshared &sh,
                                            const pentry &E, int live)
{
    const unsigned *sw = (const unsigned *)(sf + 6 * a.tszp);
    const int tid = threadIdx.x, e = E.e, c = E.c, n = E.n;
    const kspecies &sp = a.sp[E.s];
    const int parts = PARTS ? entry_parts(a, e, n) : 1, tsz = E.T.w * E.T.h;
    if (parts == 1) {
        if (tid < 9 && (a.which != PUSH_REST || in_box(a.own, c % a.ncx, c / a.ncx)))
            hist_store(sp.hist + 9 * c, sh.hist, n, tid);
        if (tid == 0) {
            sp.live[c] = live;
            if (KE)
                sp.partial[c] = sh.ke;
        }
        if (live)
            tile_store_split(sw, a.tszp, tsz, sp.tiles + (size_t)c * a.tile_stride);
        return;
    }
    const gpu_split &x = a.split;
    const int first = x.first[e], slot = first + E.part;
    if (tid < 9)
        x.hist[9 * slot + tid] = sh.hist[tid];
    if (tid == 0) {
        x.live[slot] = live;
        x.ke[slot] = sh.ke;
    }
    if (live)
        tile_store_split(sw, a.tszp, tsz, x.tiles + (size_t)slot * a.tile_stride);
    __threadfence(); /* this part's outputs visible before it counts as done */
    __syncthreads();
    if (tid == 0)
        sh.last = atomicAdd(&x.done[e], 1) == parts - 1;
    __syncthreads();
    if (!sh.last)
        return;
    __threadfence();
    /* the last part: the parts' sums into the entry's outputs (read through L2: other
       blocks wrote them) */
    int any = 0;
    for (int k = 0; k < parts; k++)
        any |= __ldcg(&x.live[first + k]);
    if (any)
        for (int idx = tid; idx < 3 * tsz; idx += GPU_MOVE_THREADS) {
            unsigned long long v = 0;
            for (int k = 0; k < parts; k++)
                if (__ldcg(&x.live[first + k]))
                    v += (unsigned long long)__ldcg(
                        &x.tiles[(size_t)(first + k) * a.tile_stride + idx]);
            sp.tiles[(size_t)c * a.tile_stride + idx] = (long long)v;
        }
    __syncthreads(); /* sh.hist read by every thread above */
    if (tid < 9) {
        int v = 0;
        for (int k = 0; k < parts; k++)
            v += __ldcg(&x.hist[9 * (first + k) + tid]);
        sh.hist[tid] = v;
    }
    __syncthreads();
    if (tid < 9)
        hist_store(sp.hist + 9 * c, sh.hist, n, tid);
    if (tid == 0) {
        sp.live[c] = any;
        if (KE) {
            double sum = 0.0;
            for (int k = 0; k < parts; k++)
                sum += __ldcg(&x.ke[first + k]);
            sp.partial[c] = sum;
        }
        x.done[e] = 0;
    }
}

/* Whether entry E (whole) holds neutral atoms at rest only (k_rest's flag). */
__device__ __forceinline__ bool at_rest(const kpart &a, const pentry &E)
{
    const uint8_t *rest = a.sp[E.s].rest;
    return rest && rest[E.c];
}

/* push_finish's outputs for an entry without particles (another rank's cluster, a foil's
 * vacuum: most entries of a box split over ranks) or of neutral atoms at rest only (at_rest:
 * the gas ahead of the laser; they stay, deposit nothing and have no kinetic energy),
 * without push_run's tile and barriers: the many such blocks take no longer than their
 * launch (on a window shift's step the atoms are shifted after the push: k_window_particles,
 * k_walls on the walls). */
template <bool KE>
__device__ __forceinline__ void push_empty(const kpart &a, const pentry &E)
{
    const kspecies &sp = a.sp[E.s];
    const int tid = threadIdx.x, c = E.c;
    if (tid < 9 && (a.which != PUSH_REST || in_box(a.own, c % a.ncx, c / a.ncx)))
        sp.hist[9 * c + tid] = tid == 4 ? E.n : 0;
    if (tid == 0) {
        sp.live[c] = 0;
        if (KE)
            sp.partial[c] = 0.0;
    }
}

/* The particle kernel: the first `spare` blocks take the parts after the first of the split
 * entries in turn (k_cluster_plan's queue, about heaviest first), then one block per entry
 * (a cluster of a mobile species) runs it whole or its first part, in k_cluster_order's
 * order; without PARTS (no entry split this step) each block runs its entry whole, with no
 * part logic on its path. 512 threads, 2 blocks per multiprocessor (64 registers): the
 * heaviest clusters, which decide the kernel's tail, get 512 threads and start first. */
template <bool KE, bool PARTS, bool SHIFT>
__global__ void __launch_bounds__(GPU_MOVE_THREADS, 2) k_push_move(const __grid_constant__ kpart a)
{
    extern __shared__ float sf[]; /* 6 tszp field values, then the split tile (6 tszp words:
                                     3 tszp low words, 3 tszp high words) */
    __shared__ pshared sh;
    if (a.flags && blockIdx.x == 0)
        gpu_flags_clear(a.flags, threadIdx.x);
    if (!PARTS) { /* every block its entry, whole */
        const int e = a.which == PUSH_BORDER ? a.border[blockIdx.x] : a.order[blockIdx.x];
        if (a.which == PUSH_REST && cluster_border(a.own, a.border_axes, a.ncx, e % a.ncl))
            return;
        const pentry E = entry_of(a, e, 0);
        if (E.n == 0 || at_rest(a, E))
            push_empty<KE>(a, E);
        else
            push_finish<KE, false>(a, sf, sh, E, push_run<KE, false, SHIFT>(a, sf, sh, E));
        return;
    }
    const bool entry = (int)blockIdx.x >= a.spare;
    for (;;) { /* one call of push_run: its registers are allocated once */
        if (threadIdx.x == 0) {
            int k = -1;
            if (entry) {
                const int b = blockIdx.x - a.spare;
                sh.e = a.order[b];
                sh.part = 0;
            } else if ((k = atomicAdd(&a.split.queue[0], 1)) < a.split.queue[1]) {
                const int2 q = a.split.parts[k];
                sh.e = q.x;
                sh.part = q.y;
            }
            sh.take = entry || k < a.split.queue[1];
        }
        __syncthreads();
        if (!sh.take)
            return;
        const pentry E = entry_of(a, sh.e, sh.part);
        if (E.n == 0 || (entry && entry_parts(a, E.e, E.n) == 1 && at_rest(a, E))) {
            push_empty<KE>(a, E); /* an entry block's: a part has particles */
            return;
        }
        push_finish<KE, true>(a, sf, sh, E, push_run<KE, true, SHIFT>(a, sf, sh, E));
        if (entry)
            return;
        __syncthreads(); /* every thread has read sh before the next take */
    }
}

/* The ionizing species of k_rest: their particles, cluster tables and flags. */
typedef struct {
    const uint8_t *z[DECK_MAX_SPECIES];
    const float2 *uxy[DECK_MAX_SPECIES], *uzw[DECK_MAX_SPECIES];
    const int *start[DECK_MAX_SPECIES], *count[DECK_MAX_SPECIES];
    uint8_t *rest[DECK_MAX_SPECIES];
    int cold[DECK_MAX_SPECIES];
} krest;

/* Per cluster (blockIdx.x) of ionizing species blockIdx.y: whether its particles are all
 * neutral atoms at rest, which the particle kernel then skips. The charge states are read 16
 * at a time (segments start on 32-slot multiples), the momenta only where every atom is
 * neutral and the species may hold moving ones (not cold). */
__global__ void __launch_bounds__(GPU_THREADS) k_rest(const __grid_constant__ krest a)
{
    const int s = blockIdx.y, c = blockIdx.x, n = a.count[s][c], s0 = a.start[s][c];
    const uint8_t *zs = a.z[s];
    unsigned z = 0;
    for (int k = 16 * threadIdx.x; k < n; k += 16 * GPU_THREADS)
        if (k + 16 <= n) {
            const uint4 v = *(const uint4 *)(zs + s0 + k);
            z |= v.x | v.y | v.z | v.w;
        } else
            for (int q = k; q < n; q++)
                z |= zs[s0 + q];
    bool rest = !__syncthreads_or(z != 0u); /* every charge state 0 */
    if (rest && !a.cold[s]) {
        bool moving = false;
        for (int k = threadIdx.x; k < n; k += GPU_THREADS) {
            const float2 uxy = a.uxy[s][s0 + k], uzw = a.uzw[s][s0 + k];
            moving |= !particle_at_rest(0u, 0, uxy.x, uxy.y, uzw.x);
        }
        rest = !__syncthreads_or(moving);
    }
    if (threadIdx.x == 0)
        a.rest[s][c] = rest;
}

void gpu_rest_flags(gpu_state *g)
{
    krest a;
    memset(&a, 0, sizeof a);
    unsigned n = 0;
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        uint8_t *r = gpu_rest_of(g, s);
        if (!r)
            continue;
        a.z[n] = d->z;
        a.uxy[n] = d->uxy;
        a.uzw[n] = d->uzw;
        a.start[n] = d->start;
        a.count[n] = d->count;
        a.rest[n] = r;
        a.cold[n++] = d->cold;
    }
    g->rest_valid = 1;
    if (!n)
        return;
    k_rest<<<dim3((unsigned)g->ncl, n), GPU_THREADS, 0, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_rest");
}

/* The particle kernel's instance: with the kinetic energy or not, with parts (spare blocks
 * taking the heavy clusters' parts) or every entry whole (no part logic in its loop), with
 * the window's shift or not. */
#define PUSH_KERNEL(ke, parts, shift) (const void *)k_push_move<ke, parts, shift>
static const void *push_kernel(int ke, int parts, int shift)
{
    static const void *const k[8] = {
        PUSH_KERNEL(false, false, false), PUSH_KERNEL(true, false, false),
        PUSH_KERNEL(false, true, false),  PUSH_KERNEL(true, true, false),
        PUSH_KERNEL(false, false, true),  PUSH_KERNEL(true, false, true),
        PUSH_KERNEL(false, true, true),   PUSH_KERNEL(true, true, true)};
    return k[(ke ? 1 : 0) | (parts ? 2 : 0) | (shift ? 4 : 0)];
}

/* Charge of one species at the current positions into the tile buffer: one shared-memory
 * tile of tszp fixed-point entries per block, added with integer atomics. */
typedef struct {
    const float2 *xy, *uzw;
    const uint32_t *cell;
    const int *start, *count;
    long long *tiles;
    const int *x0, *y0;
    int ncx, tszp, tile_stride;
    float q, scale;
    const uint8_t *z;           /* charge states (charge q z), or NULL */
} krho;

__global__ void __launch_bounds__(GPU_THREADS) k_rho(krho a)
{
    extern __shared__ long long sr[];
    const int c = blockIdx.x, tid = threadIdx.x;
    const cluster_tile T = cluster_tile_of(a.x0, a.y0, a.ncx, c);
    for (int idx = tid; idx < a.tszp; idx += GPU_THREADS)
        sr[idx] = 0;
    __syncthreads();
    const int n = a.count[c], s0 = a.start[c];
    for (int base = GPU_VEC * tid; base < n; base += GPU_VEC * GPU_THREADS) {
        const int nv = min(GPU_VEC, n - base), p = s0 + base;
        const uint4 c4 = *(const uint4 *)(a.cell + p);
        const uint32_t cl[4] = {c4.x, c4.y, c4.z, c4.w};
        float xs[4], ys[4], uz[4], ws[4]; /* uz comes with w, unused */
        pairs_load2(a.xy, p, xs[0], ys[0], xs[1], ys[1]);
        pairs_load2(a.xy, p + 2, xs[2], ys[2], xs[3], ys[3]);
        pairs_load2(a.uzw, p, uz[0], ws[0], uz[1], ws[1]);
        pairs_load2(a.uzw, p + 2, uz[2], ws[2], uz[3], ws[3]);
#pragma unroll
        for (int q = 0; q < GPU_VEC; q++) {
            if (q >= nv)
                continue;
            const float qz = a.z ? a.q * (float)a.z[p + q] : a.q;
            deposit_charge_fixed(sr, cluster_tile_k(&T, cl[q]), T.w, xs[q], ys[q], qz * ws[q],
                                 a.scale);
        }
    }
    __syncthreads();
    long long *dst = a.tiles + (size_t)c * a.tile_stride;
    for (int idx = tid; idx < T.w * T.h; idx += GPU_THREADS)
        dst[idx] = sr[idx];
}

/* The tile sets and the cluster table the tile sums read; live[m ncl + c]: whether tile c
 * of set m holds anything (NULL: all do). */
typedef struct {
    const long long *tiles;
    const int *live;
    int nset, tile_stride, ncomp;
    size_t tile_set;
    const int *x0, *y0, *cx_of, *cy_of;
    int ncx, ncy, nx, ny;
} ktiles;

/* Add to v every tile entry for global cell (i, j) (tiles cover [x0 - 1, x1 + 2) x
 * [y0 - 1, y1 + 2): at most two clusters along each axis), with wrapping integer adds, as the
 * atomics. */
__device__ __forceinline__ void tiles_sum_cell(const ktiles &a, int i, int j,
                                               unsigned long long v[3])
{
    int cxs[2], cys[2], nxs = 0, nys = 0;
    const int ax = a.cx_of[min(max(i, 0), a.nx - 1)], ay = a.cy_of[min(max(j, 0), a.ny - 1)];
    for (int k = max(ax - 1, 0); k <= min(ax + 1, a.ncx - 1); k++)
        if (a.x0[k] - 1 <= i && i < a.x0[k + 1] + 2)
            cxs[nxs++] = k;
    for (int k = max(ay - 1, 0); k <= min(ay + 1, a.ncy - 1); k++)
        if (a.y0[k] - 1 <= j && j < a.y0[k + 1] + 2)
            cys[nys++] = k;
    for (int m = 0; m < a.nset; m++)
        for (int p = 0; p < nxs; p++)
            for (int q = 0; q < nys; q++) {
                const int c = cxs[p] + cys[q] * a.ncx;
                if (a.live && !a.live[m * a.ncx * a.ncy + c])
                    continue;
                const cluster_tile T = cluster_tile_of(a.x0, a.y0, a.ncx, c);
                const int tsz = T.w * T.h, idx = (i - T.i0) + (j - T.j0) * T.w;
                const long long *t = a.tiles + m * a.tile_set + (size_t)c * a.tile_stride + idx;
                for (int k = 0; k < a.ncomp; k++)
                    v[k] += (unsigned long long)t[k * tsz];
            }
}

/* Several ranks: the fixed-point mesh sums (acc, ncomp components of size) of this rank's
 * elements, guards included (element e: global cell i, j), added to what acc holds when
 * `add`; gpu_acc_finish then folds the guards across the rank borders and rounds. n elements:
 * the whole mesh, or with `frame` acc's frame (frame_element) only: the current's other
 * cells, which no fold reaches, are k_tiles_mesh's. */
__global__ void k_tiles_sum(ktiles a, int add, long long *acc, size_t size, size_t n, int frame,
                            int stride, int i0, int j0, int w, int h)
{
    const int G = EMF_GUARD;
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const int2 cr = frame ? frame_element(t, stride, w, h)
                          : make_int2((int)(t % stride), (int)(t / stride));
    const size_t e = (size_t)cr.y * stride + cr.x;
    unsigned long long v[3] = {0, 0, 0};
    tiles_sum_cell(a, cr.x - G + i0, cr.y - G + j0, v);
    for (int k = 0; k < a.ncomp; k++) {
        long long *o = acc + k * size + e;
        *o = (long long)(v[k] + (add ? (unsigned long long)*o : 0ull));
    }
}

/* Several ranks, J's x fold sent early and no exchange along y (frame_at_once): acc's frame
 * finished at once, what k_tiles_sum, gpu_acc_finish's fold (the x bands that came in,
 * in_lo from the - side and in_hi from the +, k_band_pack's layout, added into the G cells
 * next to each border) and k_acc_convert give, without the round trip through acc: the
 * same wrapping integer adds, one rounding; guards zero. n = acc_frame_n. */
__global__ void k_tiles_frame(ktiles a, size_t n, int stride, int i0, int j0, int w, int h,
                              const unsigned long long *in_lo, const unsigned long long *in_hi,
                              int rows, double inv, float *d0, float *d1, float *d2)
{
    const int G = EMF_GUARD;
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const int2 cr = frame_element(t, stride, w, h);
    const size_t e = (size_t)cr.y * stride + cr.x;
    float *const d[3] = {d0, d1, d2};
    if (cr.x < G || cr.x >= G + w || cr.y < G || cr.y >= G + h) {
        d0[e] = d1[e] = d2[e] = 0.0f;
        return;
    }
    unsigned long long v[3] = {0, 0, 0};
    tiles_sum_cell(a, cr.x - G + i0, cr.y - G + j0, v);
    const size_t per = (size_t)rows * G;
    const unsigned long long *in = NULL;
    if (in_lo && cr.x < 2 * G)
        in = in_lo + (size_t)cr.y * G + (cr.x - G);
    else if (in_hi && cr.x >= w)
        in = in_hi + (size_t)cr.y * G + (cr.x - w);
    for (int k = 0; k < 3; k++)
        d[k][e] = (float)((double)(long long)(v[k] + (in ? in[k * per] : 0ull)) * inv);
}

/* Several ranks, J's x fold sent early (fold_early): the tile sums of this rank's guard
 * columns, every row, low band to lo and high band to hi in k_band_pack's layout (component
 * after component, rows in order, G columns each): what k_tiles_sum puts in acc's guards. */
__global__ void k_tiles_guards(ktiles a, int rows, int w, int i0, int j0, unsigned long long *lo,
                               unsigned long long *hi)
{
    const int G = EMF_GUARD;
    const size_t per = (size_t)rows * G;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < 2 * per;
         t += (size_t)gridDim.x * blockDim.x) {
        const int side = t >= per;
        const size_t q = t - (side ? per : 0);
        const int r = (int)(q / G), c = (int)(q % G);
        unsigned long long v[3] = {0, 0, 0};
        tiles_sum_cell(a, side ? i0 + w + c : i0 - G + c, r - G + j0, v);
        for (int k = 0; k < a.ncomp; k++)
            (side ? hi : lo)[k * per + q] = v[k];
    }
}

/* The finished mesh current at once (what k_tiles_sum and gpu_acc_finish give, without the
 * round trip through acc). Block c < ncl takes cluster c's cells: each sums the entries of
 * the tiles that cover it, its cluster's and, near the cluster's sides, those of its 8
 * neighbours (tiles reach [x0 - 1, x1 + 2)), across a periodic side the neighbour's image
 * (the fold of the guard deposits), and rounds once; on one rank the blocks after them zero
 * the guards (3 components: the current). Over several ranks (`frame`) the blocks of this
 * rank's clusters (own) take the cells of the box b (x, y: first cell; z, w: size) outside
 * acc's frame only, which no tile of another rank and no fold reaches (px = py = 0). The
 * neighbours' tiles and which of their sets hold anything are found once per block, and a
 * cell reads only the stored tiles that hold it (none in a vacuum or a neutral gas: the block
 * writes zeros). */
__global__ void __launch_bounds__(256) k_tiles_mesh(ktiles a, int px, int py, int rows,
                                                      int stride, double inv, int frame,
                                                      int4 own, int4 b, float *d0, float *d1,
                                                      float *d2)
{
    const int G = EMF_GUARD, ncl = a.ncx * a.ncy;
    if ((int)blockIdx.x >= ncl) { /* the guard frame, a row at a time: the guard rows whole,
                                     the others' guard columns (no division per element) */
        for (int r = blockIdx.x - ncl; r < rows; r += gridDim.x - ncl) {
            const bool guard = r < G || r >= a.ny + G;
            const int n = guard ? stride : stride - a.nx;
            const size_t e0 = (size_t)r * stride;
            for (int q = threadIdx.x; q < n; q += blockDim.x) {
                const size_t e = e0 + (guard || q < G ? q : q + a.nx);
                d0[e] = d1[e] = d2[e] = 0.0f;
            }
        }
        return;
    }
    /* neighbour q = (dx + 1) + 3 (dy + 1): its id (-1: none) and its tile's origin and size
     * in this cluster's frame (shifted by the box across a periodic side) */
    __shared__ int nb_c[9], nb_i0[9], nb_j0[9], nb_w[9], nb_h[9];
    __shared__ unsigned nb_live[9]; /* bit m: set m's tile was stored */
    static_assert(DECK_MAX_SPECIES <= 32, "a bit per tile set");
    const int c = blockIdx.x, cx = c % a.ncx, cy = c / a.ncx;
    if (!in_box(own, cx, cy))
        return;
    if (threadIdx.x < 9) {
        const int q = threadIdx.x;
        int nx = cx + q % 3 - 1, ny = cy + q / 3 - 1, sx = 0, sy = 0, ok = 1;
        if (nx < 0 || nx >= a.ncx) {
            ok &= px;
            sx = nx < 0 ? a.nx : -a.nx;
            nx = (nx + a.ncx) % a.ncx;
        }
        if (ny < 0 || ny >= a.ncy) {
            ok &= py;
            sy = ny < 0 ? a.ny : -a.ny;
            ny = (ny + a.ncy) % a.ncy;
        }
        const int n = nx + ny * a.ncx;
        const cluster_tile T = cluster_tile_of(a.x0, a.y0, a.ncx, n);
        nb_c[q] = ok ? n : -1;
        unsigned live = 0;
        for (int m = 0; ok && m < a.nset; m++)
            live |= (!a.live || a.live[m * ncl + n] ? 1u : 0u) << m;
        nb_live[q] = live;
        nb_i0[q] = T.i0 - sx;
        nb_j0[q] = T.j0 - sy;
        nb_w[q] = T.w;
        nb_h[q] = T.h;
    }
    __syncthreads();
    const int xlo = a.x0[cx], w = a.x0[cx + 1] - xlo, ylo = a.y0[cy], h = a.y0[cy + 1] - ylo;
    /* the cells the side neighbours' tiles reach: x < left, x >= right, y < below, y >= above
     * (the own tile covers every cell: its neighbours only those next to its sides) */
    const int left = nb_i0[3] + nb_w[3], right = nb_i0[5], below = nb_j0[1] + nb_h[1],
              above = nb_j0[7];
    for (int idx = threadIdx.x; idx < w * h; idx += blockDim.x) {
        const int i = xlo + idx % w, j = ylo + idx / w, ce = i - b.x + G, re = j - b.y + G;
        if (frame && acc_frame(ce, re, b.z, b.w))
            continue;
        const int qx0 = i < left ? 0 : 1, qx1 = i >= right ? 2 : 1;
        const int qy0 = j < below ? 0 : 1, qy1 = j >= above ? 2 : 1;
        unsigned long long v[3] = {0, 0, 0};
        for (int qy = qy0; qy <= qy1; qy++)
            for (int qx = qx0; qx <= qx1; qx++) {
                const int q = qx + 3 * qy;
                const int n = nb_c[q], li = i - nb_i0[q], lj = j - nb_j0[q];
                if (n < 0 || li < 0 || li >= nb_w[q] || lj < 0 || lj >= nb_h[q])
                    continue;
                const int tsz = nb_w[q] * nb_h[q];
                for (unsigned live = nb_live[q]; live; live &= live - 1u) {
                    const int m = __ffs(live) - 1;
                    const long long *t = a.tiles + m * a.tile_set + (size_t)n * a.tile_stride +
                                         li + lj * nb_w[q];
#pragma unroll
                    for (int k = 0; k < 3; k++)
                        v[k] += (unsigned long long)t[k * tsz];
                }
            }
        const size_t e = (size_t)re * stride + ce;
        d0[e] = (float)((double)(long long)v[0] * inv);
        d1[e] = (float)((double)(long long)v[1] * inv);
        d2[e] = (float)((double)(long long)v[2] * inv);
    }
}

static ktiles ktiles_of(const gpu_state *g, const int *live, int nset, int ncomp)
{
    return ktiles{g->tiles, live, nset, 3 * g->tsz_max, ncomp, g->tile_set, g->x0, g->y0,
                  g->cx_of, g->cy_of, g->ncx, g->ncy, g->nx, g->ny};
}

/* nset tile sets of ncomp components into g->acc (added when `add`), over the whole mesh or
 * with `frame` acc's frame only (acc_elements); live: the current's flags, or NULL (the
 * charge's tiles are all stored). */
static void tiles_sum(gpu_state *g, const int *live, int nset, int ncomp, int add, int frame)
{
    int framed;
    const size_t n = acc_elements(g, frame, &framed);
    k_tiles_sum<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(
        ktiles_of(g, live, nset, ncomp), add, g->acc, g->size, n, framed, g->stride, g->i0,
        g->j0, g->i1 - g->i0, g->j1 - g->j0);
    GPU_LAUNCHED(g, "k_tiles_sum");
}

/* Over NCCL ranks, once the border clusters are pushed (border_stream) and their walls have
 * run: J's fold along x sent while the rest is pushed. Only the border clusters'
 * tiles reach the guard columns (a tile reaches two cells past its cluster; the neighbour's
 * clusters hold nothing here), so their sums are the guards' whole fold, and integer adds
 * give the cells the same sums in any order (gpu_nccl_fold_x_send). */
static void fold_early(gpu_state *g, int nset)
{
    if (!(g->border_axes & 1))
        return;
    const int open = g->open;
    g->open = -1; /* timed as exchange, not as the push it overlaps */
    g->stream = g->border_stream;
    const int ex = gpu_exchange_begin(g);
    const size_t n = 2 * (size_t)g->rows * EMF_GUARD;
    k_tiles_guards<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(
        ktiles_of(g, g->tile_live, nset, 3), g->rows, g->i1 - g->i0, g->i0, g->j0,
        gpu_nccl_fold_x_area(g, 0), gpu_nccl_fold_x_area(g, 1));
    GPU_LAUNCHED(g, "k_tiles_guards");
    gpu_nccl_fold_x_send(g, 3);
    gpu_exchange_end(g, ex);
    g->stream = g->main_stream;
    g->open = open;
}

/* Whether acc's frame can be finished by k_tiles_frame alone: J's x fold went early and
 * nothing is exchanged or folded along y (no rank there, no periodic side), the x bands
 * apart. */
static int frame_at_once(const gpu_state *g)
{
    return g->fold_x_early && gpu_axis_kind(g, 1) == -1 && acc_frame_n(g) &&
           g->i1 - g->i0 >= 2 * EMF_GUARD;
}

/* The current of nset tile sets into J: at once on one rank, through acc over several:
 * there acc's frame is summed, folded and rounded by gpu_acc_finish on this stream while
 * inner_stream (with the field phase beside the sort) sums the cells that no fold reaches
 * straight into J (j_inner when done). */
static void tiles_current(gpu_state *g, int nset)
{
    g->j_behind = 0; /* J overwritten: the window's shifts it missed do not matter */
    const int frame = g->ranks > 1, inner = frame && g->overlap;
    const int4 box = {g->i0, g->j0, g->i1 - g->i0, g->j1 - g->j0};
    cudaStream_t s = g->stream;
    if (inner) {
        GPU_CK(cudaEventRecord(g->tiles_ready, g->stream));
        GPU_CK(cudaStreamWaitEvent(g->inner_stream, g->tiles_ready, 0));
        g->stream = g->inner_stream;
    }
    k_tiles_mesh<<<(unsigned)g->ncl + (frame ? 0 : 32), 256, 0, g->stream>>>(
        ktiles_of(g, g->tile_live, nset, 3), frame ? 0 : g->px, frame ? 0 : g->py, g->rows,
        g->stride, 1.0 / (double)g->scale, frame, g->own, box, g->j[0], g->j[1], g->j[2]);
    GPU_LAUNCHED(g, "k_tiles_mesh");
    if (inner) {
        GPU_CK(cudaEventRecord(g->j_inner, g->stream));
        g->stream = s;
    }
    if (frame && frame_at_once(g)) {
        const int ex = gpu_exchange_begin(g);
        GPU_CK(cudaStreamWaitEvent(g->stream, g->fold_sent, 0)); /* fold_early's message */
        gpu_exchange_end(g, ex);
        g->fold_x_early = 0;
        const size_t n = acc_frame_n(g);
        k_tiles_frame<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(
            ktiles_of(g, g->tile_live, nset, 3), n, g->stride, g->i0, g->j0, g->i1 - g->i0,
            g->j1 - g->j0, g->nb[SIDE_XMIN] >= 0 ? gpu_nccl_fold_x_area(g, 2) : NULL,
            g->nb[SIDE_XMAX] >= 0 ? gpu_nccl_fold_x_area(g, 3) : NULL, g->rows,
            1.0 / (double)g->scale, g->j[0], g->j[1], g->j[2]);
        GPU_LAUNCHED(g, "k_tiles_frame");
    } else if (frame) {
        tiles_sum(g, g->tile_live, nset, 3, 0, 1);
        gpu_acc_finish(g, 3, g->j[0], g->j[1], g->j[2], 1);
    }
}

static void set_smem(const void *kernel, size_t bytes)
{
    GPU_CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

void gpu_particles_setup(gpu_state *g, const pic_state *st)
{
    /* the charge kernel's one tile (64-bit entries); the particle kernel's six staged field
     * components and one split tile (3 components of 32-bit low and high words): 2 blocks of
     * GPU_MOVE_THREADS per multiprocessor while they stay under ~113 KB (clusters up to
     * ~48x48 cells) */
    const size_t limit = g->smem_optin - 2048;
    g->tszp = (g->tsz_max + 3) / 4 * 4;
    g->smem_rho = (size_t)g->tszp * sizeof(long long);
    g->smem_move = (size_t)6 * g->tszp * (sizeof(float) + sizeof(unsigned));
    g->scale = species_acc_scale(st->sp, st->nsp, st->f); /* the CPU's emf.acc scale */
    const size_t need = g->smem_move > g->smem_rho ? g->smem_move : g->smem_rho;
    if (need > limit) {
        empic_report(NULL, 0, "grid.cluster: clusters of up to %dx%d cells need %zu bytes "
                     "of shared memory per block, the GPU allows %zu; use smaller clusters",
                     g->wmax, g->hmax, need, limit);
        empic_exit(1);
    }
    for (int k = 0; k < 8; k++)
        set_smem(push_kernel(k & 1, k & 2, k & 4), g->smem_move);
    set_smem((const void *)k_rho, g->smem_rho);
}

void gpu_particles_border_setup(gpu_state *g)
{
    g->nborder = 0;
    if (!g->nccl)
        return;
    g->border_axes = 0;
    for (int axis = 0; axis < 2; axis++) /* the axes with a halo (gpu_nccl_hist_halo) */
        if (gpu_axis_kind(g, axis) == 0)
            g->border_axes |= 1 << axis;
    int *list = (int *)empic_alloc((size_t)g->nsp * g->ncl * sizeof(int), "border clusters");
    int n = 0, m = 0;
    for (int s = 0; s < g->nsp; s++) {
        if (!g->sp[s].mobile)
            continue;
        for (int c = 0; c < g->ncl; c++)
            if (cluster_border(g->own, g->border_axes, g->ncx, c))
                list[n++] = m * g->ncl + c;
        m++;
    }
    if (n) {
        g->border_entries = (int *)gpu_malloc(g, (size_t)n * sizeof(int), "border clusters");
        GPU_CK(cudaMemcpy(g->border_entries, list, (size_t)n * sizeof(int),
                          cudaMemcpyHostToDevice));
        /* the highest priority: its blocks start before those of the rest's push, launched
           beside them on the main stream */
        int least = 0, greatest = 0;
        GPU_CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        GPU_CK(cudaStreamCreateWithPriority(&g->border_stream, cudaStreamNonBlocking, greatest));
        GPU_CK(cudaEventCreateWithFlags(&g->border_ready, cudaEventDisableTiming));
        GPU_CK(cudaEventCreateWithFlags(&g->border_pushed, cudaEventDisableTiming));
        GPU_CK(cudaEventCreateWithFlags(&g->border_done, cudaEventDisableTiming));
        GPU_CK(cudaEventCreateWithFlags(&g->fold_sent, cudaEventDisableTiming));
        g->nborder = n;
    }
    free(list);
}

/* The particle kernel's block order: entry m ncl + c (cluster c of the m-th mobile species)
 * by decreasing particle count, in ORDER_CLASSES classes of the largest count, so that the
 * heaviest clusters start first and the light ones fill the kernel's tail. Only the speed
 * depends on it (each block writes its cluster's own outputs), so the atomics' order within a
 * class does not matter. One block, every ORDER_EVERY steps. */
#define ORDER_CLASSES 64
/* steps between two orderings: counts change little from one step to the next, and the
 * one-block kernel holds the GPU for ~5 us */
#define ORDER_EVERY 8

__device__ __forceinline__ int order_class(int n, int most)
{
    return most > 0 ? (int)((long long)(most - n) * (ORDER_CLASSES - 1) / most) : 0;
}

__global__ void __launch_bounds__(1024) k_cluster_order(const __grid_constant__ kpart a,
                                                        int nsp, int *order)
{
    const int ncl = a.ncl;
    __shared__ int cls[ORDER_CLASSES], wmax[32];
    const int tid = threadIdx.x, n = nsp * ncl;
    int most = 0;
    for (int k = tid; k < n; k += blockDim.x)
        most = max(most, a.sp[k / ncl].count[k % ncl]);
    for (int o = 16; o > 0; o >>= 1)
        most = max(most, __shfl_down_sync(FULL, most, o));
    if ((tid & 31) == 0)
        wmax[tid >> 5] = most;
    if (tid < ORDER_CLASSES)
        cls[tid] = 0;
    __syncthreads();
    most = 0;
    for (int w = 0; w < (int)blockDim.x / 32; w++)
        most = max(most, wmax[w]);
    for (int k = tid; k < n; k += blockDim.x)
        atomicAdd(&cls[order_class(a.sp[k / ncl].count[k % ncl], most)], 1);
    __syncthreads();
    if (tid == 0)
        for (int b = 0, at = 0; b < ORDER_CLASSES; b++) {
            const int m = cls[b];
            cls[b] = at;
            at += m;
        }
    __syncthreads();
    for (int k = tid; k < n; k += blockDim.x)
        order[atomicAdd(&cls[order_class(a.sp[k / ncl].count[k % ncl], most)], 1)] = k;
}

/* The parts of this step (gpu_split): each entry of more than `heavy` particles split into
 * its chunks while the slots last (its first part's slot in first[e], -1 for the entries
 * that run whole), the parts after each first queued for the spare blocks. A thread per
 * entry of k_cluster_order's order (heaviest first, as the blocks start) claims its slots
 * with one 64-bit atomic on queue[2..3]: the slots in the low word, the split entries in the
 * high word, so the parts queued before it are the difference. The entries that fit are the
 * first to claim: the queue has no gaps. queue[2] ends as the slots every split entry would
 * want (the host grows the slots to it). Only the speed depends on the split and its order
 * (each part's sums are added up in part order). */
__global__ void k_cluster_plan(const __grid_constant__ kpart a, int nsp, int heavy, int slots)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nsp * a.ncl)
        return;
    const int e = a.order[i], cnt = a.sp[e / a.ncl].count[e % a.ncl];
    const int parts = (cnt + GPU_CHUNK - 1) / GPU_CHUNK;
    if (cnt <= heavy) {
        a.split.first[e] = -1;
        return;
    }
    const unsigned long long at = atomicAdd((unsigned long long *)(a.split.queue + 2),
                                            (unsigned long long)parts | 1ull << 32);
    const int slot = (int)(at & 0xffffffffull), queued = slot - (int)(at >> 32);
    const int fits = slot + parts <= slots;
    a.split.first[e] = fits ? slot : -1;
    for (int k = 1; fits && k < parts; k++)
        a.split.parts[queued + k - 1] = make_int2(e, k);
    if (fits)
        atomicMax(&a.split.queue[1], queued + parts - 1);
}

/* Room for `want` part slots (the split's last plan asked for them; 1/4 more). */
static void split_grow(gpu_state *g, int want)
{
    gpu_split *x = &g->split;
    if (want <= x->slots)
        return;
    const int n = want + want / 4;
    GPU_CK(cudaStreamSynchronize(g->stream));
    void *old[] = {x->parts, x->tiles, x->hist, x->live, x->ke};
    for (size_t k = 0; k < sizeof old / sizeof old[0]; k++)
        if (old[k])
            GPU_CK(cudaFree(old[k]));
    if (x->slots)
        g->bytes -= (size_t)x->slots * (sizeof(int2) + 3 * g->tsz_max * sizeof(long long) +
                                        10 * sizeof(int) + sizeof(double));
    x->parts = (int2 *)gpu_malloc(g, (size_t)n * sizeof(int2), "cluster parts");
    x->tiles = (long long *)gpu_malloc(g, (size_t)n * 3 * g->tsz_max * sizeof(long long),
                                       "cluster parts");
    x->hist = (int *)gpu_malloc(g, (size_t)n * 9 * sizeof(int), "cluster parts");
    x->live = (int *)gpu_malloc(g, (size_t)n * sizeof(int), "cluster parts");
    x->ke = (double *)gpu_malloc(g, (size_t)n * sizeof(double), "cluster parts");
    x->slots = n;
}

/* A cluster that holds more than a block's share of the particles (2 blocks a
 * multiprocessor) and two chunks decides the particle kernel's length: such clusters run in
 * parts, on 2 spare blocks a multiprocessor (a->spare, a->split), where a segment can hold
 * that many; m mobile species, mob[k] the k-th. */
static void split_plan(gpu_state *g, const pic_state *st, kpart *a, int m, const int *mob)
{
    long long np = 0;
    int most = 0;
    for (int k = 0; k < m; k++) {
        np += st->sp[mob[k]].np;
        most = g->sp[mob[k]].cap_max > most ? g->sp[mob[k]].cap_max : most;
    }
    const long long share = np / (2 * g->nsm);
    const int heavy = share > 2 * GPU_CHUNK ? (int)(share < INT_MAX ? share : INT_MAX)
                                            : 2 * GPU_CHUNK;
    if (most <= heavy)
        return;
    gpu_split *x = &g->split;
    split_grow(g, *x->h_want); /* the last plan's want: its copy is behind the flags the host
                                  waited for */
    a->split = *x;
    a->spare = x->slots ? 2 * g->nsm : 0;
    GPU_CK(cudaMemsetAsync(x->queue, 0, 4 * sizeof(int), g->stream));
    k_cluster_plan<<<gpu_blocks((size_t)m * g->ncl, 256), 256, 0, g->stream>>>(*a, m, heavy,
                                                                               x->slots);
    GPU_LAUNCHED(g, "k_cluster_plan");
    GPU_CK(cudaMemcpyAsync(x->h_want, x->queue + 2, sizeof(int), cudaMemcpyDeviceToHost,
                           g->stream));
}

/* The particle kernel for m mobile species (mob[k]: the k-th): one launch, or the border
 * clusters on border_stream beside the rest (their launch alone would leave most
 * multiprocessors idle), their walls run and their histograms on their way as soon as they
 * are pushed (not with parts: spare blocks take any entry's; not before a window shift that
 * gpu_window_particles completes after the push: immobile species, atoms at rest). On a
 * window shift's step the kernel shifts the particles as it stores them. Returns whether
 * the border clusters went first. */
static int push_launch(gpu_state *g, const pic_state *st, kpart *a, int m, const int *mob,
                       int want_ke)
{
    const int shift = g->window && st->window_next;
    const int border = g->nborder > 0 && !a->spare && !(shift && gpu_window_after_push(g));
    a->border = g->border_entries;
    a->own = g->own;
    a->border_axes = g->border_axes;
    for (int run = border ? PUSH_BORDER : PUSH_ALL; run <= (border ? PUSH_REST : PUSH_ALL);
         run++) {
        a->which = run;
        a->flags = run == PUSH_BORDER ? NULL : g->flags;
        if (run == PUSH_BORDER)
            gpu_border_enter(g);
        const unsigned blocks =
            (unsigned)(run == PUSH_BORDER ? g->nborder : a->spare + m * g->ncl);
        void *args[] = {a};
        GPU_CK(cudaLaunchKernel(push_kernel(want_ke, a->spare > 0, shift), dim3(blocks),
                                dim3(GPU_MOVE_THREADS), args, g->smem_move, g->stream));
        GPU_LAUNCHED(g, "k_push_move");
        g->stream = g->main_stream;
    }
    if (!border)
        return 0;
    /* queued after the rest's launch (NCCL's calls cost the host ~10 us each, which the rest's
       start would wait for): the border clusters' walls, which make their histograms and
       tiles final, then the halo and J's fold */
    g->stream = g->border_stream;
    gpu_walls_clusters(g, st, m, mob, WALLS_BORDER);
    gpu_sort_halo_early(g, st); /* and back to the main stream */
    fold_early(g, m);
    /* the border clusters' tiles, for the current */
    GPU_CK(cudaStreamWaitEvent(g->main_stream, g->border_pushed, 0));
    return 1;
}

void gpu_particles(void *ctx, pic_state *st, int want_ke, double *kinetic)
{
    gpu_state *g = (gpu_state *)ctx;
    const emf *f = st->f;
    if (g->ion_open)
        EMPIC_DIE("internal: the push before the last step's ionization ended (gpu_ionize_end)");
    if (!g->rest_valid)
        gpu_rest_flags(g);
    gpu_fields_join(g); /* E(n), B(n) */
    gpu_debug(g, st, DBG_BEFORE_MOVE);
    kpart a;
    memset(&a, 0, sizeof a);
    int m = 0, mob[DECK_MAX_SPECIES]; /* the mobile species; m-th: tile set m */
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        if (kinetic)
            kinetic[s] = 0.0;
        if (!d->mobile)
            continue;
        a.sp[m] = kspecies{d->xy,    d->uxy,   d->uzw,  d->cell,
                           d->code,  d->start, d->count, d->hist, g->tiles + m * g->tile_set,
                           g->tile_live + (size_t)m * g->ncl,
                           g->partial + (size_t)m * g->ncl, boris_qdt2m(f->dt, d->qm),
                           move_step_of(f->dt, f->dx, f->dy, d->q), d->z,
                           gpu_rest_of(g, s), d->cold, pbnd_sides(d->walls.bnd)};
        mob[m++] = s;
    }
    for (int k = 0; k < 3; k++) {
        a.f[k] = g->e[k];
        a.f[3 + k] = g->b[k];
    }
    for (int k = 0; k < 6; k++) {
        a.ext[k] = st->ext.u[k];
        a.x[k] = g->ext[k];
    }
    a.order = g->order;
    a.x0 = g->x0;
    a.y0 = g->y0;
    a.ncl = g->ncl;
    a.ncx = g->ncx;
    a.stride = g->stride;
    a.off = g->off;
    a.nx = g->nx;
    a.ny = g->ny;
    a.tszp = g->tszp;
    a.tile_stride = 3 * g->tsz_max;
    a.scale = g->scale;
    int t = gpu_tic(g, st), border = 0;
    if (m > 0) {
        if (g->order_age++ % ORDER_EVERY == 0) {
            k_cluster_order<<<1, 1024, 0, g->stream>>>(a, m, g->order);
            GPU_LAUNCHED(g, "k_cluster_order");
        }
        split_plan(g, st, &a, m, mob);
        border = push_launch(g, st, &a, m, mob, want_ke);
        g->rest_valid = 0; /* the atoms moved */
        /* edge clusters of non-periodic sides */
        gpu_walls_clusters(g, st, m, mob, border ? WALLS_REST : WALLS_ALL);
    } else {
        gpu_sort_flags_clear(g); /* the particle kernel's work otherwise */
    }
    gpu_toc(g, t, PH_DEPOSIT);
    /* the energy balance's sums before the E step (E(n), B(n+1/2)), which E's update waits
       for (flows_done), while the particles are pushed: after the border clusters' work on
       their stream when they went first (on the field stream they would wait for the
       push's blocks, launched before them), else on the field stream */
    if (f->fb) {
        g->stream = border ? g->border_stream : g->overlap ? g->field_stream : g->main_stream;
        gpu_fbnd_flows(g, st, 0, g->bn);
        GPU_CK(cudaEventRecord(g->flows_done, g->stream));
        g->stream = g->main_stream;
    }
    /* the tiles of all species to J: fixed-point sums, guard deposits folded, one rounding
     * (the field phase's first work, beside the sort) */
    gpu_fields_begin(g);
    t = gpu_tic(g, st);
    tiles_current(g, m);
    gpu_toc(g, t, PH_DEPOSIT);
    gpu_fields_end(g);
    if (want_ke && m > 0) {
        const size_t n = (size_t)m * g->ncl;
        GPU_CK(cudaMemcpyAsync(g->h_partial, g->partial, n * sizeof(double),
                               cudaMemcpyDeviceToHost, g->stream));
        gpu_harvest(g, st);
        comm_sum_double(g->h_partial, n); /* exact: one rank per cluster */
        for (int k = 0; k < m; k++) {
            double sum = 0.0;
            for (int c = 0; c < g->ncl; c++)
                sum += g->h_partial[(size_t)k * g->ncl + c];
            kinetic[mob[k]] = kinetic_total(sum, g->sp[mob[k]].m, f->dx, f->dy);
        }
    }
    gpu_debug(g, st, DBG_AFTER_MOVE);
    gpu_sort_prepare(g, st);
}

void gpu_particles_rho(gpu_state *g, int s, float *dst)
{
    int first = 1;
    for (int k = 0; k < g->nsp; k++) {
        if (s >= 0 && k != s)
            continue;
        const gpu_species *d = &g->sp[k];
        krho a = {d->xy, d->uzw, d->cell, d->start, d->count, g->tiles, g->x0, g->y0,
                  g->ncx, g->tszp, 3 * g->tsz_max, d->q, g->scale, d->z};
        k_rho<<<g->ncl, GPU_THREADS, g->smem_rho, g->stream>>>(a);
        GPU_LAUNCHED(g, "k_rho");
        tiles_sum(g, NULL, 1, 1, !first, 0);
        first = 0;
    }
    gpu_acc_finish(g, 1, dst, NULL, NULL, 0);
}
