/* gpu_diag.cu - in-situ diagnostics on the device (insitu.h): phase-space histograms
 * and the extent of an axis over a species, without copying the particles to the host,
 * and the tracking ids' part of a global rearrangement.
 *
 * Histogram: a grid of about two blocks per SM walks the clusters; each block bins its
 * particles (include/phasespace.h, the same arithmetic as the CPU) into a private copy in
 * shared memory with shared-memory atomics when the histogram fits, then adds the non-empty
 * bins to the histogram in global memory. Larger histograms go straight to global atomics.
 * The bins are 64-bit fixed-point sums of the weights (particle.h's fixed_of, the species'
 * scale as the CPU uses it): integer adds, so the histogram does not depend on the order of
 * the adds and equals the CPU's for the same particles. */
#include "gpu_internal.h"
#include "cluster.h"
#include "particle.h"
#include "phasespace.h"

#include <float.h>
#include <string.h>

#define DIAG_SMEM_BINS 6144 /* 48 KiB of 64-bit bins: the default shared-memory limit */

__global__ void k_phasespace(ps_grid g, const gpu_species d, int ncl, unsigned long long *hist,
                             int shared, float scale)
{
    extern __shared__ long long sh[];
    const int nb = g.n[0] * g.n[1];
    if (shared) {
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            sh[b] = 0;
        __syncthreads();
    }
    for (int c = blockIdx.x; c < ncl; c += gridDim.x) {
        const int p0 = d.start[c], p1 = p0 + d.count[c];
        for (int p = p0 + (int)threadIdx.x; p < p1; p += blockDim.x) {
            const uint32_t k = d.cell[p];
            const float2 xy = d.xy[p], uxy = d.uxy[p], uzw = d.uzw[p];
            int b = ps_bin(&g, cell_i(k), cell_j(k), xy.x, xy.y, uxy.x, uxy.y, uzw.x);
            if (b < 0)
                continue;
            const long long v = fixed_of(uzw.y, scale);
            if (shared)
                fixed_atomic_add(&sh[b], v);
            else
                atomicAdd(&hist[b], (unsigned long long)v);
        }
    }
    if (shared) {
        __syncthreads();
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            if (sh[b] != 0)
                atomicAdd(&hist[b], (unsigned long long)sh[b]);
    }
}

