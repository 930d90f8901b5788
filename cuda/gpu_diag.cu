/* gpu_diag.cu - in-situ diagnostics on the device (src/insitu.h): phase-space histograms
 * and the extent of an axis over a species, without copying the particles to the host,
 * and the tracking ids' part of a global rearrangement.
 *
 * Histogram: a grid of about two blocks per SM walks the clusters; each block bins its
 * particles (include/phasespace.h, the same arithmetic as the CPU) into a private float
 * copy in shared memory with shared-memory atomics when the histogram fits, then adds the
 * non-empty bins to a double histogram in global memory. Larger histograms go straight to
 * global double atomics. */
#include "gpu_internal.h"
#include "phasespace.h"

#include <float.h>

#define DIAG_SMEM_BINS 12288 /* 48 KiB of float bins: the default shared-memory limit */

__global__ void k_phasespace(ps_grid g, const uint32_t *__restrict__ cell,
                             const float *__restrict__ x, const float *__restrict__ y,
                             const float *__restrict__ ux, const float *__restrict__ uy,
                             const float *__restrict__ uz, const float *__restrict__ w,
                             const int *__restrict__ start, const int *__restrict__ count,
                             int ncl, double *hist, int shared)
{
    extern __shared__ float sh[];
    const int nb = g.n[0] * g.n[1];
    if (shared) {
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            sh[b] = 0.0f;
        __syncthreads();
    }
    for (int c = blockIdx.x; c < ncl; c += gridDim.x) {
        const int p0 = start[c], p1 = p0 + count[c];
        for (int p = p0 + (int)threadIdx.x; p < p1; p += blockDim.x) {
            const uint32_t k = cell[p];
            int b = ps_bin(&g, (int)(k & 0xffffu), (int)(k >> 16), x[p], y[p], ux[p], uy[p],
                           uz[p]);
            if (b < 0)
                continue;
            if (shared)
                atomicAdd(&sh[b], w[p]);
            else
                atomicAdd(&hist[b], (double)w[p]);
        }
    }
    if (shared) {
        __syncthreads();
        for (int b = threadIdx.x; b < nb; b += blockDim.x)
            if (sh[b] != 0.0f)
                atomicAdd(&hist[b], (double)sh[b]);
    }
}

/* Per block: smallest and largest value of `axis` (positive ones only when `positive`). */
__global__ void k_extent(ps_grid g, int axis, int positive, const uint32_t *__restrict__ cell,
                         const float *__restrict__ x, const float *__restrict__ y,
                         const float *__restrict__ ux, const float *__restrict__ uy,
                         const float *__restrict__ uz, const int *__restrict__ start,
                         const int *__restrict__ count, int ncl, double *out)
{
    __shared__ double lo[GPU_THREADS], hi[GPU_THREADS];
    double l = DBL_MAX, h = -DBL_MAX;
    for (int c = blockIdx.x; c < ncl; c += gridDim.x) {
        const int p0 = start[c], p1 = p0 + count[c];
        for (int p = p0 + (int)threadIdx.x; p < p1; p += blockDim.x) {
            const uint32_t k = cell[p];
            double v = ps_value(&g, axis, (int)(k & 0xffffu), (int)(k >> 16), x[p], y[p], ux[p],
                                uy[p], uz[p]);
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

void gpu_phasespace(sim *S, int s, const ps_grid *grid, double *h)
{
    gpu_state *g = S->gpu;
    gpu_species *d = &g->sp[s];
    const size_t nb = (size_t)grid->n[0] * (size_t)grid->n[1];
    double *dh = (double *)gpu_malloc(g, nb * sizeof(double), "phase-space histogram");
    GPU_CK(cudaMemsetAsync(dh, 0, nb * sizeof(double), g->stream));
    const int shared = nb <= DIAG_SMEM_BINS;
    const int nbk = diag_blocks(g);
    if (nbk > 0) {
        k_phasespace<<<nbk, GPU_THREADS, shared ? nb * sizeof(float) : 0, g->stream>>>(
            *grid, d->cell, d->x, d->y, d->ux, d->uy, d->uz, d->w, d->start, d->count, g->ncl,
            dh, shared);
        GPU_LAUNCHED(g, "k_phasespace");
    }
    GPU_CK(cudaMemcpyAsync(h, dh, nb * sizeof(double), cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaFree(dh));
}

int gpu_phasespace_extent(sim *S, int s, const ps_grid *grid, int axis, int positive,
                          double mm[2])
{
    gpu_state *g = S->gpu;
    gpu_species *d = &g->sp[s];
    const int nbk = diag_blocks(g);
    mm[0] = DBL_MAX;
    mm[1] = -DBL_MAX;
    if (nbk <= 0)
        return 0;
    double *dout = (double *)gpu_malloc(g, 2 * (size_t)nbk * sizeof(double), "extent");
    double *out = (double *)empic_alloc(2 * (size_t)nbk * sizeof(double), "extent");
    k_extent<<<nbk, GPU_THREADS, 0, g->stream>>>(*grid, axis, positive, d->cell, d->x, d->y,
                                                  d->ux, d->uy, d->uz, d->start, d->count,
                                                  g->ncl, dout);
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
    return mm[0] <= mm[1];
}

/* ---- tracking ids ---- */

__global__ void k_relayout_ids(const unsigned long long *__restrict__ src,
                               unsigned long long *__restrict__ dst, const int *old_start,
                               const int *new_start, const int *count)
{
    const int c = blockIdx.x, a = old_start[c], b = new_start[c], n = count[c];
    for (int k = threadIdx.x; k < n; k += blockDim.x)
        dst[b + k] = src[a + k];
}

void gpu_relayout_ids(gpu_state *g, gpu_species *d, const int *new_start, size_t total)
{
    if (!d->id)
        return;
    unsigned long long *id = (unsigned long long *)gpu_malloc(
        g, total * sizeof(unsigned long long), "particle ids (global rearrangement)");
    k_relayout_ids<<<g->ncl, GPU_THREADS, 0, g->stream>>>(d->id, id, d->start, new_start,
                                                           d->count);
    GPU_LAUNCHED(g, "k_relayout_ids");
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaFree(d->id));
    d->id = id;
}
