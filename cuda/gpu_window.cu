/* gpu_window.cu - the moving window on the device (src/window.c): fields, PML memories and
 * particle cells one cell toward -x, migration codes and histograms updated so that the next
 * sort moves particles into their new clusters and drops the back column (PBND_DROP), and
 * the injection of the new column: generated on the host by the initial load's code
 * (species_column: profiles are muparser formulas, RNG keyed by global cell, so the same
 * particles as on the CPU), uploaded to a staging buffer and appended to the segments of the
 * last cluster column (re-laid first when one would overflow). */
#include "gpu_internal.h"
#include "particle.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double host_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every row (guard rows too): columns [G, stride-1) take the next column, the last is
 * cleared, the guards below x = 0 kept (as window.c's shift_array). */
__global__ void k_shift_row(const float *a, float *out, int stride, int rows, int G)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (c >= stride || r >= rows)
        return;
    size_t k = (size_t)r * stride + c;
    out[k] = c < G ? a[k] : (c < stride - 1 ? a[k + 1] : 0.0f);
}

/* psi rows of a layer (fbnd_shift): x layer: row j of n entries; y layer: row l of len. */
__global__ void k_shift_psi(float *p, int nrows, int rowlen)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows)
        return;
    float *q = p + (size_t)r * rowlen;
    for (int c = 0; c + 1 < rowlen; c++)
        q[c] = q[c + 1];
    q[rowlen - 1] = 0.0f;
}

/* One block per cluster: cells one column back, the x field of the code recomputed for the
 * new cell, PBND_DROP for the first column; the histogram rebuilt from the codes. */
__global__ void k_window_particles(uint32_t *cell, uint8_t *code, const int *start,
                                   const int *count, int *hist, const int *cx_of, int ncx)
{
    __shared__ int sh[9];
    const int c = blockIdx.x, cx = c % ncx;
    if (threadIdx.x < 9)
        sh[threadIdx.x] = 0;
    __syncthreads();
    const int b = start[c], e = b + count[c];
    for (int p = b + threadIdx.x; p < e; p += blockDim.x) {
        uint32_t cv = cell[p];
        unsigned k = code[p];
        int i = (int)(cv & 0xffffu) - 1, drop = (k == PBND_DROP) | (i < 0);
        int dx = cx_of[i < 0 ? 0 : i] - cx;
        unsigned nk = drop ? PBND_DROP : ((dx < 0 ? 2u : (unsigned)dx) | (k & 0xcu));
        cell[p] = drop ? cv : cv - 1u;
        code[p] = (uint8_t)nk;
        atomicAdd(&sh[nk == PBND_DROP ? 4 : (mig_dx(nk) + 1) + 3 * (mig_dy(nk) + 1)], 1);
    }
    __syncthreads();
    if (threadIdx.x < 9)
        hist[9 * c + threadIdx.x] = sh[threadIdx.x];
}

void gpu_window_shift(sim *S)
{
    gpu_state *g = S->gpu;
    int t = gpu_tic(g, S);
    float *arr[9] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2],
                     g->j[0], g->j[1], g->j[2]};
    dim3 grid(gpu_blocks((size_t)g->stride, 128), (unsigned)g->rows);
    for (int k = 0; k < 9; k++) {
        k_shift_row<<<grid, 128, 0, g->stream>>>(arr[k], g->tmp, g->stride, g->rows, EMF_GUARD);
        GPU_LAUNCHED(g, "k_shift_row");
        GPU_CK(cudaMemcpyAsync(arr[k], g->tmp, g->size * sizeof(float),
                               cudaMemcpyDeviceToDevice, g->stream));
    }
    if (S->f.fb) {
        for (int l = 0; l < g->nlayers; l++) {
            const gpu_layer *L = &g->layer[l];
            const int nrows = L->axis ? L->n : L->len, rowlen = L->axis ? L->len : L->n;
            for (int m = 0; m < 4; m++) {
                k_shift_psi<<<gpu_blocks((size_t)nrows, 64), 64, 0, g->stream>>>(L->psi[m],
                                                                               nrows, rowlen);
                GPU_LAUNCHED(g, "k_shift_psi");
            }
        }
        S->f.fb->shift++;
    }
    gpu_toc(g, t, PH_FIELD);
    t = gpu_tic(g, S);
    for (int s = 0; s < g->nsp; s++) {
        gpu_species *d = &g->sp[s];
        k_window_particles<<<(unsigned)g->ncl, GPU_THREADS, 0, g->stream>>>(
            d->cell, d->code, d->start, d->count, d->hist, g->cx_of, g->ncx);
        GPU_LAUNCHED(g, "k_window_particles");
    }
    gpu_toc(g, t, PH_SORT);
    S->win.cells++;
    g->moved = 1;
}

/* Staged particles: cell, x, y, ux, uy, uz, w (n each, 4 bytes), code (n bytes). */
typedef struct {
    const uint32_t *cell;
    const float *x, *y, *ux, *uy, *uz, *w;
    const uint8_t *code;
    const int *from;          /* first staged particle of cluster row cy (ncy + 1) */
} kstage;

