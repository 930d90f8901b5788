/* gpu_sort.cu - Kong's incremental bi-cluster sort on the device (Kong et al. 2011 §2.4):
 * the CPU's four passes of cluster pairs.
 *
 * A prepare kernel reads the migration histograms of the last move and gives, per cluster,
 * the room it needs during the four passes and how many particles leave it in each pass
 * (+x, -x, +y, -y): cluster.h's sort_need. The host reads two numbers back:
 * whether a cluster would overflow (then the segments are re-laid on the device before any
 * particle moves, so none is lost) and the largest leaver count (0: nothing crossed a
 * cluster border and the passes are skipped). Each pass runs one block per bi-cluster; a
 * pair with no leavers returns at once. A block scans the codes of the sending cluster 16 at
 * a time, lists its leavers, the holes they leave in front of the new end and the stayers
 * behind it, in slot order (ordered compaction: per-thread bit masks, a block-wide prefix
 * sum of their counts), copies the leavers to the end of the receiving cluster and fills the
 * holes from the tail in that order: the result does not depend on thread scheduling, so two
 * runs sort identically. */
#include "gpu_internal.h"
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

__global__ void k_sort_prepare(const int *hist, const int *count, const int *cap, int *need,
                               int4 *movers, int *flags, int nx, int ny)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nx * ny)
        return;
    int lv[4];
    need[c] = sort_need(hist, count[c], c % nx, c / nx, nx, ny, lv);
    if (need[c] > cap[c])
        atomicAdd(&flags[0], 1);
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
    int *lists; /* NULL: lists in shared memory */
    int lcap;   /* entries per list */
    int *flags;
} ksort;

/* Block-wide exclusive prefix sum of v (three 16-bit counts packed in one word) and the
 * block's total; every thread of the block calls it. */
__device__ __forceinline__ unsigned long long block_scan(unsigned long long v,
                                                         unsigned long long *warp_tot,
                                                         unsigned long long *total)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    unsigned long long inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned long long t = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o)
            inc += t;
    }
    if (lane == 31)
        warp_tot[wid] = inc;
    __syncthreads();
    unsigned long long before = 0, all = 0;
    for (int w = 0; w < nw; w++) {
        before += w < wid ? warp_tot[w] : 0ull;
        all += warp_tot[w];
    }
    __syncthreads();
    *total = all;
    return before + inc - v;
}

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

/* Move the m particles of cluster ca whose code has `dir` in the field at `shift` to the end
 * of cluster cb (their field cleared), filling each hole from ca's tail. */
