/* gpu_sort.cu - Kong's incremental bi-cluster sort on the device (Kong et al. 2011 §2.4):
 * the CPU's four passes of cluster pairs (the twin of src/cpu/cpu_sort.c).
 *
 * A prepare kernel reads the migration histograms of the last move and gives, per cluster,
 * the room it needs during the four passes and how many particles leave it in each pass
 * (+x, -x, +y, -y): cluster.h's sort_need. The host reads the flags back: whether a cluster
 * would overflow (then the segments are re-laid on the device before any particle moves, so
 * none is lost), the largest leaver count (the size of the lists; 0: nothing crossed a
 * cluster border) and the particles dropped before. Each pass runs one block per bi-cluster
 * and species; a pair with no leavers returns at once. A block scans the codes of both
 * clusters, lists their leavers and the stayers behind each new end in slot order (ordered
 * compaction: per-thread bit masks, a block-wide prefix sum of their counts), moves the
 * leavers to the end of the other cluster and fills the holes from the tail in that order:
 * the result does not depend on thread scheduling, so two runs sort identically.
 * With drops (walls, moving window) the flags are only known after the drops: the passes are
 * launched before the host reads them, with the last step's list size, and a species whose
 * flags ask for a rearrangement or longer lists leaves them untouched and is sorted again
 * once the host has read them, so the GPU does not wait for the round trip. Over several
 * ranks the histograms around each rank's share come from its neighbours first (staged:
 * through the host; NCCL: on the device, the border counts copied down behind an event), and
 * each shifted pass along a split axis also runs across the rank borders (border_pass); over
 * NCCL the passes inside the rank along x are launched before the flags are read, the border
 * passes after. */
#include "gpu_internal.h"
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

/* The border of this rank's share along `axis` that border_pass crosses: the axis' n
 * clusters, this rank's [lo0, hi0) along it, the m rows (columns) o0 .. o0 + m across it, the
 * ranks below and above; m = 0 when the axis is this rank's alone (no border pass). */
typedef struct {
    int axis, n, lo0, hi0, o0, m, up, down, ncx, ncy;
} bgeom;

static bgeom bgeom_of(const clusters *cl, int axis)
{
    bgeom b;
    b.axis = axis;
    b.n = axis ? cl->ncy : cl->ncx;
    b.lo0 = axis ? cl->cy0 : cl->cx0;
    b.hi0 = axis ? cl->cy1 : cl->cx1;
    b.o0 = axis ? cl->cx0 : cl->cy0;
    b.m = b.hi0 - b.lo0 == b.n ? 0 : (axis ? cl->cx1 : cl->cy1) - b.o0;
    b.up = cl->nb[2 * axis + 1];
    b.down = cl->nb[2 * axis];
    b.ncx = cl->ncx;
    b.ncy = cl->ncy;
    return b;
}

/* The leavers across the border at row (column) o0 + o, from the summed histograms
 * (sort_need): (my +1 leavers up, my -1 leavers down, the -1 leavers of the rank above's
 * cluster, the +1 leavers of the rank below's); 0 toward a box edge. The same code on the
 * host (staged) and the device (NCCL). */
__host__ __device__ static int4 border_leavers(const int *hist, const bgeom &b, int o)
{
    int lv[4], su = 0, sd = 0, gu = 0, gd = 0;
    const int w = b.o0 + o, lvp = b.axis ? 2 : 0; /* sort_need's +1 leavers */
    const int at[4] = {b.hi0 - 1, b.hi0 % b.n, b.lo0, (b.lo0 + b.n - 1) % b.n};
    int k[4];
    for (int q = 0; q < 4; q++)
        k[q] = b.axis ? w + at[q] * b.ncx : at[q] + w * b.ncx;
    if (b.up >= 0) { /* my +1 leavers up, the -1 leavers of the rank above's cluster */
        sort_need(hist, 0, k[0] % b.ncx, k[0] / b.ncx, b.ncx, b.ncy, lv);
        su = lv[lvp];
        sort_need(hist, 0, k[1] % b.ncx, k[1] / b.ncx, b.ncx, b.ncy, lv);
        gu = lv[lvp + 1];
    }
    if (b.down >= 0) {
        sort_need(hist, 0, k[2] % b.ncx, k[2] / b.ncx, b.ncx, b.ncy, lv);
        sd = lv[lvp + 1];
        sort_need(hist, 0, k[3] % b.ncx, k[3] / b.ncx, b.ncx, b.ncy, lv);
        gd = lv[lvp];
    }
    return make_int4(su, sd, gu, gd);
}

/* Entry q of the border counts: border_leavers along x for q < bx.m, then along y. */
__device__ static int4 border_count(const int *hist, const bgeom &bx, const bgeom &by, int q)
{
    return q < bx.m ? border_leavers(hist, bx, q) : border_leavers(hist, by, q - bx.m);
}

/* Also room[cy] = cap - need of the clusters of column `front` (the moving window's
 * injection column): the count after the passes is at most need, so an injection of up to
 * room[cy] particles needs no rearrangement and no read-back of the counts. The species
 * (blockIdx.y) in one launch; over NCCL ranks, blocks from nb on give the species' border
 * counts (border_count, at out + sp (bx.m + by.m)) in the same launch. */
typedef struct {
    const int *hist, *count, *cap;
    int *need;
    int4 *movers;
    int *flags, *room;
    int sp;
} kprep;

typedef struct {
    kprep s[DECK_MAX_SPECIES];
} kprep_all;

__global__ void k_sort_prepare(const __grid_constant__ kprep_all all, int front, int nx,
                               int ny, int4 own, int nb, bgeom bx, bgeom by, int4 *out)
{
    const kprep &a = all.s[blockIdx.y];
    if ((int)blockIdx.x >= nb) {
        const int q = (blockIdx.x - nb) * blockDim.x + threadIdx.x, per = bx.m + by.m;
        if (q < per)
            out[(size_t)a.sp * per + q] = border_count(a.hist, bx, by, q);
        return;
    }
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nx * ny)
        return;
    const int *hist = a.hist, *count = a.count, *cap = a.cap;
    int *need = a.need, *flags = a.flags, *room = a.room;
    int4 *movers = a.movers;
    if (!in_box(own, c % nx, c / nx)) { /* another rank's: empty here */
        need[c] = 0;
        movers[c] = make_int4(0, 0, 0, 0);
        if (c % nx == front)
            room[c / nx] = 0; /* nothing to inject here */
        return;
    }
    int lv[4];
    need[c] = sort_need(hist, count[c], c % nx, c / nx, nx, ny, lv);
    if (need[c] > cap[c])
        atomicAdd(&flags[0], 1);
    if (c % nx == front)
        room[c / nx] = cap[c] - need[c];
    movers[c] = make_int4(lv[0], lv[1], lv[2], lv[3]);
    int m = max(max(lv[0], lv[1]), max(lv[2], lv[3]));
    if (m > 0)
        atomicMax(&flags[1], m);
}

typedef struct {
    gpu_parts p;
    int *start, *count;
    const int *cap;
    const int4 *movers;
    int *flags;
    /* across rank borders (gpu_border): the staging areas (0: leavers sent up, 1: sent down,
     * 2: received from up, 3: from down) and the table of the m border clusters (extraction
     * entries, then the received leavers' (start, count) per remote cluster) */
    gpu_parts area[4];
    const int4 *table;
    int m;
} ksort;

/* Slots of a cluster's segment above which a species is wide (ksorts.wide): its border
 * extraction runs blocks of SORT_WIDE_THREADS, and a pass's pairs of more than
 * SORT_WIDE_SLOTS codes to scan (a foil's clusters of 260 k particles) are left by the
 * pass's blocks of GPU_THREADS to one block of SORT_WIDE_THREADS each (k_sort_heavy): one
 * block of GPU_THREADS per pair ran ~90 us a pass, issue-bound on its 8 warps, and blocks of
 * SORT_WIDE_THREADS for every pair spent a pass launching the empty ones. */
#define SORT_WIDE_SLOTS 65536
#define SORT_WIDE_THREADS 1024
/* The species of a pass whose clusters hold on average at most SORT_SMALL_SLOTS particles
 * (a laser-wakefield gas of a few per cell) run blocks of 128 threads, 8 per multiprocessor:
 * a pair's codes take one trip of them and twice as many pairs are under way (the LWFA
 * decks' sort 6-15 % shorter); crowded clusters (Kong's decks, 38 k particles) keep blocks of
 * GPU_THREADS, 4 per multiprocessor, whose trips are half as many. */
#define SORT_SMALL_SLOTS (32 * 128)

/* The species a pass sorts (blockIdx.y) and their lists in device memory when they do not
 * fit in shared memory. */
typedef struct {
    ksort s[DECK_MAX_SPECIES];
    int *lists;  /* NULL: lists in shared memory */
    int lcap;    /* entries per list */
    int wide;    /* some species' segments exceed SORT_WIDE_SLOTS (ksorts_add) */
    int crowded; /* some species' clusters average more than SORT_SMALL_SLOTS particles */
    int *heavy;  /* wide: the pass's heavy pairs ([0] their count, [1] k_sort_heavy's blocks
                    done, then blockIdx.x | blockIdx.y << 24 of each) */
} ksorts;

