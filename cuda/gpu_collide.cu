/* gpu_collide.cu - binary Coulomb collisions on the device (the twin of
 * src/cpu/cpu_collide.c). One block per cluster: the particles of each cell indexed in
 * shared memory by a stable counting sort (each warp counts and places a contiguous part of
 * the segment, its lanes of one cell together: a particle's rank in its cell follows the
 * cluster order, as on the CPU), one thread per cell for its shuffles and moments, then the
 * cell's lanes of independent pairs (collide.h) spread over the threads. A cluster holding
 * more particles than the shared index takes a global one (g->scratch). */
#include "gpu_internal.h"
#include "collide.h"

#define FULL 0xffffffffu
#define WARPS (GPU_THREADS / 32)

/* One species as the kernel sees it. */
typedef struct {
    float2 *uxy, *uzw;
    const uint32_t *cell;
    const int *start, *count;
    float m, q;
    int *spill;          /* the global index for overfull clusters, at the segment starts */
} kcoll_sp;

typedef struct {
    kcoll_sp a, b;
    int intra;
    const int *x0, *y0;
    int ncx;
    int4 own;            /* this rank's clusters */
    int cellcap, ixcap;  /* shared entries: cells of the largest cluster, index per species */
    collide_par p;
} kcoll;

/* Particle k of the segment from st (k < 0: none) in one warp's pass: the lanes of one cell
 * together; each places its slot after the group's lower lanes (ix, else the count pass),
 * and the lowest advances the warp's counter of the cell by the group. */
__device__ __forceinline__ void warp_cells(const kcoll_sp &s, int st, int k,
                                           const cluster_tile &t, int *mine, int *ix)
{
    const unsigned act = __ballot_sync(FULL, k >= 0);
    if (k < 0)
        return;
    const uint32_t cv = s.cell[st + k];
    const int lc = cell_i(cv) - t.xlo + (cell_j(cv) - t.ylo) * (t.xhi - t.xlo);
    const unsigned same = __match_any_sync(act, lc);
    const int lane = threadIdx.x & 31;
    if (ix)
        ix[mine[lc] + __popc(same & ((1u << lane) - 1u))] = st + k;
    __syncwarp(act);
    if (lane == __ffs(same) - 1)
        mine[lc] += __popc(same);
    __syncwarp(act);
}

/* The index of one species: cell k's slots are ix[off[k]] .. ix[off[k + 1] - 1], in slot
 * order. cnt: WARPS x ncell counters; wtot: WARPS ints. */
__device__ static int *index_build(const kcoll_sp &s, int c, const cluster_tile &t, int ncell,
                                   int *off, int *cnt, int *wtot, int *shared, int ixcap)
{
    const int n = s.count[c], st = s.start[c], lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int per = (n + WARPS - 1) / WARPS, lo = min(n, wid * per), hi = min(n, lo + per);
    int *ix = n <= ixcap ? shared : s.spill + st, *mine = cnt + wid * ncell;
    for (int k = lane; k < ncell; k += 32)
        mine[k] = 0;
    __syncwarp();
    for (int b = lo; b < hi; b += 32)
        warp_cells(s, st, b + lane < hi ? b + lane : -1, t, mine, NULL);
    __syncthreads();
    /* the cells' starts, and each warp's start in each cell after the warps before it */
    int carry = 0;
    for (int k0 = 0; k0 < ncell; k0 += blockDim.x) {
        const int k = k0 + (int)threadIdx.x;
        int tot = 0, chunk;
        for (int q = 0; k < ncell && q < WARPS; q++)
            tot += cnt[q * ncell + k];
        int at = carry + gpu_block_scan(tot, wtot, &chunk);
        if (k < ncell) {
            off[k] = at;
            for (int q = 0; q < WARPS; q++) {
                const int v = cnt[q * ncell + k];
                cnt[q * ncell + k] = at;
                at += v;
            }
        }
        carry += chunk;
    }
    if (threadIdx.x == 0)
        off[ncell] = n;
    __syncthreads();
    for (int b = lo; b < hi; b += 32)
        warp_cells(s, st, b + lane < hi ? b + lane : -1, t, mine, ix);
    __syncthreads();
    return ix;
}