__device__ void exchange(const ksort &a, int ca, int cb, unsigned dir, int shift, int m,
                         int *L, int *H, int *F,
                         unsigned long long *wtot)
{
    if (m == 0)
        return;
    const int as = a.start[ca], n = a.count[ca], bs = a.start[cb], nb = a.count[cb];
    const int keep = n - m, tid = threadIdx.x;
    const unsigned want = dir * 0x01010101u;
    int nl = 0, nh = 0, nf = 0; /* list lengths so far (the same in all threads) */
    for (int i0 = 0; i0 < n; i0 += 16 * blockDim.x) {
        /* bit b of lm: slot i + b leaves; of hm: it leaves a hole in front of the new end;
         * of fm: it stays but lies behind the new end (a filler) */
        const int i = i0 + 16 * tid;
        unsigned lm = 0, fm = 0;
        if (i < n) {
            uint4 v = *(const uint4 *)(a.p.code + as + i); /* as and i are multiples of 16 */
            unsigned wd[4] = {v.x, v.y, v.z, v.w};
            const bool tail = i + 15 >= keep;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                unsigned z = ((wd[q] >> shift) & 0x03030303u) ^ want; /* zero byte: a leaver */
                if (!tail && !((z - 0x01010101u) & ~z & 0x80808080u))
                    continue;
                for (int b = 0; b < 4; b++) {
                    int p = i + 4 * q + b;
                    if (p >= n)
                        break;
                    unsigned cd = (wd[q] >> (8 * b)) & 0xffu;
                    if (((cd >> shift) & 3u) == dir)
                        lm |= 1u << (4 * q + b);
                    else if (p >= keep)
                        fm |= 1u << (4 * q + b);
                }
            }
        }
        const int front = keep - i; /* slots i .. keep-1 lie in front of the new end */
        const unsigned hm = front >= 16 ? lm : (front <= 0 ? 0u : lm & ((1u << front) - 1u));
        unsigned long long tot, pre = block_scan(
            (unsigned long long)__popc(lm) | (unsigned long long)__popc(hm) << 16 |
                (unsigned long long)__popc(fm) << 32, wtot, &tot);
        list_bits(L, nl + (int)(pre & 0xffffu), a.lcap, lm, i);
        list_bits(H, nh + (int)((pre >> 16) & 0xffffu), a.lcap, hm, i);
        list_bits(F, nf + (int)((pre >> 32) & 0xffffu), a.lcap, fm, i);
        nl += (int)(tot & 0xffffu);
        nh += (int)((tot >> 16) & 0xffffu);
        nf += (int)((tot >> 32) & 0xffffu);
    }
    __syncthreads();
    if (nl != m || nh != nf || nb + m > a.cap[cb]) {
        if (tid == 0)
            atomicOr(&a.flags[2], 1);
        __syncthreads();
        return;
    }
    const unsigned clear = ~(3u << shift);
    for (int r = tid; r < m; r += blockDim.x) {
        int src = as + L[r], dst = bs + nb + r;
        gpu_parts_copy(a.p, dst, src);
        a.p.code[dst] = (uint8_t)(a.p.code[src] & clear);
    }
    __syncthreads();
    for (int r = tid; r < nh; r += blockDim.x)
        gpu_parts_copy(a.p, as + H[r], as + F[r]);
    __syncthreads();
    if (tid == 0) {
        a.count[ca] = keep;
        a.count[cb] = nb + m;
    }
    __syncthreads();
}

/* One pass: pairs (lo, lo+1), lo = first, first+2, ... along x (axis 0) or y (axis 1). */
__global__ void __launch_bounds__(GPU_THREADS) k_sort_pass(ksort a, int axis, int first,
                                                             int n, int ncx, int periodic)
{
    extern __shared__ int slist[];
    __shared__ unsigned long long wtot[GPU_THREADS / 32]; /* the compaction's warp totals */
    const int pairs = n / 2, q = blockIdx.x;
    const int lo = first + 2 * (q % pairs), other = q / pairs;
    int hi = lo + 1;
    if (hi == n) {
        if (!periodic)
            return;
        hi = 0;
    }
    const int ca = axis ? other + lo * ncx : lo + other * ncx;
    const int cb = axis ? other + hi * ncx : hi + other * ncx;
    const int4 ma = a.movers[ca], mb = a.movers[cb];
    const int m_ab = axis ? ma.z : ma.x; /* +1 leavers of the low cluster */
    const int m_ba = axis ? mb.w : mb.y; /* -1 leavers of the high cluster */
    if (m_ab == 0 && m_ba == 0)
        return;
    int *L = a.lists ? a.lists + (size_t)blockIdx.x * 3 * a.lcap : slist;
    int *H = L + a.lcap, *F = H + a.lcap;
    const int shift = axis ? 2 : 0;
    exchange(a, ca, cb, 1u, shift, m_ab, L, H, F, wtot);
    exchange(a, cb, ca, 2u, shift, m_ba, L, H, F, wtot);
}

/* Copy each cluster's particles from the old to the new segment layout. */
typedef struct {
    const void *src[8];
    void *dst[8];
} arrays8;