/* Write slot i + b for each set bit b of mask, in bit order, from list[at] on. */
__device__ __forceinline__ void list_bits(int *list, int at, int cap, unsigned mask, int i)
{
    while (mask) {
        const int b = __ffs(mask) - 1;
        mask &= mask - 1u;
        if (at < cap)
            list[at] = i + b;
        at++;
    }
}

/* Codes i .. i+31 of a cluster of n (i a multiple of 16, i < n: 16-byte loads): bit b of lm
 * is set when slot i + b leaves (its field at `shift` is dir), of fm when it stays but lies
 * at or behind keep (a filler of the holes the leavers leave in front of keep). */
__device__ __forceinline__ void code_masks(const uint8_t *code, int i, int n, int keep,
                                           unsigned dir, int shift, unsigned &lm,
                                           unsigned &fm)
{
    const uint4 v0 = *(const uint4 *)(code + i);
    const uint4 v1 = i + 16 < n ? *(const uint4 *)(code + i + 16) : make_uint4(0, 0, 0, 0);
    const unsigned wd[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
    const unsigned want = dir * 0x01010101u;
    unsigned m = 0;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const unsigned e = __vcmpeq4((wd[q] >> shift) & 0x03030303u, want); /* 0xff: leaver */
        m |= ((e >> 7 & 1u) | (e >> 14 & 2u) | (e >> 21 & 4u) | (e >> 28 & 8u)) << (4 * q);
    }
    const int left = n - i, front = keep - i;
    const unsigned valid = left >= 32 ? ~0u : (1u << left) - 1u;
    const unsigned tail = front <= 0 ? ~0u : (front >= 32 ? 0u : ~((1u << front) - 1u));
    lm = m & valid;
    fm = ~m & valid & tail;
}

/* Ordered compaction of a bit stream over `groups` groups of 32 slots, for whole clusters
 * (k_sort_extract): mask(g) gives group g's bits, emit(at, mask, 32 g) places them from
 * position at on; returns their count (the same in all threads). Warp w takes the groups
 * [w span, (w + 1) span), lane l of its trip t group w span + 32 t + l, so the positions
 * follow the slots whatever the scheduling. A first pass counts each warp's range
 * (coalesced loads, no block barrier) and notes the trips with a set bit, one block-wide sum
 * of the warps' counts gives their offsets, and a second pass, from the caches, places the
 * bits of those trips with warp-wide scans: a foil's cluster of 260 k particles is 32 trips
 * of a 256-thread block, which block-wide scans per trip made 32 rounds of barriers. (A
 * pass's pairs mostly fit one trip: k_sort_pass keeps one scan per trip, the cheaper
 * there.) wsum: 32 ints of shared memory. */
template <typename Mask, typename Emit>
__device__ __forceinline__ int ordered_compact(int groups, Mask mask, Emit emit, int *wsum)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int span = ((groups + nw - 1) / nw + 31) / 32 * 32;
    const int g0 = min(wid * span, groups), g1 = min(g0 + span, groups);
    int cnt = 0;
    unsigned long long busy = 0; /* bit t: this lane's group of trip t has a set bit */
#pragma unroll 2
    for (int t = 0; g0 + 32 * t + lane < g1; t++) {
        const unsigned m = mask(g0 + 32 * t + lane);
        cnt += __popc(m);
        busy |= (unsigned long long)(m != 0 || t >= 64) << min(t, 63);
    }
    cnt = __reduce_add_sync(0xffffffffu, cnt);
    if (lane == 0)
        wsum[wid] = cnt;
    __syncthreads();
    int at = 0, total = 0;
    for (int w = 0; w < nw; w++) {
        at += w < wid ? wsum[w] : 0;
        total += wsum[w];
    }
    for (int t = 0; g0 + 32 * t < g1; t++) {
        if (!__any_sync(0xffffffffu, busy >> min(t, 63) & 1u))
            continue; /* no set bit in the warp's trip (beyond 64 trips: always looked at) */
        const int g = g0 + 32 * t + lane;
        const unsigned m = g < g1 ? mask(g) : 0u;
        const int c = __popc(m);
        int inc = c;
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, inc, o);
            if (lane >= o)
                inc += v;
        }
        emit(at + inc - c, m, 32 * g);
        at += __shfl_sync(0xffffffffu, inc, 31);
    }
    return total;
}

/* gpu_block_scan of two values with one pair of barriers; warp_tot: two per warp. */
__device__ __forceinline__ void block_scan2(unsigned long long &a, unsigned long long &b,
                                            unsigned long long *warp_tot,
                                            unsigned long long &ta, unsigned long long &tb)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    unsigned long long ia = a, ib = b, ba = 0, bb = 0;
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned long long xa = __shfl_up_sync(0xffffffffu, ia, o),
                                 xb = __shfl_up_sync(0xffffffffu, ib, o);
        if (lane >= o)
            ia += xa, ib += xb;
    }
    if (lane == 31)
        warp_tot[2 * wid] = ia, warp_tot[2 * wid + 1] = ib;
    __syncthreads();
    ta = tb = 0;
    for (int w = 0; w < nw; w++) {
        const unsigned long long wa = warp_tot[2 * w], wb = warp_tot[2 * w + 1];
        ba += w < wid ? wa : 0ull;
        bb += w < wid ? wb : 0ull;
        ta += wa;
        tb += wb;
    }
    __syncthreads(); /* warp_tot read by all before the next scan writes it */
    a = ba + ia - a;
    b = bb + ib - b;
}

/* The codes of pair side a (segment at as, its first sa scanned) and b (bs, sb) in slot
 * order, 32 G per thread and trip, into the lists of k_sort_pass: La, Lb the leavers toward
 * the other side, Fa, Fb the stayers behind keep_a, keep_b (the fillers); nla .. nfb: the
 * list lengths, the same in all threads. G = 1: the four counts of a trip in one scan (16
 * bits each: at most 32 blockDim.x); G > 1 (wide blocks, a foil's pairs of 260 k particles a
 * side): G times fewer trips, each a dependent load and a scan, in two scans of 32-bit
 * counts. wtot: blockDim.x / 32 entries, twice that for G > 1. */
template <int G>
__device__ __forceinline__ void pair_lists(const gpu_parts &pa, int as, int sa, int keep_a,
                                           const gpu_parts &pb, int bs, int sb, int keep_b,
                                           int shift, int lcap, int *La, int *Fa, int *Lb,
                                           int *Fb, unsigned long long *wtot, int &nla,
                                           int &nfa, int &nlb, int &nfb)
{
    for (int i0 = 0; i0 < max(sa, sb); i0 += 32 * G * blockDim.x) {
        const int i = i0 + 32 * G * threadIdx.x;
        unsigned la[G], fa[G], lb[G], fb[G];
        int cla = 0, cfa = 0, clb = 0, cfb = 0; /* this thread's counts */
#pragma unroll
        for (int h = 0; h < G; h++) {
            la[h] = fa[h] = lb[h] = fb[h] = 0;
            if (i + 32 * h < sa)
                code_masks(pa.code + as, i + 32 * h, sa, keep_a, 1u, shift, la[h], fa[h]);
            if (i + 32 * h < sb)
                code_masks(pb.code + bs, i + 32 * h, sb, keep_b, 2u, shift, lb[h], fb[h]);
            cla += __popc(la[h]);
            cfa += __popc(fa[h]);
            clb += __popc(lb[h]);
            cfb += __popc(fb[h]);
        }
        int pla, pfa, plb, pfb, tla, tfa, tlb, tfb; /* before this thread; the trip's */
        if (G == 1) {
            unsigned long long tot, pre = gpu_block_scan(
                (unsigned long long)cla | (unsigned long long)cfa << 16 |
                    (unsigned long long)clb << 32 | (unsigned long long)cfb << 48,
                wtot, &tot);
            pla = (int)(pre & 0xffffu), pfa = (int)(pre >> 16 & 0xffffu);
            plb = (int)(pre >> 32 & 0xffffu), pfb = (int)(pre >> 48);
            tla = (int)(tot & 0xffffu), tfa = (int)(tot >> 16 & 0xffffu);
            tlb = (int)(tot >> 32 & 0xffffu), tfb = (int)(tot >> 48);
        } else {
            unsigned long long x = (unsigned long long)cla | (unsigned long long)cfa << 32;
            unsigned long long y = (unsigned long long)clb | (unsigned long long)cfb << 32;
            unsigned long long tx, ty;
            block_scan2(x, y, wtot, tx, ty);
            pla = (int)(x & 0xffffffffu), pfa = (int)(x >> 32);
            plb = (int)(y & 0xffffffffu), pfb = (int)(y >> 32);
            tla = (int)(tx & 0xffffffffu), tfa = (int)(tx >> 32);
            tlb = (int)(ty & 0xffffffffu), tfb = (int)(ty >> 32);
        }
        pla += nla, pfa += nfa, plb += nlb, pfb += nfb;
#pragma unroll
        for (int h = 0; h < G; h++) {
            list_bits(La, pla, lcap, la[h], i + 32 * h);
            list_bits(Fa, pfa, lcap, fa[h], i + 32 * h);
            list_bits(Lb, plb, lcap, lb[h], i + 32 * h);
            list_bits(Fb, pfb, lcap, fb[h], i + 32 * h);
            pla += __popc(la[h]), pfa += __popc(fa[h]);
            plb += __popc(lb[h]), pfb += __popc(fb[h]);
        }
        nla += tla, nfa += tfa, nlb += tlb, nfb += tfb;
    }
}