/* The cell's moments in list order, the momenta loaded eight at a time: the loads of a batch
 * are in flight together (one thread takes the whole cell). */
__device__ static collide_moments moments(const kcoll_sp &s, const int *ix, int n)
{
    enum { B = 8 };
    collide_moments m = {0.0, 0.0, 0};
    for (int k0 = 0; k0 < n; k0 += B) {
        float2 u[B], z[B];
#pragma unroll
        for (int t = 0; t < B; t++)
            if (k0 + t < n) {
                u[t] = s.uxy[ix[k0 + t]];
                z[t] = s.uzw[ix[k0 + t]];
            }
#pragma unroll
        for (int t = 0; t < B; t++)
            if (k0 + t < n)
                collide_moments_add(&m, s.m, z[t].y, u[t].x, u[t].y, z[t].x);
    }
    return m;
}

/* Cell k (global i, j): its lists shuffled, its moments; returns its lanes. */
__device__ static int cell_setup(const kcoll &a, int k, int i, int j, int *ia, int na, int *ib,
                                 int nb, collide_cell *cc)
{
    if (!collide_npairs(na, nb, a.intra))
        return 0;
    rng_stream r;
    collide_rng(&r, &a.p, i, j, COLLIDE_SHUFFLE);
    collide_shuffle(ia, na, &r);
    if (!a.intra) {
        collide_rng(&r, &a.p, i, j, COLLIDE_SHUFFLE + 1);
        collide_shuffle(ib, nb, &r);
    }
    collide_moments ma = moments(a.a, ia, na), mb = a.intra ? ma : moments(a.b, ib, nb);
    cc[k] = collide_cell_of(&a.p, &ma, &mb, a.a.q, a.b.q, a.a.m, a.b.m, a.intra);
    return collide_nlanes(na, nb, a.intra);
}

/* Pair k of global cell (i, j): slots s1 of a and s2 of b, with its share of the time. */
__device__ static void pair_run(const kcoll &a, const collide_cell &cc, int i, int j, int k,
                                int s1, int s2, double share)
{
    const float2 u1f = a.a.uxy[s1], z1 = a.a.uzw[s1], u2f = a.b.uxy[s2], z2 = a.b.uzw[s2];
    float u1[3] = {u1f.x, u1f.y, z1.x}, u2[3] = {u2f.x, u2f.y, z2.x};
    rng_stream r;
    collide_rng(&r, &a.p, i, j, (unsigned)k);
    collide_pair(u1, u2, a.a.m, a.b.m, a.a.q * a.b.q, z1.y, z2.y,
                 (float)(share * (z1.y > z2.y ? z1.y : z2.y) * cc.nmin), &a.p, &cc, &r);
    a.a.uxy[s1] = make_float2(u1[0], u1[1]);
    a.a.uzw[s1] = make_float2(u1[2], z1.y);
    a.b.uxy[s2] = make_float2(u2[0], u2[1]);
    a.b.uzw[s2] = make_float2(u2[2], z2.y);
}