/* One block per cluster row cy: append its staged particles to cluster (cx, cy). */
__global__ void k_inject(kstage a, uint32_t *cell, float *x, float *y, float *ux, float *uy,
                         float *uz, float *w, uint8_t *code, const int *start, int *count,
                         int cx, int ncx)
{
    const int cy = blockIdx.x, c = cx + cy * ncx;
    const int f0 = a.from[cy], n = a.from[cy + 1] - f0;
    const int at = start[c] + count[c];
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        int q = f0 + k, p = at + k;
        cell[p] = a.cell[q];
        x[p] = a.x[q];
        y[p] = a.y[q];
        ux[p] = a.ux[q];
        uy[p] = a.uy[q];
        uz[p] = a.uz[q];
        w[p] = a.w[q];
        code[p] = a.code[q];
    }
    __syncthreads();
    if (threadIdx.x == 0)
        count[c] += n;
}

static void inject_species(gpu_state *g, sim *S, int s, int i, long ig)
{
    const clusters *cl = &S->cl;
    const int cx = cl->cx_of[i], ncy = cl->ncy, nc = cl->n;
    gpu_species *d = &g->sp[s];
    species col;
    int *add = (int *)empic_alloc((size_t)(ncy + 1) * sizeof(int), "injection");
    const long long n = species_column(&S->sp[s], &S->d, cl, i, ig, &col, add);
    if (n > 0) {
        int *count = (int *)empic_alloc(2 * (size_t)nc * sizeof(int), "injection"),
            *cap = count + nc, grow = 0;
        GPU_CK(cudaMemcpyAsync(count, d->count, (size_t)nc * sizeof(int),
                               cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaMemcpyAsync(cap, d->cap, (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost,
                               g->stream));
        GPU_CK(cudaStreamSynchronize(g->stream));
        for (int cy = 0; cy < ncy; cy++)
            grow |= count[cx + cy * cl->ncx] + add[cy] > cap[cx + cy * cl->ncx];
        if (grow) {
            for (int c = 0; c < nc; c++)
                count[c] += c % cl->ncx == cx ? add[c / cl->ncx] : 0;
            gpu_relayout(g, S, s, count);
        }
        free(count);
        /* staging buffer: the 8 arrays, then the row offsets */
        const size_t bytes = (size_t)n * (7 * 4 + 1) + (size_t)(ncy + 1) * sizeof(int) + 16;
        if (g->stage_n < bytes) {
            if (g->stage) {
                GPU_CK(cudaStreamSynchronize(g->stream));
                GPU_CK(cudaFree(g->stage));
                g->bytes -= g->stage_n;
            }
            g->stage_n = 2 * bytes;
            g->stage = gpu_malloc(g, g->stage_n, "injected particles");
        }
        char *base = (char *)g->stage;
        const size_t n4 = (size_t)n * 4;
        const void *src[7] = {col.cell, col.x, col.y, col.ux, col.uy, col.uz, col.w};
        for (int v = 0; v < 7; v++)
            GPU_CK(cudaMemcpyAsync(base + v * n4, src[v], n4, cudaMemcpyHostToDevice,
                                   g->stream));
        GPU_CK(cudaMemcpyAsync(base + 7 * n4, col.code, (size_t)n, cudaMemcpyHostToDevice,
                               g->stream));
        int *from = (int *)(base + ((7 * n4 + (size_t)n + 15) / 16) * 16);
        int run = 0;
        for (int cy = 0; cy <= ncy; cy++) { /* add[] becomes the row offsets */
            int a = cy < ncy ? add[cy] : 0;
            add[cy] = run;
            run += a;
        }
        GPU_CK(cudaMemcpyAsync(from, add, (size_t)(ncy + 1) * sizeof(int),
                               cudaMemcpyHostToDevice, g->stream));
        kstage a = {(const uint32_t *)base,        (const float *)(base + n4),
                    (const float *)(base + 2 * n4), (const float *)(base + 3 * n4),
                    (const float *)(base + 4 * n4), (const float *)(base + 5 * n4),
                    (const float *)(base + 6 * n4), (const uint8_t *)(base + 7 * n4), from};
        k_inject<<<(unsigned)ncy, GPU_THREADS, 0, g->stream>>>(
            a, d->cell, d->x, d->y, d->ux, d->uy, d->uz, d->w, d->code, d->start, d->count, cx,
            cl->ncx);
        GPU_LAUNCHED(g, "k_inject");
        GPU_CK(cudaStreamSynchronize(g->stream)); /* the host arrays are freed below */
        S->sp[s].np += n;
    }
    species_free(&col);
    free(add);
}

/* Host time (the column's generation, upload, capacity check) counted as sort time. */
void gpu_window_inject(sim *S)
{
    gpu_state *g = S->gpu;
    double t0 = host_seconds();
    const int i = S->d.nx - 1;
    const long ig = S->d.nx - 1 + S->win.cells;
    for (int s = 0; s < g->nsp; s++)
        inject_species(g, S, s, i, ig);
    S->phase_s[PH_SORT] += host_seconds() - t0;
}