/* Per block: smallest and largest value of `axis` (positive ones only when `positive`). */
__global__ void k_extent(ps_grid g, int axis, int positive, const gpu_species d, int ncl,
                         double *out)
{
    __shared__ double lo[GPU_THREADS], hi[GPU_THREADS];
    double l = DBL_MAX, h = -DBL_MAX;
    for (int c = blockIdx.x; c < ncl; c += gridDim.x) {
        const int p0 = d.start[c], p1 = p0 + d.count[c];
        for (int p = p0 + (int)threadIdx.x; p < p1; p += blockDim.x) {
            const uint32_t k = d.cell[p];
            const float2 xy = d.xy[p], uxy = d.uxy[p];
            double v = ps_value(&g, axis, cell_i(k), cell_j(k), xy.x, xy.y, uxy.x, uxy.y,
                                d.uzw[p].x);
            if (positive && !(v > 0.0))
                continue;
            l = fmin(l, v);
            h = fmax(h, v);
        }
    }
    lo[threadIdx.x] = l;
    hi[threadIdx.x] = h;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            lo[threadIdx.x] = fmin(lo[threadIdx.x], lo[threadIdx.x + s]);
            hi[threadIdx.x] = fmax(hi[threadIdx.x], hi[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = lo[0];
        out[2 * blockIdx.x + 1] = hi[0];
    }
}

static int diag_blocks(const gpu_state *g)
{
    int b = 2 * g->nsm;
    return b < g->ncl ? b : g->ncl;
}

void gpu_phasespace(void *ctx, pic_state *st, int s, const ps_grid *grid, double *h)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_species *d = &g->sp[s];
    const size_t nb = (size_t)grid->n[0] * (size_t)grid->n[1];
    const float scale = fixed_scale(st->sp[s].wbound);
    unsigned long long *dh = (unsigned long long *)gpu_malloc(g, nb * 8, "phase-space histogram");
    GPU_CK(cudaMemsetAsync(dh, 0, nb * 8, g->stream));
    const int shared = nb <= DIAG_SMEM_BINS;
    const int nbk = diag_blocks(g);
    if (nbk > 0) {
        k_phasespace<<<nbk, GPU_THREADS, shared ? nb * 8 : 0, g->stream>>>(
            *grid, *d, g->ncl, dh, shared, scale);
        GPU_LAUNCHED(g, "k_phasespace");
    }
    GPU_CK(cudaMemcpyAsync(h, dh, nb * 8, cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaFree(dh));
    comm_sum_ll((long long *)h, nb); /* over the ranks: integer sums */
    for (size_t b = 0; b < nb; b++) { /* the fixed-point sums, in place, as doubles */
        long long v;
        memcpy(&v, &h[b], sizeof v);
        h[b] = (double)v / scale;
    }
}

int gpu_phasespace_extent(void *ctx, pic_state *st, int s, const ps_grid *grid, int axis,
                          int positive, double mm[2])
{
    gpu_state *g = (gpu_state *)ctx;
    (void)st;
    gpu_species *d = &g->sp[s];
    const int nbk = diag_blocks(g);
    mm[0] = DBL_MAX;
    mm[1] = -DBL_MAX;
    double *dout = (double *)gpu_malloc(g, 2 * (size_t)nbk * sizeof(double), "extent");
    double *out = (double *)empic_alloc(2 * (size_t)nbk * sizeof(double), "extent");
    k_extent<<<nbk, GPU_THREADS, 0, g->stream>>>(*grid, axis, positive, *d, g->ncl, dout);
    GPU_LAUNCHED(g, "k_extent");
    GPU_CK(cudaMemcpyAsync(out, dout, 2 * (size_t)nbk * sizeof(double), cudaMemcpyDeviceToHost,
                           g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int b = 0; b < nbk; b++) {
        mm[0] = fmin(mm[0], out[2 * b]);
        mm[1] = fmax(mm[1], out[2 * b + 1]);
    }
    GPU_CK(cudaFree(dout));
    free(out);
    double v[2] = {-mm[0], mm[1]}; /* over the ranks */
    comm_max_double(v, 2);
    mm[0] = -v[0];
    mm[1] = v[1];
    return mm[0] <= mm[1];
}

/* ---- tracked particles, compacted on the device ---- */

/* Per cluster: the tracked particles (id != 0). One block per cluster. */
__global__ void k_count_tracked(const gpu_parts ids, const int *__restrict__ start,
                                const int *__restrict__ count, int *tracked)
{
    __shared__ int n;
    const int c = blockIdx.x, p0 = start[c], p1 = p0 + count[c];
    if (threadIdx.x == 0)
        n = 0;
    __syncthreads();
    int mine = 0;
    for (int p = p0 + (int)threadIdx.x; p < p1; p += blockDim.x)
        mine += gpu_parts_id(ids, p) != 0;
    atomicAdd(&n, mine);
    __syncthreads();
    if (threadIdx.x == 0)
        tracked[c] = n;
}

/* The tracked particles of cluster c, in slot order, from dst_start[c] on: a block-wide
 * prefix of the flags per chunk (warp ballots, then the warp totals). */
__global__ void k_compact_tracked(gpu_species d, const int *__restrict__ dst_start,
                                  uint32_t *cell, float *x, float *y, float *ux, float *uy,
                                  float *uz, float *w, unsigned long long *id, uint8_t *z)
{
    __shared__ int warp_sum[GPU_THREADS / 32];
    __shared__ int base;
    const int c = blockIdx.x, p0 = d.start[c], p1 = p0 + d.count[c];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (threadIdx.x == 0)
        base = dst_start[c];
    __syncthreads();
    for (int q = p0; q < p1; q += blockDim.x) {
        const int p = q + (int)threadIdx.x;
        const unsigned long long v = p < p1 ? gpu_parts_id(gpu_parts_of(&d), p) : 0ull;
        const int flag = v != 0;
        const unsigned ballot = __ballot_sync(0xffffffffu, flag);
        if (lane == 0)
            warp_sum[wid] = __popc(ballot);
        __syncthreads();
        int before = 0, total = 0;
        for (int k = 0; k < (int)(blockDim.x >> 5); k++) {
            before += k < wid ? warp_sum[k] : 0;
            total += warp_sum[k];
        }
        if (flag) {
            const int o = base + before + __popc(ballot & ((1u << lane) - 1u));
            const float2 xy = d.xy[p], uxy = d.uxy[p], uzw = d.uzw[p];
            cell[o] = d.cell[p];
            x[o] = xy.x;
            y[o] = xy.y;
            ux[o] = uxy.x;
            uy[o] = uxy.y;
            uz[o] = uzw.x;
            w[o] = uzw.y;
            id[o] = v;
            if (z)
                z[o] = d.z[p];
        }
        __syncthreads();
        if (threadIdx.x == 0)
            base += total;
        __syncthreads();
    }
}

/* Pinned host memory of at least n bytes, kept between dumps (gpu_state.pinned). */
static void *pinned(gpu_state *g, size_t n)
{
    if (n > g->pinned_n) {
        if (g->pinned)
            GPU_CK(cudaFreeHost(g->pinned));
        g->pinned = NULL;
        GPU_CK(cudaMallocHost(&g->pinned, n));
        g->pinned_n = n;
    }
    return g->pinned;
}

/* Device memory of at least n bytes for the compacted dumps (gpu_state.trk), kept between
 * dumps: no allocation and no cudaFree (which waits for the device) per dump. */
static char *tracked_scratch(gpu_state *g, size_t n)
{
    if (n > g->trk_n) {
        if (g->trk) {
            GPU_CK(cudaFree(g->trk));
            g->bytes -= g->trk_n;
        }
        g->trk_n = n + n / 4;
        g->trk = gpu_malloc(g, g->trk_n, "tracked particles");
    }
    return (char *)g->trk;
}

/* Counts of all tracked species (one wait), starts on the host, then the compaction of all
 * of them into one device block, copied back in one piece (a second wait). */
species *gpu_fetch_tracked(void *ctx, pic_state *st, species *out)
{
    gpu_state *g = (gpu_state *)ctx;
    const int nc = g->ncl, nsp = st->nsp;
    const size_t slot = 8 + 7 * 4 + 1; /* id, then cell, x, y, ux, uy, uz, w, charge state */
    const size_t tab = ((size_t)nsp * nc * sizeof(int) + 255) / 256 * 256;
    size_t total[DECK_MAX_SPECIES] = {0}, sum = 0; /* sum: bytes, 256-aligned per species */
    memset(out, 0, (size_t)nsp * sizeof *out);
    int *dn = (int *)tracked_scratch(g, 2 * tab); /* counts, starts: nc per species */
    for (int s = 0; s < nsp; s++) {
        species *o = &out[s];
        const species *h = &st->sp[s];
        o->cfg = h->cfg;
        o->name = h->name;
        o->immobile = h->immobile;
        memcpy(o->bnd, h->bnd, sizeof o->bnd);
        o->index = s;
        o->seed = h->seed;
        o->q = h->q;
        o->m = h->m;
        o->qm = h->qm;
        o->start = (int *)empic_calloc((size_t)nc, sizeof(int), "tracked particles");
        o->count = (int *)empic_calloc((size_t)nc, sizeof(int), "tracked particles");
        if (!g->sp[s].idb)
            continue;
        k_count_tracked<<<nc, GPU_THREADS, 0, g->stream>>>(
            gpu_parts_of(&g->sp[s]), g->sp[s].start, g->sp[s].count, dn + s * nc);
        GPU_LAUNCHED(g, "k_count_tracked");
    }
    int *h_tab = (int *)pinned(g, 2 * tab);
    GPU_CK(cudaMemcpyAsync(h_tab, dn, (size_t)nsp * nc * sizeof(int), cudaMemcpyDeviceToHost,
                           g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    int *h_start = (int *)((char *)h_tab + tab);
    for (int s = 0; s < nsp; s++) {
        species *o = &out[s];
        if (!g->sp[s].idb)
            continue;
        for (int c = 0; c < nc; c++) {
            o->count[c] = h_tab[s * nc + c];
            o->start[c] = h_start[s * nc + c] = (int)total[s];
            total[s] += (size_t)o->count[c];
        }
        o->np = (long long)total[s];
        sum += (total[s] * slot + 255) / 256 * 256;
    }
    /* the tables, then one staging area for all species (the counts are read: the buffer
     * may move), and one pinned host buffer (once the starts have left the tables' one) */
    dn = (int *)tracked_scratch(g, 2 * tab + sum + 256);
    char *dbuf = (char *)dn + 2 * tab;
    GPU_CK(cudaMemcpyAsync((char *)dn + tab, h_start, (size_t)nsp * nc * sizeof(int),
                           cudaMemcpyHostToDevice, g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    char *hbuf = (char *)pinned(g, sum + 256);
    size_t at = 0; /* byte offset of the species' block: ids (8-byte) first, then 4-byte */
    for (int s = 0; s < nsp; s++) {
        species *o = &out[s];
        if (!g->sp[s].idb)
            continue;
        const size_t n = total[s];
        char *dp = dbuf + at, *hp = hbuf + at;
        unsigned long long *id = (unsigned long long *)dp;
        uint32_t *cell = (uint32_t *)(dp + 8 * n);
        float *f = (float *)(dp + 12 * n);
        k_compact_tracked<<<nc, GPU_THREADS, 0, g->stream>>>(
            g->sp[s], (const int *)((char *)dn + tab) + s * nc, cell, f, f + n, f + 2 * n,
            f + 3 * n, f + 4 * n, f + 5 * n, id, g->sp[s].z ? (uint8_t *)(f + 6 * n) : NULL);
        GPU_LAUNCHED(g, "k_compact_tracked");
        o->alloc = n;
        o->id = (uint64_t *)hp;
        o->cell = (uint32_t *)(hp + 8 * n);
        o->x = (float *)(hp + 12 * n);
        o->y = o->x + n;
        o->ux = o->x + 2 * n;
        o->uy = o->x + 3 * n;
        o->uz = o->x + 4 * n;
        o->w = o->x + 5 * n;
        o->z = g->sp[s].z ? (uint8_t *)(o->x + 6 * n) : NULL;
        o->tracked = 1;
        at += (n * slot + 255) / 256 * 256;
    }
    if (at)
        GPU_CK(cudaMemcpyAsync(hbuf, dbuf, at, cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    return out;
}

void gpu_release_tracked(void *ctx, species *out)
{
    const gpu_state *g = (const gpu_state *)ctx;
    for (int s = 0; s < g->nsp; s++) {
        free(out[s].start);
        free(out[s].count);
    }
}

void gpu_diag_free(gpu_state *g)
{
    if (g->trk)
        cudaFree(g->trk);
    g->trk = NULL;
    g->trk_n = 0;
    if (g->pinned)
        cudaFreeHost(g->pinned);
    g->pinned = NULL;
    g->pinned_n = 0;
}
