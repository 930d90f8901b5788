/* gpu_collide.cu - binary Coulomb collisions on the device (the twin of
 * src/cpu/cpu_collide.c). One block per cluster: the particles of each cell indexed in
 * shared memory (a counting sort; the slots of each cell then sorted, so a particle's rank in
 * its cell follows the cluster order as on the CPU), one thread per cell for its shuffles and
 * moments, then the cell's lanes of independent pairs (collide.h) spread over the threads.
 * A cluster holding more particles than the shared index takes a global one (g->scratch). */
#include "gpu_internal.h"
#include "collide.h"

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

/* The shared index of one species: cell k's slots are ix[off[k]] .. ix[off[k + 1] - 1], in
 * slot order (cur: cellcap counters). */
__device__ static int *index_build(const kcoll_sp &s, int c, const cluster_tile &t, int ncell,
                                   int *off, int *cur, int *shared, int ixcap)
{
    const int n = s.count[c], st = s.start[c], w = t.xhi - t.xlo;
    int *ix = n <= ixcap ? shared : s.spill + st;
    for (int k = threadIdx.x; k <= ncell; k += blockDim.x)
        off[k] = 0;
    __syncthreads();
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        uint32_t cv = s.cell[st + k];
        atomicAdd(&off[cell_i(cv) - t.xlo + (cell_j(cv) - t.ylo) * w + 1], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int k = 0; k < ncell; k++)
            off[k + 1] += off[k];
    __syncthreads();
    for (int k = threadIdx.x; k < ncell; k += blockDim.x)
        cur[k] = off[k];
    __syncthreads();
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        uint32_t cv = s.cell[st + k];
        ix[atomicAdd(&cur[cell_i(cv) - t.xlo + (cell_j(cv) - t.ylo) * w], 1)] = st + k;
    }
    __syncthreads();
    return ix;
}

/* A cell's slots back into slot order (the atomics placed them in any order). */
__device__ static void slots_sort(int *ix, int n)
{
    for (int k = 1; k < n; k++) {
        int v = ix[k], m = k - 1;
        for (; m >= 0 && ix[m] > v; m--)
            ix[m + 1] = ix[m];
        ix[m + 1] = v;
    }
}

__device__ static collide_moments moments(const kcoll_sp &s, const int *ix, int n)
{
    collide_moments m = {0.0, 0.0, 0};
    for (int k = 0; k < n; k++) {
        float2 u = s.uxy[ix[k]], z = s.uzw[ix[k]];
        collide_moments_add(&m, s.m, z.y, u.x, u.y, z.x);
    }
    return m;
}

/* Cell k (global i, j): its lists in slot order, shuffled, its moments and its lanes. */
__device__ static void cell_setup(const kcoll &a, int k, int i, int j, int *ia, int na, int *ib,
                                  int nb, collide_cell *cc, int *lanes)
{
    rng_stream r;
    slots_sort(ia, na);
    collide_rng(&r, &a.p, i, j, COLLIDE_SHUFFLE);
    collide_shuffle(ia, na, &r);
    if (!a.intra) {
        slots_sort(ib, nb);
        collide_rng(&r, &a.p, i, j, COLLIDE_SHUFFLE + 1);
        collide_shuffle(ib, nb, &r);
    }
    collide_moments ma = moments(a.a, ia, na), mb = a.intra ? ma : moments(a.b, ib, nb);
    cc[k] = collide_cell_of(&a.p, &ma, &mb, a.a.q, a.b.q, a.a.m, a.b.m, a.intra);
    lanes[k + 1] = collide_nlanes(na, nb, a.intra);
}

/* Pair k of global cell (i, j): slots s1 of a and s2 of b, with its share of the time. */
__device__ static void pair_run(const kcoll &a, const collide_cell &cc, int i, int j, int k,
                                int s1, int s2, double share)
{
    float2 u1f = a.a.uxy[s1], z1 = a.a.uzw[s1], u2f = a.b.uxy[s2], z2 = a.b.uzw[s2];
    double u1[3] = {u1f.x, u1f.y, z1.x}, u2[3] = {u2f.x, u2f.y, z2.x}, w1 = z1.y, w2 = z2.y;
    rng_stream r;
    collide_rng(&r, &a.p, i, j, (unsigned)k);
    collide_pair(u1, u2, a.a.m, a.b.m, (double)a.a.q * a.b.q, w1, w2,
                 share * (w1 > w2 ? w1 : w2) * cc.nmin, &a.p, &cc, &r);
    a.a.uxy[s1] = make_float2((float)u1[0], (float)u1[1]);
    a.a.uzw[s1] = make_float2((float)u1[2], z1.y);
    a.b.uxy[s2] = make_float2((float)u2[0], (float)u2[1]);
    a.b.uzw[s2] = make_float2((float)u2[2], z2.y);
}