/* The moves of k_sort_pass once the lists are made: a's leavers to b's end, the holes they
 * leave in front of keep_a filled; then b's leavers to a's end, b's holes filled by its own
 * stayers behind keep_b, then by the arrivals behind them. A staged (remote) side is only
 * read (ra: a, rb: b). `clear` clears the pass axis' bits of the moved codes. */
__device__ __forceinline__ void pair_moves(const gpu_parts &pa, const gpu_parts &pb, bool ra,
                                           bool rb, int as, int bs, int nb, int keep_a,
                                           int keep_b, int m_ab, int m_ba, int nfa, int nfb,
                                           const int *La, const int *Fa, const int *Lb,
                                           const int *Fb, unsigned clear)
{
    /* a -> b: leaver r to b's end; its slot, if in front of keep_a, is hole r (nfa holes) */
    for (int r = threadIdx.x; r < m_ab; r += blockDim.x) {
        const int src = as + (ra ? r : La[r]);
        gpu_part p = gpu_parts_get(pa, src), f;
        const bool fill = r < nfa;
        if (fill)
            f = gpu_parts_get(pa, as + Fa[r]);
        p.code &= clear;
        if (!rb)
            gpu_parts_put(pb, bs + nb + r, p);
        if (fill)
            gpu_parts_put(pa, src, f);
    }
    __syncthreads();
    /* b -> a: b's fillers are its own stayers behind keep_b, then the arrivals behind it */
    const int arrive = max(nb, keep_b), nfill = rb ? 0 : nfb + nb + m_ab - arrive;
    for (int r = threadIdx.x; r < m_ba; r += blockDim.x) {
        const int src = bs + (rb ? r : Lb[r]);
        gpu_part p = gpu_parts_get(pb, src), f;
        const bool fill = r < nfill;
        if (fill)
            f = gpu_parts_get(pb, bs + (r < nfb ? Fb[r] : arrive + r - nfb));
        p.code &= clear;
        if (!ra)
            gpu_parts_put(pa, as + keep_a + r, p);
        if (fill)
            gpu_parts_put(pb, src, f);
    }
}

/* One pass: pairs (lo, lo+1), lo = first, first+2, ... along x (axis 0) or y (axis 1), of
 * species blockIdx.y. The low cluster a sends its +1 leavers to the end of the high cluster
 * b and fills its holes from its tail; then b sends its -1 leavers to the end of a and fills
 * its holes from its tail, which now ends with a's leavers (stayers there: their field is
 * cleared). Both clusters' codes are scanned at once, before anything moves (b's leavers and
 * tail stayers among its own particles do not depend on what arrives), and the leavers,
 * holes and fillers are taken in slot order (ordered compaction: per-thread bit masks, a
 * block-wide prefix sum of their counts; a hole is one of the first leavers), so the result
 * does not depend on thread scheduling. Each thread then loads a leaver and the filler of
 * its hole before it stores either: two dependent memory round trips per pair. 4 blocks per
 * multiprocessor (64 registers, a few bytes spilled) keep more loads in flight than 3 blocks
 * of 80 registers (the sort of the hot decks measured 3-9 % shorter). THREADS: GPU_THREADS
 * (k_sort_pass, pair q of species y, its lists at `slot` when in device memory) or
 * SORT_WIDE_THREADS (k_sort_heavy). */
template <int THREADS>
__device__ __forceinline__ void sort_pair(const ksorts &all, int q, int y, int slot,
                                          int *slist, unsigned long long *wtot, int axis,
                                          int first, int n, int ncx, int periodic, int4 own,
                                          int border, int hipos, int3 span)
{
    const ksort &a = all.s[y];
    const int pairs = n / 2, tid = threadIdx.x;
    const int k = ((span.x + q % span.y) % pairs + pairs) % pairs; /* pass_span's pairs */
    const int lo = first + 2 * k, other = span.z + q / span.y;
    int hi = lo + 1;
    if (hi == n) {
        if (!periodic)
            return;
        hi = 0;
    }
    const int ca = axis ? other + lo * ncx : lo + other * ncx;
    const int cb = axis ? other + hi * ncx : hi + other * ncx;
    /* local pairs, or (border) the pairs of a cluster here and one of a neighbour rank,
     * whose leavers wait in a staging area (remote side: no scan, no store) */
    const bool ra = !in_box(own, ca % ncx, ca / ncx), rb = !in_box(own, cb % ncx, cb / ncx);
    if (border ? ra == rb : ra || rb)
        return;
    int as, na, bs, nb, m_ab, m_ba, ar = 0; /* ar: the staging area of the remote side */
    if (ra || rb) {
        const int r = (ra ? lo : hi) == hipos, at = 2 * a.m + (r ? 0 : a.m) + other -
                                                   (axis ? own.x : own.z);
        const int4 e = a.table[at];
        ar = r ? 2 : 3;
        if (ra)
            as = e.x, na = m_ab = e.y;
        else
            bs = e.x, nb = m_ba = e.y;
    }
    /* references into the (grid constant) parameters: no copies of the pointers */
    const gpu_parts &pa = ra ? a.area[ar] : a.p, &pb = rb ? a.area[ar] : a.p;
    if (!ra) {
        const int4 ma = a.movers[ca];
        as = a.start[ca], na = a.count[ca], m_ab = axis ? ma.z : ma.x; /* +1 leavers */
    }
    if (!rb) {
        const int4 mb = a.movers[cb];
        bs = a.start[cb], nb = a.count[cb], m_ba = axis ? mb.w : mb.y; /* -1 leavers */
    }
    const int lcap = all.lcap;
    if ((m_ab == 0 && m_ba == 0) || a.flags[0] > 0 || a.flags[1] > lcap)
        return; /* nothing to move, or this species waits for a rearrangement or longer lists */
    const int sa = m_ab && !ra ? na : 0, sb = m_ba && !rb ? nb : 0; /* codes to scan */
    if (THREADS != SORT_WIDE_THREADS && all.heavy && sa + sb > SORT_WIDE_SLOTS) {
        if (tid == 0) /* to k_sort_heavy */
            all.heavy[2 + atomicAdd(&all.heavy[0], 1)] = q | y << 24;
        return;
    }
    int *La = all.lists ? all.lists + (size_t)slot * 4 * lcap : slist;
    int *Fa = La + lcap, *Lb = Fa + lcap, *Fb = Lb + lcap;
    const int keep_a = na - m_ab, keep_b = nb + m_ab - m_ba, shift = axis ? 2 : 0;
    int nla = 0, nfa = 0, nlb = 0, nfb = 0; /* list lengths so far (the same in all threads) */
    pair_lists<THREADS == SORT_WIDE_THREADS ? 4 : 1>(pa, as, sa, keep_a, pb, bs, sb, keep_b,
                                                      shift, lcap, La, Fa, Lb, Fb, wtot, nla,
                                                      nfa, nlb, nfb);
    __syncthreads();
    if (ra)
        nla = m_ab; /* a staged side's particles all leave, in their order */
    if (rb)
        nlb = m_ba;
    if (nla != m_ab || nlb != m_ba || (!rb && nb + m_ab > a.cap[cb]) ||
        (!ra && keep_a + m_ba > a.cap[ca])) {
        if (tid == 0)
            atomicOr(&a.flags[2], 1);
        return;
    }
    const unsigned clear = ~(3u << shift);
    pair_moves(pa, pb, ra, rb, as, bs, nb, keep_a, keep_b, m_ab, m_ba, nfa, nfb, La, Fa, Lb, Fb,
               clear);
    if (tid == 0) {
        if (!ra)
            a.count[ca] = keep_a + m_ba;
        if (!rb)
            a.count[cb] = keep_b;
    }
}

/* Blocks of THREADS, BLOCKS per multiprocessor (SORT_SMALL_SLOTS). */
template <int THREADS, int BLOCKS>
__global__ void __launch_bounds__(THREADS, BLOCKS)
    k_sort_pass(const __grid_constant__ ksorts all, int axis, int first, int n, int ncx,
                int periodic, int4 own, int border, int hipos, int3 span)
{
    extern __shared__ int slist[];
    __shared__ unsigned long long wtot[THREADS / 32]; /* the compaction's warp totals */
    sort_pair<THREADS>(all, blockIdx.x, blockIdx.y, blockIdx.y * gridDim.x + blockIdx.x, slist,
                       wtot, axis, first, n, ncx, periodic, own, border, hipos, span);
}