__global__ void __launch_bounds__(GPU_THREADS) k_collide(const __grid_constant__ kcoll a)
{
    extern __shared__ double smem[];
    const int c = blockIdx.x;
    if (!in_box(a.own, c % a.ncx, c / a.ncx))
        return;
    const cluster_tile t = cluster_tile_of(a.x0, a.y0, a.ncx, c);
    const int w = t.xhi - t.xlo, ncell = w * (t.yhi - t.ylo), cap = a.cellcap;
    collide_cell *cc = (collide_cell *)smem;
    int *offa = (int *)(cc + cap), *offb = offa + cap + 1, *lanes = offb + cap + 1;
    int *cnt = lanes + cap + 1, *wtot = cnt + WARPS * cap, *sh = wtot + WARPS;
    int *ixa = index_build(a.a, c, t, ncell, offa, cnt, wtot, sh, a.ixcap), *ixb = ixa;
    if (!a.intra)
        ixb = index_build(a.b, c, t, ncell, offb, cnt, wtot, sh + a.ixcap, a.ixcap);
    else
        offb = offa;
    /* each cell's lanes, then their starts */
    int carry = 0;
    for (int k0 = 0; k0 < ncell; k0 += blockDim.x) {
        const int k = k0 + (int)threadIdx.x;
        int nl = 0, chunk;
        if (k < ncell)
            nl = cell_setup(a, k, t.xlo + k % w, t.ylo + k / w, ixa + offa[k],
                            offa[k + 1] - offa[k], ixb + offb[k], offb[k + 1] - offb[k], cc);
        const int at = carry + gpu_block_scan(nl, wtot, &chunk);
        if (k < ncell)
            lanes[k] = at;
        carry += chunk;
    }
    if (threadIdx.x == 0)
        lanes[ncell] = carry;
    __syncthreads();
    for (int q = threadIdx.x; q < lanes[ncell]; q += blockDim.x) {
        int lo = 0, hi = ncell; /* the cell k with lanes[k] <= q < lanes[k + 1] */
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            (lanes[mid] <= q ? lo : hi) = mid;
        }
        const int k = lo, na = offa[k + 1] - offa[k], nb = offb[k + 1] - offb[k];
        const int i = t.xlo + k % w, j = t.ylo + k / w;
        for (int s = 0, kk; (kk = collide_lane_pair(q - lanes[k], s, na, nb, a.intra)) >= 0;
             s++) {
            int pi, pj;
            const double share = collide_pair_of(kk, na, nb, a.intra, &pi, &pj);
            pair_run(a, cc[k], i, j, kk, ixa[offa[k] + pi], ixb[offb[k] + pj], share);
        }
    }
}

static kcoll_sp kcoll_species(const gpu_species *d, int *spill)
{
    return kcoll_sp{d->uxy, d->uzw, d->cell, d->start, d->count, d->m, d->q, spill};
}

void gpu_collide(void *ctx, pic_state *st, const struct collide_par *p)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_species *da = &g->sp[p->a], *db = &g->sp[p->b];
    const int intra = p->a == p->b;
    g->rest_valid = 0; /* an atom at rest may be struck */
    size_t spill = da->alloc + (intra ? 0 : db->alloc);
    if (g->scratch_n < spill) {
        if (g->scratch) {
            GPU_CK(cudaStreamSynchronize(g->stream));
            GPU_CK(cudaFree(g->scratch));
            g->bytes -= g->scratch_n * sizeof(int);
        }
        g->scratch = (int *)gpu_malloc(g, spill * sizeof(int), "collision lists");
        g->scratch_n = spill;
    }
    kcoll a;
    a.a = kcoll_species(da, g->scratch);
    a.b = kcoll_species(db, g->scratch + da->alloc);
    a.intra = intra;
    a.x0 = g->x0;
    a.y0 = g->y0;
    a.ncx = g->ncx;
    a.own = g->own;
    a.cellcap = g->wmax * g->hmax;
    a.p = *p;
    /* the cell tables and counters, then an index per species of 1.25 times the mean
     * cluster's particles (a fuller cluster takes the global index): no more shared memory
     * than that, so that several blocks share a multiprocessor; at most 96 KiB */
    const size_t cap = (size_t)a.cellcap;
    const size_t cells = cap * sizeof(collide_cell) + (3 * (cap + 1) + WARPS * (cap + 1)) * 4;
    size_t budget = g->smem_optin > 2048 ? g->smem_optin - 2048 : g->smem_optin;
    budget = budget < 96 * 1024 ? budget : 96 * 1024;
    const long long nmax = st->sp[p->a].np > st->sp[p->b].np ? st->sp[p->a].np : st->sp[p->b].np;
    const long long nown = (long long)(g->own.y - g->own.x) * (g->own.w - g->own.z);
    const size_t want = (size_t)(1.25 * (double)nmax / (double)(nown > 0 ? nown : 1)) + 32;
    const size_t fit = budget > cells + 8 ? (budget - cells) / 8 : 0;
    a.ixcap = (int)(want < fit ? want : fit);
    const size_t bytes = cells + 8 * (size_t)a.ixcap;
    /* after the field phase: its short kernels would otherwise wait behind the long blocks
     * of the collisions for a multiprocessor, and the next step for them */
    gpu_fields_join(g);
    GPU_CK(cudaFuncSetAttribute(k_collide, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)bytes));
    k_collide<<<(unsigned)g->ncl, GPU_THREADS, bytes, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_collide");
}