__global__ static void k_collide(kcoll a)
{
    extern __shared__ double smem[];
    const int c = blockIdx.x;
    if (!in_box(a.own, c % a.ncx, c / a.ncx))
        return;
    const cluster_tile t = cluster_tile_of(a.x0, a.y0, a.ncx, c);
    const int w = t.xhi - t.xlo, ncell = w * (t.yhi - t.ylo);
    collide_cell *cc = (collide_cell *)smem;
    int *offa = (int *)(cc + a.cellcap), *offb = offa + a.cellcap + 1;
    int *lanes = offb + a.cellcap + 1, *cur = lanes + a.cellcap + 1, *sh = cur + a.cellcap;
    int *ixa = index_build(a.a, c, t, ncell, offa, cur, sh, a.ixcap);
    int *ixb = ixa;
    if (!a.intra)
        ixb = index_build(a.b, c, t, ncell, offb, cur, sh + a.ixcap, a.ixcap);
    else
        offb = offa;
    for (int k = threadIdx.x; k < ncell; k += blockDim.x)
        cell_setup(a, k, t.xlo + k % w, t.ylo + k / w, ixa + offa[k], offa[k + 1] - offa[k],
                   ixb + offb[k], offb[k + 1] - offb[k], cc, lanes);
    __syncthreads();
    if (threadIdx.x == 0) {
        lanes[0] = 0;
        for (int k = 0; k < ncell; k++)
            lanes[k + 1] += lanes[k];
    }
    __syncthreads();
    for (int q = threadIdx.x; q < lanes[ncell]; q += blockDim.x) {
        int lo = 0, hi = ncell; /* the cell k with lanes[k] <= q < lanes[k + 1] */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            (lanes[mid] <= q ? lo : hi) = mid;
        }
        const int k = lo, na = offa[k + 1] - offa[k], nb = offb[k + 1] - offb[k];
        const int i = t.xlo + k % w, j = t.ylo + k / w;
        for (int s = 0, kk; (kk = collide_lane_pair(q - lanes[k], s, na, nb, a.intra)) >= 0;
             s++) {
            int pi, pj;
            double share = collide_pair_of(kk, na, nb, a.intra, &pi, &pj);
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
    size_t spill = da->alloc + (intra ? 0 : db->alloc);
    if (g->scratch_n < spill) { /* shared with the drop lists, which run before in the stream */
        if (g->scratch) {
            GPU_CK(cudaStreamSynchronize(g->stream));
            GPU_CK(cudaFree(g->scratch));
            g->bytes -= g->scratch_n * sizeof(int);
        }
        g->scratch = (int *)gpu_malloc(g, spill * sizeof(int), "drop and collision lists");
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
    /* the cell tables, then an index per species of 1.25 times the mean cluster's particles
     * (a fuller cluster takes the global index): no more shared memory than that, so that
     * several blocks share a multiprocessor; at most 96 KiB */
    const size_t cells = a.cellcap * sizeof(collide_cell) + (4 * (size_t)a.cellcap + 3) * 4;
    size_t budget = g->smem_optin > 2048 ? g->smem_optin - 2048 : g->smem_optin;
    budget = budget < 96 * 1024 ? budget : 96 * 1024;
    const long long nmax = st->sp[p->a].np > st->sp[p->b].np ? st->sp[p->a].np : st->sp[p->b].np;
    const long long nown = (long long)(g->own.y - g->own.x) * (g->own.w - g->own.z);
    const size_t want = (size_t)(1.25 * (double)nmax / (double)(nown > 0 ? nown : 1)) + 32;
    const size_t fit = budget > cells + 8 ? (budget - cells) / 8 : 0;
    a.ixcap = (int)(want < fit ? want : fit);
    const size_t bytes = cells + 8 * (size_t)a.ixcap;
    GPU_CK(cudaFuncSetAttribute(k_collide, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)bytes));
    k_collide<<<(unsigned)g->ncl, GPU_THREADS, bytes, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_collide");
}