/* The heavy pairs k_sort_pass left (all.heavy), a block of SORT_WIDE_THREADS each in turn;
 * the last block to finish clears the list for the next pass. */
__global__ void __launch_bounds__(SORT_WIDE_THREADS, 1)
    k_sort_heavy(const __grid_constant__ ksorts all, int axis, int first, int n, int ncx,
                 int periodic, int4 own, int border, int hipos, int3 span)
{
    extern __shared__ int slist[];
    __shared__ unsigned long long wtot[2 * SORT_WIDE_THREADS / 32];
    const int nh = all.heavy[0];
    for (int h = blockIdx.x; h < nh; h += gridDim.x) {
        const int e = all.heavy[2 + h];
        sort_pair<SORT_WIDE_THREADS>(all, e & 0xffffff, e >> 24, blockIdx.x, slist, wtot,
                                     axis, first, n, ncx, periodic, own, border, hipos, span);
        __syncthreads(); /* the lists and warp totals free for the next pair */
    }
    __syncthreads(); /* every warp has read the count */
    if (threadIdx.x == 0 && atomicAdd(&all.heavy[1], 1) == (int)gridDim.x - 1)
        all.heavy[0] = all.heavy[1] = 0; /* every block has read the count */
}

/* The leavers that cross a rank border in a shifted pass, copied out in slot order (the
 * order k_sort_pass takes them): entry blockIdx.x of species blockIdx.y's table is (cluster,
 * area and code field << 8 | direction, first slot in the area, count). */
template <int THREADS>
__global__ void __launch_bounds__(THREADS) k_sort_extract(const __grid_constant__ ksorts all,
                                                          int shift)
{
    __shared__ int wsum[32];
    const ksort &a = all.s[blockIdx.y];
    const int4 e = a.table[blockIdx.x];
    if (e.w == 0)
        return;
    const unsigned dir = (unsigned)e.y & 0xffu;
    const gpu_parts out = a.area[e.y >> 8];
    const int s0 = a.start[e.x], n = a.count[e.x];
    const uint8_t *code = a.p.code + s0;
    const int got = ordered_compact(
        (n + 31) / 32,
        [&](int g) {
            unsigned lm, fm;
            code_masks(code, 32 * g, n, n, dir, shift, lm, fm);
            return lm;
        },
        [&](int at, unsigned lm, int i) {
            for (int k = at; lm && k < e.w; k++) {
                const int b = __ffs(lm) - 1;
                lm &= lm - 1u;
                gpu_parts_put(out, e.z + k, gpu_parts_get(a.p, s0 + i + b));
            }
        },
        wsum);
    if (threadIdx.x == 0 && got != e.w) /* the codes do not match the histograms */
        atomicOr(&a.flags[2], 1);
}

/* Copy each cluster's entries of one particle array (elements of T) from the old to the new
 * segment layout: block b copies RELAYOUT_CHUNK slots from slot chunk[b].y of cluster
 * chunk[b].x (one launch of a block per cluster and a grid as tall as the largest cluster's
 * blocks had 300 000 blocks for a foil's 1280 clusters, nearly all idle: 3 ms a launch). */
#define RELAYOUT_CHUNK (4 * GPU_THREADS)
template <typename T>
__global__ void k_relayout(const T *src, T *dst, const int *old_start, const int *new_start,
                           const int *count, const int2 *chunk)
{
    const int c = chunk[blockIdx.x].x, k0 = chunk[blockIdx.x].y;
    const int end = min(count[c], k0 + RELAYOUT_CHUNK);
    const size_t s = (size_t)old_start[c], d = (size_t)new_start[c];
    for (int k = k0 + threadIdx.x; k < end; k += blockDim.x)
        dst[d + k] = src[s + k];
}

/* A rearrangement's tables in the pinned h_relay (ncl ints each, hist 9 ncl): copies in the
 * stream to and from the device, without staging, each rewritten by the host only after
 * the next wait for the stream (the copies of the last re-layout done). */
enum { RELAY_COUNT = 0, RELAY_NEED = 1, RELAY_HIST = 2, RELAY_START = 11, RELAY_CAP = 12 };

static int *relay_table(gpu_state *g, int k) { return g->h_relay + (size_t)k * g->ncl; }

/* k_relayout's blocks for clusters of count[c] particles: RELAYOUT_CHUNK slots of a
 * cluster each (about 4 per thread), their table on the device (copied from the pinned
 * h_chunk, which the next re-layout rewrites after its wait for the stream); *n of them (at
 * least one). */
static int2 *relayout_chunks(gpu_state *g, const int *count, int nc, size_t *n)
{
    size_t m = 0;
    for (int c = 0; c < nc; c++)
        m += ((size_t)count[c] + RELAYOUT_CHUNK - 1) / RELAYOUT_CHUNK;
    *n = m ? m : 1;
    if (*n > g->nchunk) { /* kept between rearrangements: no allocation, no free's wait */
        if (g->chunk) {
            GPU_CK(cudaFree(g->chunk));
            GPU_CK(cudaFreeHost(g->h_chunk));
            g->bytes -= g->nchunk * sizeof(int2);
        }
        g->nchunk = *n + *n / 4;
        g->chunk = (int2 *)gpu_malloc(g, g->nchunk * sizeof(int2), "cluster table");
        GPU_CK(cudaMallocHost(&g->h_chunk, g->nchunk * sizeof(int2)));
    }
    int2 *h = g->h_chunk;
    h[0] = make_int2(0, 0); /* no particle: one block that copies nothing */
    for (int c = 0, b = 0; c < nc; c++)
        for (int k = 0; k < count[c]; k += RELAYOUT_CHUNK)
            h[b++] = make_int2(c, k);
    GPU_CK(cudaMemcpyAsync(g->chunk, h, *n * sizeof(int2), cudaMemcpyHostToDevice, g->stream));
    return g->chunk;
}

/* Whether a spare array of `bytes` may stay allocated: a quarter of the device's memory
 * stays free with it. */
static int spare_fits(size_t bytes)
{
    size_t fr = 0, tot = 0;
    GPU_CK(cudaMemGetInfo(&fr, &tot));
    return fr >= bytes + tot / 4;
}

/* One re-layout's copies: k_relayout's blocks (chunk, grid) from the segments at `from` to
 * those at `to`, of clusters of count[c] particles. */
typedef struct {
    const int *from, *to, *count;
    const int2 *chunk;
    unsigned grid;
} relayout_plan;

template <typename T>
static void relayout_copy(gpu_state *g, const relayout_plan &p, const T *src, T *dst)
{
    k_relayout<T><<<p.grid, GPU_THREADS, 0, g->stream>>>(src, dst, p.from, p.to, p.count,
                                                         p.chunk);
    GPU_LAUNCHED(g, "k_relayout");
}

/* Array *a (none: a NULL) copied into a new one of `room` slots, the old one freed once
 * copied, both in the stream (gpu_malloc_async). */
template <typename T>
static void relayout_into_new(gpu_state *g, const relayout_plan &p, T **a, size_t room,
                              const char *what)
{
    if (!a)
        return;
    T *t = (T *)gpu_malloc_async(g, room * sizeof(T), what);
    relayout_copy(g, p, *a, t);
    gpu_free_async(g, *a);
    *a = t;
}

typedef unsigned long long u64; /* the pairs and the 8-byte ids */

/* The arrays of d that hold 8 bytes a slot (8-byte ids: when tracked so). */
static void arrays8(gpu_species *d, u64 **arr[4])
{
    arr[0] = (u64 **)&d->xy;
    arr[1] = (u64 **)&d->uxy;
    arr[2] = (u64 **)&d->uzw;
    arr[3] = d->idb == 8 ? (u64 **)&d->id : NULL;
}

/* The new layout outgrows d's arrays: every array new with `room` slots. */
static void relayout_grown(gpu_state *g, gpu_species *d, const relayout_plan &p, size_t room)
{
    if (d->spare) { /* of the old size */
        gpu_free_async(g, d->spare);
        g->bytes -= d->slots * 8;
        d->spare = NULL;
    }
    u64 **arr[4];
    arrays8(d, arr);
    for (int v = 0; v < 4; v++)
        relayout_into_new(g, p, arr[v], room, "particles (rearrangement)");
    relayout_into_new(g, p, &d->cell, room, "particle cells and ids");
    relayout_into_new(g, p, d->idb == 4 ? (uint32_t **)&d->id : NULL, room,
                      "particle cells and ids");
    relayout_into_new(g, p, &d->code, room, "migration codes, charge states");
    relayout_into_new(g, p, d->z ? &d->z : NULL, room, "migration codes, charge states");
    g->bytes -= d->slots * (SLOT_BYTES + d->idb + d->zb);
    d->slots = room;
}

