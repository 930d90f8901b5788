/* gpu_walls.cu - the particle walls on the device (the twin of src/cpu/cpu_walls.c; rules in
 * include/pbnd.h): the wall fix-up of the particles of edge clusters that crossed a wall and
 * the fold of their tile current beyond the wall, after the move (gpu_walls_clusters, the
 * CPU's walls_cluster and walls_tile), and the removal of the particles marked to drop before
 * the sort (gpu_walls_drop, the CPU's walls_drop). Nothing here runs for a periodic deck. */
#include "gpu_internal.h"
#include "ebal.h"
#include "pbnd.h"

#include <stdlib.h>

/* ---- setup ---- */

/* Each species' walls (species_walls), its edge clusters of this rank onto the device, and
 * whether some side absorbs; the rim: this rank's clusters on the box's edges. */
void gpu_walls_setup(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    const clusters *cl = st->cl;
    for (int s = 0; s < st->nsp; s++) {
        const species *h = &st->sp[s];
        gpu_species *d = &g->sp[s];
        species_walls(h, cl, f->nx, f->ny, &d->walls);
        int *list = (int *)empic_alloc((size_t)cl->n * sizeof(int), "wall clusters"), n = 0;
        for (int border = 1; border >= 0; border--) { /* the border clusters first */
            for (int c = 0; c < cl->n; c++)
                if (species_on_wall(h, cl, c) && in_box(g->own, c % cl->ncx, c / cl->ncx) &&
                    (g->nborder > 0 && cluster_border(g->own, g->border_axes, cl->ncx, c)) ==
                        border)
                    list[n++] = c;
            if (border)
                d->nedge_border = h->immobile ? 0 : n;
        }
        d->nedge = h->immobile ? 0 : n;
        d->absorbing = 0;
        for (int k = 0; k < 4; k++)
            d->absorbing |= h->bnd[k] == PBND_ABSORBING;
        if (d->nedge) {
            d->edge = (int *)gpu_malloc(g, (size_t)n * sizeof(int), "wall clusters");
            GPU_CK(cudaMemcpy(d->edge, list, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
        }
        free(list);
    }
    int *rim = (int *)empic_alloc((size_t)cl->n * sizeof(int), "rim clusters"), n = 0;
    for (int c = 0; c < cl->n; c++) {
        const int cx = c % cl->ncx, cy = c / cl->ncx;
        if (in_box(g->own, cx, cy) &&
            (cx == 0 || cx == cl->ncx - 1 || cy == 0 || cy == cl->ncy - 1))
            rim[n++] = c;
    }
    g->nrim = n;
    if (n) {
        g->rim = (int *)gpu_malloc(g, (size_t)n * sizeof(int), "rim clusters");
        GPU_CK(cudaMemcpy(g->rim, rim, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    }
    free(rim);
}

void gpu_walls_free(gpu_state *g)
{
    for (int s = 0; s < g->nsp; s++)
        if (g->sp[s].edge)
            cudaFree(g->sp[s].edge);
    if (g->rim)
        cudaFree(g->rim);
    if (g->scratch)
        cudaFree(g->scratch);
}

/* ---- walls after the move ---- */

/* One block per edge cluster of a species: its particles get the wall fix-up, its tile the
 * fold of the current beyond the wall; on a window shift's step the cluster's shift, after the
 * fix-up (the particle kernel leaves these clusters unshifted: the walls see the cells of the
 * move). */
typedef struct {
    float2 *xy, *uxy, *uzw;
    uint32_t *cell;
    uint8_t *code;
    const int *start, *count, *edge, *x0, *y0, *cx_of, *cy_of;
    const int *live;          /* per cluster: its tile holds this step's current */
    const uint8_t *rest;      /* per cluster: neutral atoms at rest only (k_rest), or NULL */
    int *hist;
    long long *tiles;
    int tile_stride;
    long step;
    pbnd_walls w;
    double *lost;             /* per cluster: what the walls and the window took (ebal.h) */
} kwalls;

/* The species with walls, in one launch (blockIdx.y: the species' entry). */
typedef struct {
    kwalls s[DECK_MAX_SPECIES];
    int nedge[DECK_MAX_SPECIES];
    int shift;                /* the window shifts after this step's fields */
} kwalls_all;

/* The window's shift of edge cluster c (column cx) of n particles from slot s0. */
__device__ void walls_shift(const kwalls &a, int c, int cx, int s0, int n, bool rest)
{
    gpu_window_cluster(a.cell, a.code, a.uxy, a.uzw, s0, n, a.x0[cx], cx == 0 && !rest,
                       &a.lost[c], a.hist + 9 * c);
}

__global__ void k_walls(const __grid_constant__ kwalls_all all)
{
    if ((int)blockIdx.x >= all.nedge[blockIdx.y])
        return;
    const kwalls &a = all.s[blockIdx.y];
    const int c = a.edge[blockIdx.x], cx = c % a.w.ncx, cy = c / a.w.ncx;
    const int s0 = a.start[c], n = a.count[c];
    const bool rest = a.rest && a.rest[c];
    if (n == 0)
        return;
    if (rest) { /* nothing moved, nothing deposited (most edge clusters of a foil's box) */
        if (all.shift)
            walls_shift(a, c, cx, s0, n, rest);
        return;
    }
    const pbnd_edges e = pbnd_edges_of(&a.w, cx, cy);
    int *hist = a.hist + 9 * c;
    /* the particles' codes read only when the move's histogram has some across a wall (in
       a box with a vacuum margin most edge clusters have none) */
    const int b = threadIdx.x;
    const bool crossed = __syncthreads_or(b < 9 && b != 4 && hist[b] > 0 &&
                                          pbnd_crossed(&e, mig_code_of_bin(b)));
    double v = 0.0; /* the energy the walls took: each thread's particles in order, then a
                       fixed-order sum over the block (a particle that crossed no wall takes
                       none, and its momentum is not read) */
    for (int p = s0 + threadIdx.x; crossed && p < s0 + n; p += blockDim.x) {
        const unsigned c0 = a.code[p];
        if (!pbnd_crossed(&e, c0))
            continue;
        const float ux = a.uxy[p].x, uy = a.uxy[p].y, uz = a.uzw[p].x;
        pbnd_fixup(&a.w, &e, cx, cy, a.cx_of, a.cy_of, a.step, &a.code[p], hist, &a.cell[p],
                   &a.xy[p].x, &a.xy[p].y, &a.uxy[p].x, &a.uxy[p].y, &a.uzw[p].x);
        v += ebal_wall(c0, a.code[p], a.uzw[p].y, ux, uy, uz, a.uxy[p].x, a.uxy[p].y,
                       a.uzw[p].x);
    }
    __shared__ double sh[32];
    v = gpu_block_sum(v, sh);
    if (threadIdx.x == 0)
        a.lost[c] += v;
    if (all.shift)
        walls_shift(a, c, cx, s0, n, rest);
    if (!a.live[c])
        return; /* a tile not stored this step: the sums skip it */
    /* the fold, its lines shared by the block's threads (one thread's chain of dependent
       loads took ~90 us) */
    const cluster_tile T = cluster_tile_of(a.x0, a.y0, a.w.ncx, c);
    const int tsz = T.w * T.h;
    long long *t = a.tiles + (size_t)c * a.tile_stride;
    for (int side = SIDE_XMIN; side <= SIDE_YMAX; side++) {
        pbnd_fold_side_fixed(&a.w, side, cx, cy, &T, t, t + tsz, t + 2 * tsz, threadIdx.x,
                             blockDim.x);
        __syncthreads();
    }
}

void gpu_walls_clusters(gpu_state *g, const pic_state *st, int n, const int *which, int part)
{
    kwalls_all all;
    int m = 0, most = 0;
    for (int k = 0; k < n; k++) {
        const gpu_species *d = &g->sp[which[k]];
        const int lo = part == WALLS_REST ? d->nedge_border : 0;
        const int hi = part == WALLS_BORDER ? d->nedge_border : d->nedge;
        if (hi == lo)
            continue;
        long long *tiles = g->tiles + k * g->tile_set;
        all.s[m] = kwalls{d->xy,    d->uxy,   d->uzw,  d->cell, d->code, d->start, d->count,
                          d->edge + lo, g->x0, g->y0,  g->cx_of, g->cy_of,
                          g->tile_live + (size_t)k * g->ncl,
                          gpu_rest_of(g, which[k]), d->hist, tiles,
                          3 * g->tsz_max, st->f->step, d->walls,
                          g->lost + (size_t)which[k] * g->ncl};
        all.nedge[m++] = hi - lo;
        most = hi - lo > most ? hi - lo : most;
    }
    if (!m)
        return;
    all.shift = g->window && st->window_next;
    k_walls<<<dim3((unsigned)most, (unsigned)m), GPU_THREADS, 0, g->stream>>>(all);
    GPU_LAUNCHED(g, "k_walls");
}

/* ---- removal of dropped particles ---- */

/* Bit b set when code i + b (of the 16 at i, a multiple of 16) is PBND_DROP, for slots in
 * [lo, hi) only. */
__device__ __forceinline__ unsigned drop_mask(const uint8_t *code, int i, int lo, int hi)
{
    if (i >= hi || i + 16 <= lo)
        return 0u;
    const uint4 v = *(const uint4 *)(code + i);
    const unsigned wd[4] = {v.x, v.y, v.z, v.w};
    unsigned m = 0;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const unsigned e = __vcmpeq4(wd[q], PBND_DROP * 0x01010101u);
        m |= ((e >> 7 & 1u) | (e >> 14 & 2u) | (e >> 21 & 4u) | (e >> 28 & 8u)) << (4 * q);
    }
    const unsigned below = hi - i >= 16 ? 0xffffu : (1u << (hi - i)) - 1u;
    const unsigned above = lo <= i ? 0xffffu : 0xffffu & ~((1u << (lo - i)) - 1u);
    return m & below & above;
}

typedef struct {
    gpu_parts p;
    const int *start;
    int *count, *dropped;
    pbnd_drops sides;
} kdrop;

/* The species that drop, in one launch (blockIdx.y: the species' entry), over the rim. */
typedef struct {
    kdrop s[DECK_MAX_SPECIES];
    const int *rim;
    int ncx, ncy;
} kdrop_all;

/* Fillers listed in shared memory per round: a moving window's back column drops a few
 * hundred particles a cluster; a cluster that drops more takes several rounds. */
#define DROP_ROUND 1024

/* One block per rim cluster and species; those on a dropping side remove their PBND_DROP
 * particles: n - nd survive; the survivors behind the new end, in slot order, fill the
 * holes in front of it in slot order, DROP_ROUND at a time: round k lists the fillers of
 * ranks [k DROP_ROUND, (k + 1) DROP_ROUND) and fills the first DROP_ROUND holes left (the
 * holes filled before hold survivors now). Codes are read 16 at a time (per-thread bit
 * masks, block prefix sums of their counts: ordered, whatever the thread scheduling). */
__global__ void __launch_bounds__(GPU_THREADS) k_drop(const __grid_constant__ kdrop_all all)
{
    __shared__ int warp_n[GPU_THREADS / 32];
    __shared__ int fill[DROP_ROUND];
    const kdrop &a = all.s[blockIdx.y];
    const int c = all.rim[blockIdx.x], cx = c % all.ncx, cy = c / all.ncx, tid = threadIdx.x;
    if (!pbnd_drops_at(&a.sides, cx, cy, all.ncx, all.ncy))
        return;
    const int s0 = a.start[c], n = a.count[c];
    const uint8_t *code = a.p.code + s0;
    int nd = 0, tot;
    for (int i0 = 0; i0 < n; i0 += 16 * blockDim.x) {
        gpu_block_scan(__popc(drop_mask(code, i0 + 16 * tid, 0, n)), warp_n, &tot);
        nd += tot;
    }
    if (nd == 0)
        return;
    const int keep = n - nd, from = keep / 16 * 16;
    for (int r0 = 0;; r0 += DROP_ROUND) { /* the fillers of ranks [r0, r0 + DROP_ROUND) */
        int done = 0;
        for (int i0 = from; i0 < n; i0 += 16 * blockDim.x) { /* the fillers, in slot order */
            const int i = i0 + 16 * tid;
            unsigned f = 0;
            if (i < n) {
                const unsigned valid = n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u;
                const unsigned tail = keep <= i ? 0xffffu : 0xffffu & ~((1u << (keep - i)) - 1u);
                f = ~drop_mask(code, i, 0, n) & valid & tail;
            }
            int r = done + gpu_block_scan(__popc(f), warp_n, &tot);
            for (; f; f &= f - 1u, r++)
                if (r >= r0 && r < r0 + DROP_ROUND)
                    fill[r - r0] = i + __ffs(f) - 1;
            done += tot;
        }
        __syncthreads();
        int holes = 0; /* left before this round */
        for (int i0 = 0; i0 < keep; i0 += 16 * blockDim.x) { /* the holes, in slot order */
            const int i = i0 + 16 * tid;
            unsigned h = drop_mask(code, i, 0, keep);
            int r = holes + gpu_block_scan(__popc(h), warp_n, &tot);
            for (; h; h &= h - 1u, r++)
                if (r < DROP_ROUND)
                    gpu_parts_copy(a.p, s0 + i + __ffs(h) - 1, s0 + fill[r]);
            holes += tot;
        }
        if (holes <= DROP_ROUND)
            break;
        __syncthreads(); /* fill read by all before the next round writes it */
    }
    if (tid == 0) {
        a.count[c] = keep;
        atomicAdd(a.dropped, nd);
    }
}

/* The drops of the species s with drop[s] set (a moving window: the back column too). */
void gpu_walls_drop(gpu_state *g, const int *drop, int window)
{
    kdrop_all all;
    int m = 0;
    for (int s = 0; s < g->nsp; s++) {
        gpu_species *d = &g->sp[s];
        const pbnd_drops sides = pbnd_drops_of(d->walls.bnd, window);
        if (!drop[s] || !pbnd_drops_any(&sides))
            continue;
        all.s[m++] = kdrop{gpu_parts_of(d), d->start, d->count, g->flags + 4 * s + 3, sides};
    }
    if (!m || !g->nrim)
        return;
    all.rim = g->rim;
    all.ncx = g->ncx;
    all.ncy = g->ncy;
    k_drop<<<dim3((unsigned)g->nrim, (unsigned)m), GPU_THREADS, 0, g->stream>>>(all);
    GPU_LAUNCHED(g, "k_drop");
}