__global__ void k_relayout(arrays8 a, const int *old_start, const int *new_start,
                           const int *count)
{
    const int c = blockIdx.x, n = count[c];
    const size_t s = (size_t)old_start[c], d = (size_t)new_start[c];
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
#pragma unroll
        for (int v = 0; v < 7; v++)
            ((uint32_t *)a.dst[v])[d + k] = ((const uint32_t *)a.src[v])[s + k];
        ((uint8_t *)a.dst[7])[d + k] = ((const uint8_t *)a.src[7])[s + k];
    }
}

void gpu_relayout(gpu_state *g, pic_state *st, int s, const int *need)
{
    species *h = &st->sp[s];
    gpu_species *d = &g->sp[s];
    const int nc = g->ncl;
    int *count = (int *)empic_alloc((size_t)nc * sizeof(int), "cluster table");
    int *start = (int *)empic_alloc((size_t)nc * sizeof(int), "cluster table");
    int *cap = (int *)empic_alloc((size_t)nc * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpy(count, d->count, (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost));
    const size_t total = species_segments(h, nc, count, need, start, cap);
    void *old[8] = {d->cell, d->x, d->y, d->ux, d->uy, d->uz, d->w, d->code};
    arrays8 a;
    for (int v = 0; v < 8; v++) {
        a.src[v] = old[v];
        a.dst[v] = gpu_malloc(g, total * (v < 7 ? 4 : 1), "particles (global rearrangement)");
    }
    int *new_start = (int *)gpu_malloc(g, (size_t)nc * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpyAsync(new_start, start, (size_t)nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    k_relayout<<<nc, GPU_THREADS, 0, g->stream>>>(a, d->start, new_start, d->count);
    GPU_LAUNCHED(g, "k_relayout");
    gpu_relayout_ids(g, d, new_start, total);
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int v = 0; v < 8; v++)
        GPU_CK(cudaFree(old[v]));
    GPU_CK(cudaFree(d->start));
    d->start = new_start;
    GPU_CK(cudaMemcpyAsync(d->cap, cap, (size_t)nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    d->cell = (uint32_t *)a.dst[0];
    d->x = (float *)a.dst[1];
    d->y = (float *)a.dst[2];
    d->ux = (float *)a.dst[3];
    d->uy = (float *)a.dst[4];
    d->uz = (float *)a.dst[5];
    d->w = (float *)a.dst[6];
    d->code = (uint8_t *)a.dst[7];
    d->alloc = total;
    h->rearrangements++;
    free(count);
    free(start);
    free(cap);
}

void gpu_check_flags(const gpu_state *g, const pic_state *st, int s)
{
    if (g->h_flags[4 * s + 2])
        EMPIC_DIE("species %s: the GPU sort found a migration histogram that does not match "
                  "the particles' codes (internal error)", st->sp[s].name);
}

/* Per-cluster room and leavers of species s after its move, and the read-back of its flags. */
static void prepare_species(gpu_state *g, int s, int drops)
{
    gpu_species *d = &g->sp[s];
    int *fl = g->flags + 4 * s;
    GPU_CK(cudaMemsetAsync(fl, 0, 2 * sizeof(int), g->stream));
    k_sort_prepare<<<gpu_blocks((size_t)g->ncl, 128), 128, 0, g->stream>>>(
        d->hist, d->count, d->cap, d->need, d->movers, fl, g->ncx, g->ncy);
    GPU_LAUNCHED(g, "k_sort_prepare");
    GPU_CK(cudaMemcpyAsync(g->h_flags + 4 * s, fl, (drops ? 4 : 3) * sizeof(int),
                           cudaMemcpyDeviceToHost, g->stream));
}

/* Without particle drops (no absorbing side, no moving window) the sort's bookkeeping can
 * run right after the move: the host then waits for it while the field kernels run, instead
 * of leaving the GPU idle for the round trip. Only the mobile species are sorted then. */
void gpu_sort_prepare(gpu_state *g, pic_state *st)
{
    g->prepared = 0;
    if (g->window)
        return;
    for (int s = 0; s < g->nsp; s++)
        if (g->sp[s].absorbing)
            return;
    int t = gpu_tic(g, st);
    for (int s = 0; s < g->nsp; s++)
        if (g->sp[s].mobile)
            prepare_species(g, s, 0);
    GPU_CK(cudaEventRecord(g->flags_ready, g->stream));
    gpu_toc(g, t, PH_SORT);
    g->prepared = 1;
}

/* Sort species s; returns the particles it dropped first. */
static long long sort_species(gpu_state *g, pic_state *st, int s, int window)
{
    gpu_species *d = &g->sp[s];
    const int nc = g->ncl, *hf = g->h_flags + 4 * s;
    long long dropped = 0;
    if (g->prepared) {
        GPU_CK(cudaEventSynchronize(g->flags_ready));
    } else {
        /* particles that left through an absorbing wall (or the back of a moving window) go
         * first; flags[3] counts them */
        const int drops = d->absorbing || window;
        if (drops) {
            GPU_CK(cudaMemsetAsync(g->flags + 4 * s + 3, 0, sizeof(int), g->stream));
            gpu_drop(g, s, window);
        }
        prepare_species(g, s, drops);
        GPU_CK(cudaStreamSynchronize(g->stream));
        if (drops)
            dropped = hf[3];
    }
    gpu_check_flags(g, st, s);
    if (hf[0] > 0) { /* a cluster would overflow: global rearrangement first */
        int *need = (int *)empic_alloc((size_t)nc * sizeof(int), "sort table");
        GPU_CK(cudaMemcpy(need, d->need, (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost));
        gpu_relayout(g, st, s, need);
        free(need);
    }
    const int lcap = hf[1];
    if (lcap == 0)
        return dropped; /* no particle crossed a cluster border */
    ksort a = {gpu_parts_of(d), d->start, d->count,        d->cap,
               d->movers,       NULL,     lcap, g->flags + 4 * s};
    const int maxpairs = (g->ncx / 2) * g->ncy > (g->ncy / 2) * g->ncx ? (g->ncx / 2) * g->ncy
                                                                       : (g->ncy / 2) * g->ncx;
    size_t smem = (size_t)3 * lcap * sizeof(int);
    if (smem > 32 * 1024) { /* lists in device memory */
        size_t want = (size_t)3 * lcap * maxpairs;
        if (want > g->lists_n) {
            if (g->lists)
                GPU_CK(cudaFree(g->lists));
            g->lists = (int *)gpu_malloc(g, want * sizeof(int), "sort lists");
            g->lists_n = want;
        }
        a.lists = g->lists;
        smem = 0;
    }
    const int px = st->cl->periodic_x, py = st->cl->periodic_y;
    for (int pass = 0; pass < 4; pass++) {
        const int axis = pass / 2, first = pass % 2;
        const int n = axis ? g->ncy : g->ncx, m = axis ? g->ncx : g->ncy;
        k_sort_pass<<<(unsigned)(n / 2 * m), GPU_THREADS, smem, g->stream>>>(
            a, axis, first, n, g->ncx, axis ? py : px);
        GPU_LAUNCHED(g, "k_sort_pass");
    }
    return dropped;
}

/* Every mobile species (all after a window shift: their back column is dropped). */
void gpu_sort(void *ctx, pic_state *st, int window, long long *dropped)
{
    gpu_state *g = (gpu_state *)ctx;
    int t = gpu_tic(g, st);
    for (int s = 0; s < g->nsp; s++)
        g->dropped[s] = g->sp[s].mobile || window ? sort_species(g, st, s, window) : 0;
    g->prepared = 0;
    gpu_toc(g, t, PH_SORT);
    gpu_debug(g, st, DBG_AFTER_SORT);
    for (int s = 0; s < g->nsp; s++)
        dropped[s] = g->dropped[s];
}