/* Within d's arrays, through one spare 8-byte array: the codes, charge states, cells and
 * 4-byte ids into it and back (the first `total` slots), each 8-byte array into it (the spare
 * becomes the array, the old array the spare of the next one). The last one left is kept for
 * the next re-layout (d->spare) while a quarter of the device's memory stays free. */
static void relayout_in_place(gpu_state *g, gpu_species *d, const relayout_plan &p,
                              size_t total)
{
    u64 *spare = d->spare;
    if (!spare)
        spare = (u64 *)gpu_malloc_async(g, d->slots * 8, "particles (rearrangement)");
    d->spare = NULL;
    uint8_t *arr1[2] = {d->code, d->z};
    for (int v = 0; v < 2; v++)
        if (arr1[v]) {
            relayout_copy(g, p, arr1[v], (uint8_t *)spare);
            GPU_CK(cudaMemcpyAsync(arr1[v], spare, total, cudaMemcpyDeviceToDevice,
                                   g->stream));
        }
    uint32_t *arr4[2] = {d->cell, d->idb == 4 ? (uint32_t *)d->id : NULL};
    for (int v = 0; v < 2; v++)
        if (arr4[v]) {
            relayout_copy(g, p, arr4[v], (uint32_t *)spare);
            GPU_CK(cudaMemcpyAsync(arr4[v], spare, total * 4, cudaMemcpyDeviceToDevice,
                                   g->stream));
        }
    u64 **arr[4];
    arrays8(d, arr);
    for (int v = 0; v < 4; v++)
        if (arr[v]) {
            relayout_copy(g, p, *arr[v], spare);
            u64 *t = *arr[v];
            *arr[v] = spare;
            spare = t;
        }
    if (spare_fits(d->slots * 8)) {
        d->spare = spare;
    } else {
        gpu_free_async(g, spare);
        g->bytes -= d->slots * 8;
    }
}

/* Re-lay species s to the segments species_segments gives for counts (NULL: the device's
 * counts now), need and hist (a sort overflowed: the last move's histograms): in place
 * through one spare array (relayout_in_place), so that a re-layout borrows 8 bytes a slot
 * where a kept copy of the whole species would hold 29 more, or, when the new layout
 * outgrows the arrays, into new arrays with a sixteenth more room (relayout_grown: a plasma
 * whose clusters fill keeps outgrowing a tighter fit). Allocations are kept off the host's
 * path where memory allows (the spare and the copy-block table stay), and the particle
 * arrays come from the stream-ordered pool (gpu_malloc_async): a cudaFree waits for the
 * whole device, over several ranks for NCCL transfers that wait for the peers, and every
 * rank waits for the slowest. */
void gpu_relayout(gpu_state *g, pic_state *st, int s, const int *counts, const int *need,
                  const int *hist)
{
    species *h = &st->sp[s];
    gpu_species *d = &g->sp[s];
    const int nc = g->ncl;
    const double w0 = gpu_trace_now(g);
    int *count = relay_table(g, RELAY_COUNT), *start = relay_table(g, RELAY_START);
    int *cap = relay_table(g, RELAY_CAP);
    GPU_CK(cudaMemcpyAsync(count, d->count, (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost,
                           g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream)); /* and the caller's reads into the table */
    const size_t total =
        species_segments(h, st->cl, counts ? counts : count, need, hist, start, cap);
    if (!g->spare_start)
        g->spare_start = (int *)gpu_malloc(g, (size_t)nc * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpyAsync(g->spare_start, start, (size_t)nc * sizeof(int),
                           cudaMemcpyHostToDevice, g->stream));
    GPU_CK(cudaMemcpyAsync(d->cap, cap, (size_t)nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    d->cap_max = gpu_most(cap, (size_t)nc, 0);
    size_t nchunk;
    const int2 *chunk = relayout_chunks(g, count, nc, &nchunk);
    const relayout_plan p = {d->start, g->spare_start, d->count, chunk, (unsigned)nchunk};
    gpu_trace_wait(g, "relayout-plan", w0);
    if (total > d->slots)
        relayout_grown(g, d, p, total + total / 16);
    else
        relayout_in_place(g, d, p, total);
    int *old_start = d->start;
    d->start = g->spare_start;
    g->spare_start = old_start;
    d->alloc = total;
    h->rearrangements++;
}

void gpu_sort_errors(const gpu_state *g, const pic_state *st, int s)
{
    if (g->h_flags[4 * s + 2])
        EMPIC_DIE("species %s: the GPU sort found a migration histogram that does not match "
                  "the particles' codes (internal error)", st->sp[s].name);
}

__global__ void k_flags_clear(int *flags)
{
    gpu_flags_clear(flags, threadIdx.x);
}

void gpu_sort_flags_clear(gpu_state *g)
{
    k_flags_clear<<<1, 4 * DECK_MAX_SPECIES, 0, g->stream>>>(g->flags);
    GPU_LAUNCHED(g, "k_flags_clear");
}

/* NCCL over several ranks: the border counts' entries per species (border_count); else 0. */
static size_t counts_per(const gpu_state *g, const pic_state *st)
{
    if (g->ranks == 1 || !g->nccl)
        return 0;
    return (size_t)bgeom_of(st->cl, 0).m + bgeom_of(st->cl, 1).m;
}

/* The n border counts made on the device copied down, their event recorded (border_pass
 * waits on it); after the flags' read-back, so that the host has those first. */
static void counts_down(gpu_state *g, size_t n)
{
    if (!n)
        return;
    const gpu_nccl_counts c = gpu_nccl_count_room(g, n);
    GPU_CK(cudaMemcpyAsync(c.host, c.dev, n * sizeof(int4), cudaMemcpyDeviceToHost,
                           g->stream));
    GPU_CK(cudaEventRecord(c.ready, g->stream));
}

/* Per-cluster room and leavers of the species in mask `prep` after their move (their flags
 * [0] and [1], zeroed by the particle kernel, and their room in the injection column), and
 * with `counts` their border counts (counts_per), one launch. Returns how many counts it
 * makes (for counts_down). */
static size_t prepare_species(gpu_state *g, const pic_state *st, unsigned prep, int counts)
{
    kprep_all all;
    unsigned n = 0;
    for (int s = 0; s < g->nsp; s++)
        if ((prep >> s) & 1u) {
            gpu_species *d = &g->sp[s];
            all.s[n++] = kprep{d->hist,   d->count,       d->cap,
                               d->need,   d->movers,      g->flags + 4 * s,
                               g->room + (size_t)s * g->ncy, s};
        }
    if (!n)
        return 0;
    const bgeom bx = bgeom_of(st->cl, 0), by = bgeom_of(st->cl, 1);
    const size_t per = counts ? counts_per(g, st) : 0;
    int4 *out = per ? gpu_nccl_count_room(g, per * g->nsp).dev : NULL;
    const unsigned nb = gpu_blocks((size_t)g->ncl, 128);
    k_sort_prepare<<<dim3(nb + (per ? gpu_blocks(per, 128) : 0), n), 128, 0, g->stream>>>(
        all, st->cl->cx_of[st->f->nx - 1], g->ncx, g->ncy, g->own, (int)nb, bx, by, out);
    GPU_LAUNCHED(g, "k_sort_prepare");
    return per * g->nsp;
}

/* Several ranks: the neighbours' arrivals for sort_need, the histograms of the clusters
 * around this rank's share (clusters_hist_halo) for the species in `mask`. Staged: in one
 * round trip through the host for all of them (they stay in h_hist for border_pass). NCCL:
 * on the device, in the stream (gpu_nccl_hist_halo); the prepare launch (or
 * border_counts_down) then makes border_pass its counts, which counts_down brings down. */
static void staged_hist_exchange(gpu_state *g, const pic_state *st, unsigned mask)
{
    const size_t n = (size_t)g->ncl * 9;
    for (int s = 0; s < g->nsp; s++)
        if ((mask >> s) & 1u)
            GPU_CK(cudaMemcpyAsync(g->h_hist + s * n, g->sp[s].hist, n * sizeof(int),
                                   cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int s = 0; s < g->nsp; s++)
        if ((mask >> s) & 1u) {
            clusters_hist_halo(st->cl, g->h_hist + s * n);
            GPU_CK(cudaMemcpyAsync(g->sp[s].hist, g->h_hist + s * n, n * sizeof(int),
                                   cudaMemcpyHostToDevice, g->stream));
        }
}

static void hist_exchange(gpu_state *g, const pic_state *st, unsigned mask)
{
    if (g->ranks == 1)
        return;
    const int ex = gpu_exchange_begin(g);
    if (g->nccl)
        gpu_nccl_hist_halo(g, st->cl, mask);
    else
        staged_hist_exchange(g, st, mask);
    gpu_exchange_end(g, ex);
}

/* The histogram tables of the species whose border counts are wanted (NULL: not wanted). */
typedef struct {
    const int *h[DECK_MAX_SPECIES];
} khists;

/* The border counts of species blockIdx.y, at out + s (bx.m + by.m). */
__global__ void k_border_leavers(const __grid_constant__ khists t, bgeom bx, bgeom by,
                                 int4 *out)
{
    const int s = blockIdx.y, q = blockIdx.x * blockDim.x + threadIdx.x;
    if (t.h[s] && q < bx.m + by.m)
        out[(size_t)s * (bx.m + by.m) + q] = border_count(t.h[s], bx, by, q);
}

/* The border counts of the species in `mask` alone (the histogram halo on border_stream,
 * before their prepare), copied down. */
static void border_counts_down(gpu_state *g, const pic_state *st, unsigned mask)
{
    const size_t per = counts_per(g, st);
    if (!per || !mask)
        return;
    const gpu_nccl_counts c = gpu_nccl_count_room(g, per * g->nsp);
    khists t;
    for (int s = 0; s < DECK_MAX_SPECIES; s++)
        t.h[s] = s < g->nsp && ((mask >> s) & 1u) ? g->sp[s].hist : NULL;
    k_border_leavers<<<dim3(gpu_blocks(per, 128), (unsigned)g->nsp), 128, 0, g->stream>>>(
        t, bgeom_of(st->cl, 0), bgeom_of(st->cl, 1), c.dev);
    GPU_LAUNCHED(g, "k_border_leavers");
    counts_down(g, per * g->nsp);
}

/* The histogram halo of the species in `prep` (when it came on border_stream with the border
 * counts, gpu_sort_halo_early: the main stream waits for it instead), then their
 * prepare_species, with the border counts where the halo did not make them; returns how many
 * counts that makes (for counts_down). */
static size_t halo_prepare(gpu_state *g, const pic_state *st, unsigned prep)
{
    const int early = g->halo_early;
    if (early)
        GPU_CK(cudaStreamWaitEvent(g->main_stream, g->border_done, 0));
    else
        hist_exchange(g, st, prep);
    g->halo_early = 0;
    return prepare_species(g, st, prep, !early);
}

/* The flags of every species to the host, in one copy (and the injection room with a moving
 * window), then flags_ready recorded. */
static void read_flags(gpu_state *g)
{
    GPU_CK(cudaMemcpyAsync(g->h_flags, g->flags, 4 * (size_t)g->nsp * sizeof(int),
                           cudaMemcpyDeviceToHost, g->stream));
    if (g->window)
        GPU_CK(cudaMemcpyAsync(g->h_room, g->room, (size_t)g->nsp * g->ncy * sizeof(int),
                               cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaEventRecord(g->flags_ready, g->stream));
}

/* The mobile species, as a mask. */
static unsigned mobile_mask(const gpu_state *g)
{
    unsigned m = 0;
    for (int s = 0; s < g->nsp; s++)
        m |= g->sp[s].mobile ? 1u << s : 0u;
    return m;
}

/* What gpu_sort_prepare ran (gpu_state.prepared). */
enum { PREP_NONE, PREP_COUNTS, PREP_EARLY };

/* The species a sort moves (on: the mobile ones; all after a window shift, whose back
 * column they drop) and those that drop particles before it (drops). */
static void sort_species(const gpu_state *g, int window, int *on, int *drops)
{
    for (int s = 0; s < g->nsp; s++) {
        on[s] = g->sp[s].mobile || window;
        drops[s] = on[s] && (g->sp[s].absorbing || window);
    }
}

static int sort_early(gpu_state *g, pic_state *st, const int *on, const int *drops,
                      int window, long long *net);

/* Right after the move. Without particle drops (no absorbing side, no moving window) the
 * sort's bookkeeping of the mobile species (PREP_COUNTS): the host then waits for it while
 * the field kernels run, instead of leaving the GPU idle for the round trip. With drops,
 * sort_early (PREP_EARLY): its chain is queued before the field kernels, and over several
 * ranks its exchanges no longer wait for every rank's host to have queued those first. On a
 * window shift's step the particles are shifted first (the immobile species' here, the
 * others' by the particle kernel and the walls) and every species sorted. */
void gpu_sort_prepare(gpu_state *g, pic_state *st)
{
    g->prepared = PREP_NONE;
    const int shift = g->window && st->window_next;
    int on[DECK_MAX_SPECIES], drops[DECK_MAX_SPECIES], any = g->window; /* the deck drops */
    for (int s = 0; s < g->nsp; s++)
        any |= g->sp[s].absorbing;
    int t = gpu_tic(g, st);
    gpu_window_particles(g, st);
    if (any) {
        sort_species(g, shift, on, drops);
        g->spec_now = sort_early(g, st, on, drops, shift, NULL);
        gpu_toc(g, t, PH_SORT);
        g->prepared = PREP_EARLY;
        return;
    }
    const size_t counts = halo_prepare(g, st, mobile_mask(g));
    read_flags(g);
    counts_down(g, counts);
    gpu_toc(g, t, PH_SORT);
    g->prepared = PREP_COUNTS;
}

/* The histogram halo needs only the border clusters' histograms: with those pushed on
 * border_stream (gpu_state.border_entries), it and the border counts follow them there while
 * the main stream pushes the rest; the push of the rest writes no histogram of another
 * rank's cluster, which the halo fills. The exchange's events are its own (timed as
 * exchange, not as part of the push they overlap). */
void gpu_sort_halo_early(gpu_state *g, const pic_state *st)
{
    const unsigned prep = mobile_mask(g);
    const int open = g->open;
    GPU_CK(cudaEventRecord(g->border_pushed, g->border_stream));
    g->open = -1;
    hist_exchange(g, st, prep);
    border_counts_down(g, st, prep);
    g->open = open;
    gpu_border_leave(g);
    g->halo_early = 1;
}

/* n particles laid out from p (16-byte aligned) as one staging area (and one message): ids
 * (idw bytes each, when tracked) to a 16-byte boundary, (x, y), (ux, uy), (uz, w), cell,
 * code, and the charge states (zb = 1 byte each) of an ionizing species: parts_bytes in all. */
static size_t parts_bytes(size_t n, int idw, int zb)
{
    return (idw * n + 15) / 16 * 16 + (SLOT_BYTES + zb) * n;
}

static gpu_parts parts_at(char *p, size_t n, int idw, int zb)
{
    gpu_parts q;
    q.id = idw ? (void *)p : NULL;
    q.idb = idw;
    char *a = p + (idw * n + 15) / 16 * 16;
    q.xy = (float2 *)a;
    q.uxy = (float2 *)(a + 8 * n);
    q.uzw = (float2 *)(a + 16 * n);
    q.cell = (uint32_t *)(a + 24 * n);
    q.code = (uint8_t *)(a + 28 * n);
    q.z = zb ? (uint8_t *)(a + 29 * n) : NULL;
    return q;
}

/* The pairs (lo, lo + 1), lo = first + 2 k, of a pass along `axis` (n clusters) that hold a
 * cluster of this rank: k from span.x on for span.y pairs (modulo the n / 2 of the axis: lo
 * from own's start - 1 to its end - 1, the periodic pair (n - 1, 0) included), in the rows
 * from span.z on of own's extent across the axis; *rows: their number. */
static int3 pass_span(const gpu_state *g, int axis, int first, int n, int *rows)
{
    const int4 o = g->own;
    const int a0 = axis ? o.z : o.x, a1 = axis ? o.w : o.y;
    const int x = a0 - 1 - first, y = a1 - 1 - first; /* lo - first at both ends, >= -2 */
    const int k0 = x >= 0 ? (x + 1) / 2 : x / 2, k1 = y >= 0 ? y / 2 : -1; /* ceil, floor */
    const int kn = k1 - k0 + 1 < n / 2 ? k1 - k0 + 1 : n / 2;
    *rows = axis ? o.y - o.x : o.w - o.z;
    return make_int3(k0, kn > 0 ? kn : 0, axis ? o.x : o.z);
}

/* k_sort_pass over this rank's pairs (pass_span) and the species of all: a grid over the
 * whole box's pairs had each rank launch every other rank's too (a 4-rank foil's pass, 7680
 * blocks, 3/4 of them idle). */
static void sort_pass(gpu_state *g, const ksorts *all, int nsort, size_t smem, int axis,
                      int first, int n, int periodic, int border, int hipos)
{
    int rows;
    const int3 span = pass_span(g, axis, first, n, &rows);
    if (span.y == 0 || rows == 0)
        return;
    const dim3 grid((unsigned)(span.y * rows), (unsigned)nsort);
    ksorts a = *all;
    a.heavy = all->wide ? g->heavy + (border ? g->heavy_n : 0) : NULL; /* border: beside */
    if (a.crowded)
        k_sort_pass<GPU_THREADS, 4><<<grid, GPU_THREADS, smem, g->stream>>>(
            a, axis, first, n, g->ncx, periodic, g->own, border, hipos, span);
    else
        k_sort_pass<128, 8><<<grid, 128, smem, g->stream>>>(a, axis, first, n, g->ncx, periodic,
                                                             g->own, border, hipos, span);
    GPU_LAUNCHED(g, "k_sort_pass");
    if (!a.heavy)
        return;
    const unsigned blocks = grid.x * grid.y < (unsigned)g->nsm ? grid.x * grid.y : g->nsm;
    k_sort_heavy<<<blocks, SORT_WIDE_THREADS, smem, g->stream>>>(
        a, axis, first, n, g->ncx, periodic, g->own, border, hipos, span);
    GPU_LAUNCHED(g, "k_sort_heavy");
}

/* Room for `bytes` in B's areas (with half as much again to grow; after the stream's work,
 * which may still read them), in pinned host memory too for the staged transport only:
 * pinning costs the host milliseconds. */
static void border_room(gpu_state *g, gpu_border *B, size_t bytes)
{
    if (bytes <= B->bytes)
        return;
    const size_t want = bytes + bytes / 2;
    GPU_CK(cudaStreamSynchronize(g->stream));
    if (B->dev)
        GPU_CK(cudaFree(B->dev));
    if (B->host)
        GPU_CK(cudaFreeHost(B->host));
    B->dev = (char *)gpu_malloc(g, want, "sort exchange");
    B->host = NULL;
    if (!g->nccl)
        GPU_CK(cudaMallocHost(&B->host, want));
    B->bytes = want;
}

/* The shifted pass along `axis` across this rank's borders (several ranks; docs/design.md
 * §13): the pair (hi0 - 1, hi0) of each row (column) with the rank above, (lo0 - 1, lo0)
 * with the rank below. Every rank knows all leaver counts from the summed histograms
 * (sort_need), so each copies its border clusters' leavers out in slot order, swaps them
 * with its neighbours and runs k_sort_pass on the border pairs with the other side's leavers
 * staged: each side of a pair ends as on one rank. net[s] += particles sent less received. */
static void border_pass(gpu_state *g, const pic_state *st, ksorts *all, const int *which,
                        int nsort, int axis, size_t smem, long long *net)
{
    const clusters *cl = st->cl;
    const bgeom b = bgeom_of(cl, axis);
    const int n = b.n, hi0 = b.hi0, m = b.m, up = b.up, down = b.down;
    if (!m)
        return; /* the axis is this rank's alone */
    const int4 *counts = NULL; /* NCCL: border_count's, at counts + s per + along */
    size_t per = 0, along = 0;
    if (g->nccl) {
        const gpu_nccl_counts c = gpu_nccl_count_room(g, 0);
        const double w0 = gpu_trace_now(g);
        GPU_CK(cudaEventSynchronize(c.ready)); /* the host's first need of them this step */
        gpu_trace_wait(g, "wait-counts", w0);
        const int mx = bgeom_of(cl, 0).m;
        per = (size_t)mx + bgeom_of(cl, 1).m;
        along = axis ? (size_t)mx : 0;
        counts = c.host;
    }
    size_t cnt[DECK_MAX_SPECIES][4], off[DECK_MAX_SPECIES][5];
    for (int k = 0; k < nsort; k++) {
        const int s = which[k], idw = g->sp[s].idb, zb = g->sp[s].zb;
        gpu_border *B = &g->border[s];
        const int *hist = g->h_hist + (size_t)s * g->ncl * 9;
        if (B->tcap < 4 * m) {
            GPU_CK(cudaStreamSynchronize(g->stream)); /* the last pass may still read them */
            if (B->table)
                GPU_CK(cudaFree(B->table)), GPU_CK(cudaFreeHost(B->h_table));
            B->table = (int4 *)gpu_malloc(g, 4 * (size_t)m * sizeof(int4), "sort exchange");
            GPU_CK(cudaMallocHost(&B->h_table, 8 * (size_t)m * sizeof(int4))); /* 2 axes */
            B->tcap = 4 * m;
        }
        int4 *ht = B->h_table + (size_t)axis * B->tcap; /* still read by the other axis' copy */
        size_t *c = cnt[k];
        c[0] = c[1] = c[2] = c[3] = 0;
        for (int o = 0; o < m; o++) {
            const int4 v = counts ? counts[s * per + along + o] : border_leavers(hist, b, o);
            const int w = b.o0 + o, su = v.x, sd = v.y, gu = v.z, gd = v.w;
            const int xu = cluster_id(cl, axis ? w : hi0 - 1, axis ? hi0 - 1 : w);
            const int xd = cluster_id(cl, axis ? w : b.lo0, axis ? b.lo0 : w);
            ht[o] = make_int4(xu, 0 << 8 | 1, (int)c[0], su);
            ht[m + o] = make_int4(xd, 1 << 8 | 2, (int)c[1], sd);
            ht[2 * m + o] = make_int4((int)c[2], gu, 0, 0);
            ht[3 * m + o] = make_int4((int)c[3], gd, 0, 0);
            c[0] += su, c[1] += sd, c[2] += gu, c[3] += gd;
        }
        off[k][0] = 0;
        for (int q = 0; q < 4; q++)
            off[k][q + 1] = off[k][q] + (parts_bytes(c[q], idw, zb) + 15) / 16 * 16;
        border_room(g, B, off[k][4]);
        for (int q = 0; q < 4; q++)
            all->s[k].area[q] = parts_at(B->dev + off[k][q], c[q], idw, zb);
        all->s[k].table = B->table;
        all->s[k].m = m;
        GPU_CK(cudaMemcpyAsync(B->table, ht, 4 * (size_t)m * sizeof(int4),
                               cudaMemcpyHostToDevice, g->stream));
    }
    const dim3 grid(2 * (unsigned)m, (unsigned)nsort);
    if (all->wide)
        k_sort_extract<SORT_WIDE_THREADS>
            <<<grid, SORT_WIDE_THREADS, 0, g->stream>>>(*all, axis ? 2 : 0);
    else
        k_sort_extract<GPU_THREADS><<<grid, GPU_THREADS, 0, g->stream>>>(*all, axis ? 2 : 0);
    GPU_LAUNCHED(g, "k_sort_extract");
    const int ex = gpu_exchange_begin(g);
    if (g->nccl) /* device to device in the stream (gpu_nccl.cu) */
        gpu_nccl_border(g, which, nsort, off, up, down);
    for (int k = 0; k < nsort && !g->nccl; k++) /* areas 0 and 1, the leavers going out */
        GPU_CK(cudaMemcpyAsync(g->border[which[k]].host, g->border[which[k]].dev, off[k][2],
                               cudaMemcpyDeviceToHost, g->stream));
    if (!g->nccl)
        GPU_CK(cudaStreamSynchronize(g->stream));
    for (int k = 0; k < nsort; k++) {
        const int s = which[k];
        char *h = g->border[s].host;
        const int idw = g->sp[s].idb, zb = g->sp[s].zb;
        const size_t *c = cnt[k];
        net[s] += (long long)(c[0] + c[1]) - (long long)(c[2] + c[3]);
        if (g->nccl)
            continue;
        comm_sendrecv(h + off[k][0], parts_bytes(c[0], idw, zb), up, h + off[k][3],
                      parts_bytes(c[3], idw, zb), down, 40 + 2 * k);
        comm_sendrecv(h + off[k][1], parts_bytes(c[1], idw, zb), down, h + off[k][2],
                      parts_bytes(c[2], idw, zb), up, 41 + 2 * k);
        GPU_CK(cudaMemcpyAsync(g->border[s].dev + off[k][2], h + off[k][2],
                               off[k][4] - off[k][2], cudaMemcpyHostToDevice, g->stream));
    }
    gpu_exchange_end(g, ex);
    sort_pass(g, all, nsort, smem, axis, 1, n, axis ? cl->periodic_y : cl->periodic_x, 1,
              hi0 % n);
}

/* border_pass on border_stream (gpu_state.border_entries) once the main stream has run the
 * unshifted pass along `axis` (the border pairs' clusters need nothing else), beside the
 * shifted pass inside this rank, which the main stream runs meanwhile: launch_passes. */
static void border_pass_beside(gpu_state *g, const pic_state *st, ksorts *all,
                               const int *which, int nsort, int axis, size_t smem,
                               long long *net)
{
    const int open = g->open;
    gpu_border_enter(g);
    g->open = -1; /* timed as exchange, not as the pass it overlaps */
    border_pass(g, st, all, which, nsort, axis, smem, net);
    g->open = open;
    gpu_border_leave(g);
}

/* The four passes for the species of `all` (all.lcap set; which[k]: the species of
 * all.s[k]); over several ranks the shifted ones also across the borders (border_pass, on
 * border_stream beside the shifted pass inside the rank where there is one).
 * Steps [from, to) of: pass 0, pass 1, the border along x, pass 2, pass 3, the border along
 * y (0, 6: all of them). */
static void launch_passes(gpu_state *g, const pic_state *st, ksorts *all, const int *which,
                          int nsort, long long *net, int from, int to)
{
    const int maxpairs = (g->ncx / 2) * g->ncy > (g->ncy / 2) * g->ncx ? (g->ncx / 2) * g->ncy
                                                                       : (g->ncy / 2) * g->ncx;
    size_t smem = (size_t)4 * all->lcap * sizeof(int);
    all->lists = NULL;
    if (smem > 32 * 1024) { /* lists in device memory */
        size_t want = (size_t)4 * all->lcap * maxpairs * nsort;
        if (want > g->lists_n) {
            if (g->lists)
                GPU_CK(cudaFree(g->lists));
            g->lists = (int *)gpu_malloc(g, want * sizeof(int), "sort lists");
            g->lists_n = want;
        }
        all->lists = g->lists;
        smem = 0;
    }
    if (all->wide && !g->heavy) { /* every pair of every species heavy, at most */
        g->heavy_n = 2 + maxpairs * DECK_MAX_SPECIES;
        g->heavy = (int *)gpu_malloc(g, 2 * (size_t)g->heavy_n * sizeof(int), "sort lists");
        GPU_CK(cudaMemsetAsync(g->heavy, 0, 2 * (size_t)g->heavy_n * sizeof(int), g->stream));
    }
    const int px = st->cl->periodic_x, py = st->cl->periodic_y;
    int beside = 0; /* this axis' border pass ran beside its shifted pass */
    for (int step = from; step < to; step++) {
        const int axis = step / 3, first = step % 3 == 1;
        if (step % 3 == 2) {
            if (g->ranks > 1 && !beside)
                border_pass(g, st, all, which, nsort, axis, smem, net);
            beside = 0;
            continue;
        }
        /* the border pass beside the shifted one (they share no cluster; lists in device
           memory are per block of one launch): both follow the unshifted pass */
        beside = g->nborder > 0 && first && step + 1 < to && !all->lists &&
                 bgeom_of(st->cl, axis).m;
        if (beside)
            border_pass_beside(g, st, all, which, nsort, axis, smem, net);
        sort_pass(g, all, nsort, smem, axis, first, axis ? g->ncy : g->ncx, axis ? py : px, 0,
                  -1);
        if (beside)
            GPU_CK(cudaStreamWaitEvent(g->main_stream, g->border_done, 0));
    }
}

static ksort ksort_of(gpu_state *g, int s)
{
    gpu_species *d = &g->sp[s];
    ksort k;
    memset(&k, 0, sizeof k);
    k.p = gpu_parts_of(d);
    k.start = d->start;
    k.count = d->count;
    k.cap = d->cap;
    k.movers = d->movers;
    k.flags = g->flags + 4 * s;
    return k;
}

/* Species s as the next of all (which[k]: its index); all is wide if s is, crowded if its
 * clusters of this rank hold more than SORT_SMALL_SLOTS particles on average. */
static void ksorts_add(gpu_state *g, const pic_state *st, ksorts *all, int *which, int *n,
                       int s)
{
    which[*n] = s;
    all->s[(*n)++] = ksort_of(g, s);
    all->wide |= g->sp[s].cap_max > SORT_WIDE_SLOTS;
    const long long own = (long long)(g->own.y - g->own.x) * (g->own.w - g->own.z);
    all->crowded |= st->sp[s].np > (long long)SORT_SMALL_SLOTS * (own > 0 ? own : 1);
}

/* Decks with drops: the drops and the bookkeeping of the species `on` (drops[s]: species s
 * drops particles), one read-back of their flags; then, from the second such sort on, the
 * passes launched with the last step's list capacity (returned; 0: none launched) before
 * the host has the flags: all four on one rank; over NCCL ranks the unshifted and the
 * shifted pass along x, whose pairs lie inside this rank (the border passes need the
 * counts, and every rank must send what its neighbours expect, so they wait for the
 * flags); a species whose flags ask for more leaves them untouched (k_sort_pass). None of
 * these passes crosses a rank border: net may be NULL. */
static int sort_early(gpu_state *g, pic_state *st, const int *on, const int *drops,
                      int window, long long *net)
{
    ksorts all;
    memset(&all, 0, sizeof all);
    int nsort = 0, which[DECK_MAX_SPECIES];
    unsigned prep = 0;
    for (int s = 0; s < g->nsp; s++)
        prep |= on[s] ? 1u << s : 0u;
    gpu_walls_drop(g, drops, window);
    const size_t counts = halo_prepare(g, st, prep);
    for (int s = 0; s < g->nsp; s++) {
        if (!on[s])
            continue;
        ksorts_add(g, st, &all, which, &nsort, s);
    }
    read_flags(g);
    counts_down(g, counts);
    if (g->spec_lcap <= 0 || (g->ranks > 1 && !g->nccl))
        return 0;
    all.lcap = g->spec_lcap;
    launch_passes(g, st, &all, which, nsort, net, 0, g->ranks > 1 ? 2 : 6);
    return g->spec_lcap;
}

/* Every mobile species (all after a window shift: their back column is dropped): the drops
 * and the bookkeeping of all species, one read-back of their flags, then each of the four
 * passes once for all the species that have leavers. Over several ranks every rank passes
 * the same species to border_pass, in species order (NCCL pairs the messages in order). */
void gpu_sort(void *ctx, pic_state *st, int window, long long *dropped)
{
    gpu_state *g = (gpu_state *)ctx;
    const int nc = g->ncl;
    int t = gpu_tic(g, st), on[DECK_MAX_SPECIES], drops[DECK_MAX_SPECIES];
    int spec = 0; /* passes launched before the flags were read, with this list capacity */
    long long net[DECK_MAX_SPECIES] = {0}; /* particles sent to other ranks less received */
    sort_species(g, window, on, drops);
    for (int s = 0; s < g->nsp; s++)
        g->dropped[s] = 0;
    g->room_valid = 0;
    if (g->prepared == PREP_NONE)
        spec = sort_early(g, st, on, drops, window, net);
    else if (g->prepared == PREP_EARLY)
        spec = g->spec_now;
    const double w0 = gpu_trace_now(g);
    GPU_CK(cudaEventSynchronize(g->flags_ready));
    gpu_trace_wait(g, "wait-flags", w0);
    /* all: the species sorted now; redo (over ranks, after early passes): those whose
     * early passes 0 and 1 did nothing, to run them before the rest */
    ksorts all, redo;
    memset(&all, 0, sizeof all);
    memset(&redo, 0, sizeof redo);
    int nsort = 0, nredo = 0, most = 0, relaid = 0, which[DECK_MAX_SPECIES];
    int rwhich[DECK_MAX_SPECIES];
    for (int s = 0; s < g->nsp; s++) {
        if (!on[s])
            continue;
        gpu_species *d = &g->sp[s];
        const int *hf = g->h_flags + 4 * s;
        const int early = spec > 0 && hf[0] == 0 && hf[1] <= spec; /* sorted by them */
        if (drops[s])
            g->dropped[s] = hf[3];
        gpu_sort_errors(g, st, s);
        most = hf[1] > most ? hf[1] : most;
        if (early && g->ranks == 1)
            continue; /* sorted by the passes launched already */
        if (hf[0] > 0) { /* a cluster would overflow: global rearrangement first */
            /* hist: the last move's, with the neighbours' around the share; read in the
               stream, which gpu_relayout waits for */
            int *need = relay_table(g, RELAY_NEED), *hist = relay_table(g, RELAY_HIST);
            GPU_CK(cudaMemcpyAsync(need, d->need, (size_t)nc * sizeof(int),
                                   cudaMemcpyDeviceToHost, g->stream));
            GPU_CK(cudaMemcpyAsync(hist, d->hist, (size_t)nc * 9 * sizeof(int),
                                   cudaMemcpyDeviceToHost, g->stream));
            gpu_relayout(g, st, s, NULL, need, hist);
            GPU_CK(cudaMemsetAsync(g->flags + 4 * s, 0, sizeof(int), g->stream));
            relaid = 1;
        }
        if (hf[1] == 0 && g->ranks == 1)
            continue; /* no particle crossed a cluster border (over ranks: some may arrive) */
        ksorts_add(g, st, &all, which, &nsort, s);
        all.lcap = hf[1] > all.lcap ? hf[1] : all.lcap;
        if (spec > 0 && !early && g->ranks > 1) { /* its passes 0 and 1 again */
            ksorts_add(g, st, &redo, rwhich, &nredo, s);
            redo.lcap = hf[1] > redo.lcap ? hf[1] : redo.lcap;
        }
    }
    if (nredo > 0)
        launch_passes(g, st, &redo, rwhich, nredo, net, 0, 2);
    if (nsort > 0)
        launch_passes(g, st, &all, which, nsort, net, spec > 0 && g->ranks > 1 ? 2 : 0, 6);
    if (g->prepared != PREP_COUNTS) {
        /* next step's lists: room for some growth, within the shared memory of one block */
        const int want = most + most / 4 + 32;
        g->spec_lcap = want < 2048 ? want : 2048;
        g->room_valid = window && !relaid;
    }
    g->prepared = PREP_NONE;
    gpu_toc(g, t, PH_SORT);
    for (int s = 0; s < g->nsp; s++)
        dropped[s] = g->dropped[s] += net[s];
    gpu_debug(g, st, DBG_AFTER_SORT);
}
