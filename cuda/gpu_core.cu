/* gpu_core.cu - the CUDA backend's device, memory, uploads and downloads, CUDA error reports,
 * phase timers and the bandwidth measurement: what every phase file uses (the table and the
 * operations that call several phases are in gpu_backend.cu). */
#include "gpu_internal.h"
#include "average.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gpu_cuda_ok(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess)
        return;
    empic_report(file, line, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e),
                 cudaGetErrorName(e));
    empic_exit(1);
}

void gpu_launched(gpu_state *g, const char *kernel, const char *file, int line)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && g && g->trace)
        gpu_trace_mark(g, kernel);
    if (e == cudaSuccess && g && g->sync_each)
        e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) {
        empic_report(file, line, "CUDA error in kernel %s: %s (%s)", kernel,
                     cudaGetErrorString(e), cudaGetErrorName(e));
        empic_exit(1);
    }
}

static void *device_alloc(gpu_state *g, size_t bytes, const char *what, int async)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 16;
    cudaError_t e = async ? cudaMallocAsync(&p, bytes, g->stream) : cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        empic_report(__FILE__, __LINE__, "out of GPU memory for %s: %zu bytes asked, %zu of "
                     "%zu free (%s)", what, bytes, fr, tot, cudaGetErrorString(e));
        empic_exit(1);
    }
    g->bytes += bytes;
    return p;
}

void *gpu_malloc(gpu_state *g, size_t bytes, const char *what)
{
    return device_alloc(g, bytes, what, 0);
}

void *gpu_malloc_async(gpu_state *g, size_t bytes, const char *what)
{
    return device_alloc(g, bytes, what, 1);
}

void gpu_free_async(gpu_state *g, void *p)
{
    if (p)
        GPU_CK(cudaFreeAsync(p, g->stream));
}

void gpu_get_pairs(float *a, float *b, const float2 *p, size_t n)
{
    float2 *t = (float2 *)empic_alloc((n ? n : 1) * sizeof(float2), "particle copy");
    GPU_CK(cudaMemcpy(t, p, n * sizeof(float2), cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < n; k++) {
        if (a)
            a[k] = t[k].x;
        if (b)
            b[k] = t[k].y;
    }
    free(t);
}

/* ---- phase timers ---- */

int gpu_tic(gpu_state *g, pic_state *st)
{
    if (g->nev + 2 > GPU_EVENTS || g->npend + 1 > GPU_EVENTS / 2)
        gpu_harvest(g, st);
    int a = g->nev++;
    GPU_CK(cudaEventRecord(g->ev[a], g->stream));
    g->open = a;
    return a;
}

static void pend(gpu_state *g, int a, int b, int phase, int within)
{
    g->pend_a[g->npend] = a;
    g->pend_b[g->npend] = b;
    g->pend_phase[g->npend] = phase;
    g->pend_within[g->npend] = within;
    g->npend++;
}

void gpu_toc(gpu_state *g, int tic, int phase)
{
    int b = g->nev++;
    GPU_CK(cudaEventRecord(g->ev[b], g->stream));
    pend(g, tic, b, phase, -1);
    g->open = -1;
}

int gpu_tictoc(gpu_state *g, pic_state *st, int tic, int phase)
{
    gpu_toc(g, tic, phase);
    if (g->nev + 1 > GPU_EVENTS || g->npend + 1 > GPU_EVENTS / 2)
        return gpu_tic(g, st); /* no room for the next stop: harvest, a fresh start */
    g->open = g->nev - 1;
    return g->open;
}

int gpu_exchange_begin(gpu_state *g)
{
    if (g->nev + 3 > GPU_EVENTS || g->npend + 2 > GPU_EVENTS / 2)
        return -1; /* the phase's own stop must still fit */
    int a = g->nev++;
    GPU_CK(cudaEventRecord(g->ev[a], g->stream));
    return a;
}

void gpu_exchange_end(gpu_state *g, int begin)
{
    if (begin < 0)
        return;
    int b = g->nev++;
    GPU_CK(cudaEventRecord(g->ev[b], g->stream));
    pend(g, begin, b, PH_EXCHANGE, g->open);
}

void gpu_harvest(gpu_state *g, pic_state *st)
{
    const double w0 = gpu_trace_now(g);
    GPU_CK(cudaStreamSynchronize(g->main_stream));
    if (g->field_stream)
        GPU_CK(cudaStreamSynchronize(g->field_stream));
    if (g->border_stream) /* the exchanges timed there */
        GPU_CK(cudaStreamSynchronize(g->border_stream));
    gpu_trace_wait(g, "wait-harvest", w0);
    for (int k = 0; k < g->npend; k++) {
        float ms = 0.0f;
        GPU_CK(cudaEventElapsedTime(&ms, g->ev[g->pend_a[k]], g->ev[g->pend_b[k]]));
        st->phase_s[g->pend_phase[k]] += 1e-3 * ms;
        for (int j = 0; j < g->npend && g->pend_within[k] >= 0; j++)
            if (g->pend_a[j] == g->pend_within[k] && g->pend_within[j] < 0)
                st->phase_s[g->pend_phase[j]] -= 1e-3 * ms; /* out of the phase it was in */
    }
    g->npend = 0;
    g->nev = 0;
    g->open = -1;
}

/* ---- the field phase beside the sort ---- */

void gpu_fields_begin(gpu_state *g)
{
    if (!g->overlap)
        return;
    if (!g->fields_pending) {
        GPU_CK(cudaEventRecord(g->pushed, g->main_stream));
        GPU_CK(cudaStreamWaitEvent(g->field_stream, g->pushed, 0));
        g->fields_pending = 1;
    }
    g->stream = g->field_stream;
}

void gpu_fields_continue(gpu_state *g)
{
    if (!g->overlap)
        return;
    g->fields_pending = 1;
    g->stream = g->field_stream;
}

void gpu_fields_end(gpu_state *g)
{
    if (!g->overlap)
        return;
    GPU_CK(cudaEventRecord(g->fields_done, g->field_stream));
    g->stream = g->main_stream;
}

void gpu_border_enter(gpu_state *g)
{
    GPU_CK(cudaEventRecord(g->border_ready, g->main_stream));
    GPU_CK(cudaStreamWaitEvent(g->border_stream, g->border_ready, 0));
    g->stream = g->border_stream;
}

void gpu_border_leave(gpu_state *g)
{
    GPU_CK(cudaEventRecord(g->border_done, g->border_stream));
    g->stream = g->main_stream;
}

/* The main stream behind field_stream's event ev, when it has work not joined. */
static void join_at(gpu_state *g, cudaEvent_t ev)
{
    if (!g->fields_pending)
        return;
    GPU_CK(cudaStreamWaitEvent(g->main_stream, ev, 0));
    g->fields_pending = 0;
}

void gpu_fields_join(gpu_state *g) { join_at(g, g->fields_done); }

/* A do-nothing kernel: its image tells whether this build runs on the device. */
__global__ void k_probe(int *p)
{
    if (p)
        *p = 0;
}

/* 1 when a usable CUDA device exists (its name into name), else 0 (the reason into name;
 * reported too when a GPU is there but this build cannot run on it). */
int gpu_available(char *name, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        cudaGetLastError();
        snprintf(name, len, "no usable CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 0;
    }
    cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess) {
        cudaGetLastError();
        snprintf(name, len, "no usable CUDA device (%s)", cudaGetErrorString(e));
        return 0;
    }
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, k_probe) != cudaSuccess) {
        cudaGetLastError();
        snprintf(name, len, "GPU %s (compute capability %d.%d) cannot run this build's "
                 "kernels; rebuild with make CUDA_ARCH=sm_%d%d", p.name, p.major, p.minor,
                 p.major, p.minor);
        empic_report(NULL, 0, "%s", name); /* worth saying even when the CPU takes over */
        return 0;
    }
    snprintf(name, len, "%s", p.name);
    return 1;
}


/* Device bytes of one tracking id of host species h (gpu_species.idb). */
static int id_bytes(const species *h)
{
    return h->id ? (h->id_max <= 0xffffffffu ? 4 : 8) : 0;
}

/* The external fields' arrays (st->ext.a). */
static size_t gpu_ext_arrays(const pic_state *st)
{
    size_t n = 0;
    for (int m = 0; m < 6; m++)
        n += st->ext.a[m] != NULL;
    return n;
}

/* Device bytes of the deck: fields, tiles, tables and the particle slots, with room for every
 * electron field ionization can make (max_charge less the initial state per ion, with the
 * slack of a segment), allocated as they come. */
static size_t deck_bytes(const pic_state *st, size_t tile_entries)
{
    size_t b = 15 * st->f->size * sizeof(float) + 3 * st->f->size * sizeof(long long) +
               gpu_ext_arrays(st) * st->f->size * sizeof(float) +
               (size_t)avg_arrays(st->avg_q) * st->f->size * sizeof(double) +
               tile_entries * sizeof(long long) +
               (size_t)st->cl->n * 3 * sizeof(double);
    const size_t tile_bytes = (size_t)3 * (st->cl->wmax + 3) * (st->cl->hmax + 3) *
                              sizeof(long long);
    for (int s = 0; s < st->nsp; s++) {
        const species *h = &st->sp[s];
        b += h->alloc * (SLOT_BYTES + id_bytes(h) + (h->z ? 1 : 0)) +
             (size_t)st->cl->n * (4 + 9 + 1 + 4 + 2) * sizeof(int);
        if (!h->immobile) /* the particle kernel's parts of heavy clusters, at most */
            b += (2 * h->alloc / GPU_CHUNK + 1) * 5 / 4 * tile_bytes;
        if (h->ion) /* the electrons, and the increments and tables of gpu_ionize.cu */
            b += (size_t)((double)(h->ion->zmax - h->z0) * (double)h->np * (1.0 + h->slack)) *
                     (SLOT_BYTES + id_bytes(&st->sp[h->ion_to])) +
                 h->alloc * 41 / 32 + (size_t)st->cl->n * 32;
    }
    return b;
}

/* ---- particle transfers: the live slots, in chunks through pinned staging ----
 *
 * The host and the device copies of a species have the same segments, of which only each
 * cluster's first count slots hold particles. A transfer moves those alone, cluster after
 * cluster, in chunks: on the device a kernel packs a chunk into planar arrays (the host's
 * layout, the pairs split) in a scratch area, copied into one half of a pinned buffer while
 * the host's threads copy the chunk before from the other half into the host arrays; an
 * upload runs the other way. No pageable copy (slower, and through a fresh buffer that
 * faults in every page), no copy of the slack, the host's work in parallel and beside the
 * bus's. */

/* Bytes of a chunk (each half of the pinned buffer, and the device scratch): many MiB per copy
 * for the bus's full speed, yet a small share of the device's free memory. */
#define XFER_BYTES ((size_t)16 << 20)

/* A chunk of particles in planar arrays of `stride` slots each: cell, x, y, ux, uy, uz, w,
 * the ids of idb bytes, code, charge state. */
typedef struct {
    uint32_t *cell;
    float *x, *y, *ux, *uy, *uz, *w;
    void *id;
    uint8_t *code, *z;
} planar;

static planar planar_at(char *b, size_t stride, int idb, int zb)
{
    planar p;
    float *f = (float *)(b + 4 * stride);
    p.cell = (uint32_t *)b;
    p.x = f;
    p.y = f + stride;
    p.ux = f + 2 * stride;
    p.uy = f + 3 * stride;
    p.uz = f + 4 * stride;
    p.w = f + 5 * stride;
    p.id = idb ? b + 28 * stride : NULL; /* 8-byte aligned: stride is even */
    p.code = (uint8_t *)b + (28 + idb) * stride;
    p.z = zb ? p.code + stride : NULL;
    return p;
}

/* A particle's bytes in a chunk of species d. */
static size_t planar_slot(const gpu_species *d)
{
    return 7 * 4 + d->idb + 1 + d->zb;
}

/* The cluster of live particle q of a species whose live particles are numbered cluster after
 * cluster (off[c]: the first of cluster c): the last with off[c] <= q. */
__host__ __device__ static inline int live_cluster(const int *off, int ncl, long long q)
{
    int lo = 0, hi = ncl - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (off[mid] <= q)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Live particles q0 .. q0 + m of a species into the chunk b (one thread each). */
__global__ void k_live_down(const gpu_parts a, const int *__restrict__ start,
                            const int *__restrict__ off, int ncl, int q0, int m, planar b)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m)
        return;
    const int c = live_cluster(off, ncl, q0 + t);
    const gpu_part q = gpu_parts_get(a, start[c] + q0 + t - off[c]);
    b.cell[t] = q.cell;
    b.x[t] = q.xy.x;
    b.y[t] = q.xy.y;
    b.ux[t] = q.uxy.x;
    b.uy[t] = q.uxy.y;
    b.uz[t] = q.uzw.x;
    b.w[t] = q.uzw.y;
    if (a.idb == 8)
        ((unsigned long long *)b.id)[t] = q.id;
    else if (a.idb == 4)
        ((uint32_t *)b.id)[t] = (uint32_t)q.id;
    b.code[t] = (uint8_t)q.code;
    if (b.z)
        b.z[t] = (uint8_t)q.z;
}

/* The chunk b into the slots of live particles q0 .. q0 + m. */
__global__ void k_live_up(const gpu_parts a, const int *__restrict__ start,
                          const int *__restrict__ off, int ncl, int q0, int m, const planar b)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m)
        return;
    const int c = live_cluster(off, ncl, q0 + t);
    gpu_part q;
    q.xy = make_float2(b.x[t], b.y[t]);
    q.uxy = make_float2(b.ux[t], b.uy[t]);
    q.uzw = make_float2(b.uz[t], b.w[t]);
    q.cell = b.cell[t];
    q.code = b.code[t];
    q.id = a.idb == 8 ? ((const unsigned long long *)b.id)[t]
           : a.idb == 4 ? ((const uint32_t *)b.id)[t] : 0ull;
    q.z = b.z ? b.z[t] : 0u;
    gpu_parts_put(a, start[c] + q0 + t - off[c], q);
}

/* The host's side of a chunk: live particles q0 .. q0 + m of h between its arrays and the
 * chunk b (down: into the arrays), the threads taking equal parts of the range, each copying
 * the run of every cluster its part meets array by array. */
static void host_chunk(species *h, const int *off, int ncl, long long q0, int m, int idb,
                       const planar *b, int down)
{
#pragma omp parallel
    {
        const long long nt = omp_get_num_threads(), t = omp_get_thread_num();
        long long q = q0 + m * t / nt;
        const long long end = q0 + m * (t + 1) / nt;
        /* the host's arrays (species_array_table) and the chunk's in their order, those of the
           same width on both sides (the ids when 8 bytes on the device; 4-byte ones below) */
        char *hv[SPECIES_ARRAYS];
        size_t e[SPECIES_ARRAYS];
        species_array_table(h, hv, e);
        if (idb != 8)
            hv[SPECIES_ID] = NULL;
        char *const bv[SPECIES_ARRAYS] = {(char *)b->cell, (char *)b->x,  (char *)b->y,
                                          (char *)b->ux,   (char *)b->uy, (char *)b->uz,
                                          (char *)b->w,    (char *)b->code, (char *)b->id,
                                          (char *)b->z};
        for (int c = q < end ? live_cluster(off, ncl, q) : 0; q < end; c++) {
            const long long n = (off[c + 1] < end ? off[c + 1] : end) - q;
            if (n <= 0)
                continue; /* an empty cluster */
            const size_t p = (size_t)(h->start[c] + q - off[c]), k = (size_t)(q - q0);
            for (int v = 0; v < SPECIES_ARRAYS; v++)
                if (hv[v]) {
                    char *hp = hv[v] + p * e[v], *bp = bv[v] + k * e[v];
                    memcpy(down ? hp : bp, down ? bp : hp, (size_t)n * e[v]);
                }
            uint32_t *id4 = idb == 4 ? (uint32_t *)b->id + k : NULL;
            for (long long i = 0; id4 && i < n; i++) {
                if (down)
                    h->id[p + i] = id4[i];
                else
                    id4[i] = (uint32_t)h->id[p + i]; /* <= id_max: it fits */
            }
            q += n;
        }
    }
}

/* A chunk of a transfer: live particles q0 .. q0 + m of species s. */
typedef struct {
    int s, q0, m;
} xfer_job;

/* Live particles per chunk of species d: XFER_BYTES of planar arrays, a multiple of 8. */
static int xfer_per(const gpu_species *d)
{
    return (int)(XFER_BYTES / planar_slot(d) / 8 * 8);
}

/* The live particles of every species between the host arrays and the device (down: to
 * the host), both with the segments of the host's tables (start, count), chunk after chunk:
 * chunk i uses half i % 2 of the pinned buffer, so that the host's copy of one chunk runs
 * while the device packs and copies the next (down) or copies and unpacks the last (up). */
static void transfer(gpu_state *g, pic_state *st, int down)
{
    const int nsp = st->nsp, ncl = g->ncl;
    const size_t noff = (size_t)nsp * (ncl + 1);
    if (!g->xfer[0])
        for (int k = 0; k < 2; k++) {
            GPU_CK(cudaMallocHost(&g->xfer[k], XFER_BYTES));
            GPU_CK(cudaEventCreateWithFlags(&g->xfer_done[k], cudaEventDisableTiming));
        }
    /* per species each cluster's first live particle (its live_cluster table), and the chunks */
    int *off = (int *)empic_alloc(noff * sizeof(int), "particle copy");
    size_t njob = 0;
    for (int s = 0; s < nsp; s++) {
        int *o = off + (size_t)s * (ncl + 1);
        o[0] = 0;
        for (int c = 0; c < ncl; c++)
            o[c + 1] = o[c] + st->sp[s].count[c];
        njob += ((size_t)o[ncl] + xfer_per(&g->sp[s]) - 1) / xfer_per(&g->sp[s]);
    }
    xfer_job *job = (xfer_job *)empic_alloc((njob ? njob : 1) * sizeof *job, "particle copy");
    for (int s = 0, j = 0; s < nsp; s++) {
        const int live = off[(size_t)s * (ncl + 1) + ncl], per = xfer_per(&g->sp[s]);
        for (int q = 0; q < live; q += per, j++)
            job[j] = xfer_job{s, q, live - q < per ? live - q : per};
    }
    int *doff = (int *)gpu_malloc(g, noff * sizeof(int), "particle copy");
    char *scratch = (char *)gpu_malloc(g, XFER_BYTES, "particle copy");
    GPU_CK(cudaMemcpyAsync(doff, off, noff * sizeof(int), cudaMemcpyHostToDevice, g->stream));
    for (size_t i = 0; i <= njob; i++) {
        if (i < njob) {
            const xfer_job J = job[i];
            const gpu_species *d = &g->sp[J.s];
            const size_t stride = ((size_t)J.m + 7) / 8 * 8;
            const size_t bytes = stride * planar_slot(d);
            const int *o = doff + (size_t)J.s * (ncl + 1);
            const planar dev = planar_at(scratch, stride, d->idb, d->zb);
            if (down) {
                k_live_down<<<gpu_blocks((size_t)J.m, 256), 256, 0, g->stream>>>(
                    gpu_parts_of(d), d->start, o, ncl, J.q0, J.m, dev);
                GPU_LAUNCHED(g, "k_live_down");
                GPU_CK(cudaMemcpyAsync(g->xfer[i % 2], scratch, bytes, cudaMemcpyDeviceToHost,
                                       g->stream));
                GPU_CK(cudaEventRecord(g->xfer_done[i % 2], g->stream));
            } else {
                const planar host = planar_at(g->xfer[i % 2], stride, d->idb, d->zb);
                if (i >= 2) /* chunk i - 2 has left this half */
                    GPU_CK(cudaEventSynchronize(g->xfer_done[i % 2]));
                host_chunk(&st->sp[J.s], off + (size_t)J.s * (ncl + 1), ncl, J.q0, J.m, d->idb,
                           &host, 0);
                GPU_CK(cudaMemcpyAsync(scratch, g->xfer[i % 2], bytes, cudaMemcpyHostToDevice,
                                       g->stream));
                GPU_CK(cudaEventRecord(g->xfer_done[i % 2], g->stream));
                k_live_up<<<gpu_blocks((size_t)J.m, 256), 256, 0, g->stream>>>(
                    gpu_parts_of(d), d->start, o, ncl, J.q0, J.m, dev);
                GPU_LAUNCHED(g, "k_live_up");
            }
        }
        if (down && i > 0) { /* the chunk before, come down meanwhile, into the host arrays */
            const xfer_job J = job[i - 1];
            const gpu_species *d = &g->sp[J.s];
            const planar host = planar_at(g->xfer[(i - 1) % 2], ((size_t)J.m + 7) / 8 * 8,
                                          d->idb, d->zb);
            GPU_CK(cudaEventSynchronize(g->xfer_done[(i - 1) % 2]));
            host_chunk(&st->sp[J.s], off + (size_t)J.s * (ncl + 1), ncl, J.q0, J.m, d->idb,
                       &host, 1);
        }
    }
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaFree(scratch));
    GPU_CK(cudaFree(doff));
    g->bytes -= XFER_BYTES + noff * sizeof(int);
    free(job);
    free(off);
}

static void upload_species(gpu_state *g, const pic_state *st, int s)
{
    const species *h = &st->sp[s];
    gpu_species *d = &g->sp[s];
    const size_t n = h->alloc, nc = (size_t)st->cl->n;
    d->mobile = !h->immobile;
    d->q = h->q;
    d->m = h->m;
    d->qm = h->qm;
    d->alloc = n;
    d->slots = n;
    d->xy = (float2 *)gpu_malloc_async(g, n * 8, "particle positions");
    d->uxy = (float2 *)gpu_malloc_async(g, n * 8, "particle momenta");
    d->uzw = (float2 *)gpu_malloc_async(g, n * 8, "particle momenta and weights");
    d->cell = (uint32_t *)gpu_malloc_async(g, n * 4, "particle cells");
    d->code = (uint8_t *)gpu_malloc_async(g, n, "migration codes");
    d->start = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->count = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->cap = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->need = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->hist = (int *)gpu_malloc(g, nc * 9 * sizeof(int), "cluster table");
    d->movers = (int4 *)gpu_malloc(g, nc * sizeof(int4), "cluster table");
    d->idb = id_bytes(h); /* 4: every id of the run fits (<= id_max) */
    if (d->idb)
        d->id = gpu_malloc_async(g, n * d->idb, "particle ids");
    if (h->z) { /* an ionizing species: its charge states and levels */
        d->zb = 1;
        d->z = (uint8_t *)gpu_malloc_async(g, n, "charge states");
        d->ion = h->ion;
        d->ion_to = h->ion_to;
        d->cold = h->cold;
    }
    /* the segments' slack zero, as in fresh host arrays (the particles follow: transfer) */
    GPU_CK(cudaMemsetAsync(d->xy, 0, n * 8, g->stream));
    GPU_CK(cudaMemsetAsync(d->uxy, 0, n * 8, g->stream));
    GPU_CK(cudaMemsetAsync(d->uzw, 0, n * 8, g->stream));
    GPU_CK(cudaMemsetAsync(d->cell, 0, n * 4, g->stream));
    GPU_CK(cudaMemsetAsync(d->code, 0, n, g->stream));
    if (d->id)
        GPU_CK(cudaMemsetAsync(d->id, 0, n * d->idb, g->stream));
    if (d->z)
        GPU_CK(cudaMemsetAsync(d->z, 0, n, g->stream));
    /* in the stream, before the particles' upload that reads start (staged from pageable
     * memory before the calls return) */
    GPU_CK(cudaMemcpyAsync(d->start, h->start, nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    GPU_CK(cudaMemcpyAsync(d->count, h->count, nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    GPU_CK(cudaMemcpyAsync(d->cap, h->cap, nc * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    GPU_CK(cudaMemcpyAsync(d->hist, h->hist, nc * 9 * sizeof(int), cudaMemcpyHostToDevice,
                           g->stream));
    d->cap_max = gpu_most(h->cap, nc, 0);
}

static void free_species(gpu_state *g, gpu_species *d)
{
    void *pool[] = {d->xy, d->uxy, d->uzw, d->cell, d->code, d->id, d->z, d->spare};
    for (size_t k = 0; k < sizeof pool / sizeof pool[0]; k++)
        gpu_free_async(g, pool[k]);
    void *p[] = {d->start, d->count, d->cap, d->need, d->hist, d->movers};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    memset(d, 0, sizeof *d);
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* The GPU state of this rank: its device (one per rank of the node, in turn), its name into
 * name, the environment switches, the mesh and cluster geometry and the boundary clocks. */
gpu_state *gpu_state_open(const pic_state *st, char *name, size_t len)
{
    gpu_state *g = (gpu_state *)empic_calloc(1, sizeof *g, "GPU state");
    g->open = -1; /* no phase timed yet */
    int ndev = 1;
    GPU_CK(cudaGetDeviceCount(&ndev));
    g->device = comm_local_rank() % ndev; /* one GPU per rank of the node, in turn */
    GPU_CK(cudaSetDevice(g->device));
    cudaMemPool_t pool; /* the particle arrays' (gpu_malloc_async): kept, not handed back to
                           the device at each synchronisation, for the next rearrangement */
    GPU_CK(cudaDeviceGetDefaultMemPool(&pool, g->device));
    uint64_t keep = UINT64_MAX;
    GPU_CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    cudaDeviceProp p;
    GPU_CK(cudaGetDeviceProperties(&p, g->device));
    snprintf(name, len, "%.127s", p.name);
    g->nsm = p.multiProcessorCount;
    g->smem_optin = p.sharedMemPerBlockOptin;
    g->sync_each = env_flag("EMPIC_GPU_SYNC");
    g->debug = env_flag("EMPIC_GPU_CHECK");
    const emf *f = st->f;
    g->nx = f->nx;
    g->ny = f->ny;
    g->stride = f->stride;
    g->rows = f->rows;
    g->off = f->off;
    g->i0 = f->i0;
    g->i1 = f->i1;
    g->j0 = f->j0;
    g->j1 = f->j1;
    g->size = f->size;
    g->rank = comm_rank();
    g->ranks = comm_size();
    memcpy(g->nb, f->nb, sizeof g->nb);
    g->hf = f;
    g->own = make_int4(st->cl->cx0, st->cl->cx1, st->cl->cy0, st->cl->cy1);
    g->ncx = st->cl->ncx;
    g->ncy = st->cl->ncy;
    g->ncl = st->cl->n;
    g->wmax = st->cl->wmax;
    g->hmax = st->cl->hmax;
    g->tsz_max = (g->wmax + 3) * (g->hmax + 3);
    g->nsp = st->nsp;
    g->window = st->window;
    g->px = f->bnd[SIDE_XMIN] == FBND_PERIODIC;
    g->py = f->bnd[SIDE_YMIN] == FBND_PERIODIC;
    /* the device's own copies of the boundary clocks (written back by gpu_fetch_fields) */
    g->shift = f->fb ? f->fb->shift : st->window_cells;
    g->psi_step = f->fb ? f->fb->psi_step : -1;
    return g;
}

int gpu_memory_fits(gpu_state *g, const pic_state *st, const char *name)
{
    g->ntiles = 0; /* a tile set per mobile species (one at least: the charge deposit's) */
    for (int s = 0; s < st->nsp; s++)
        g->ntiles += !st->sp[s].immobile;
    g->ntiles = g->ntiles > 0 ? g->ntiles : 1;
    g->tile_set = (size_t)3 * g->tsz_max * g->ncl;
    size_t need = deck_bytes(st, g->ntiles * g->tile_set), fr = 0, tot = 0;
    GPU_CK(cudaMemGetInfo(&fr, &tot));
    if (need + ((size_t)64 << 20) > fr) {
        empic_report(NULL, 0, "backend \"cuda\": the deck needs %zu bytes (%.2f GiB) of "
                     "GPU memory, but %s has only %zu bytes (%.2f GiB) free of %zu; use fewer "
                     "particles or cells (or a lower ionization max_charge), or the CPU backend",
                     need, need / 1073741824.0, name, fr, fr / 1073741824.0, tot);
        return -1;
    }
    return 0;
}

/* Another split's state of this rank (rebalance.h: size entries per field array, alloc[s]
 * slots for np[s] particles) against the free memory and this context's own, which the
 * rebalance frees before it opens the new one; the same margin as gpu_memory_fits. */
int gpu_fits(void *ctx, const pic_state *st, size_t size, const size_t *alloc,
             const long long *np)
{
    const gpu_state *g = (const gpu_state *)ctx;
    emf f = *st->f;
    f.size = size;
    species sp[DECK_MAX_SPECIES];
    for (int s = 0; s < st->nsp; s++) {
        sp[s] = st->sp[s];
        sp[s].alloc = alloc[s];
        sp[s].np = np[s];
    }
    pic_state t = *st;
    t.f = &f;
    t.sp = sp;
    const size_t need = deck_bytes(&t, g->ntiles * g->tile_set);
    size_t fr = 0, tot = 0;
    GPU_CK(cudaMemGetInfo(&fr, &tot));
    return need + ((size_t)64 << 20) <= fr + g->bytes;
}

/* The stream, the timer events and the field arrays (E, B, J, rho uploaded); the host fields
 * pinned, so that dumps copy them at full bus speed (not fatal if refused). */
static void open_fields(gpu_state *g, const emf *f)
{
    /* over several ranks the kernels of border_stream go first (gpu_particles_border_setup:
     * the neighbours wait for its clusters), then those of the fields' chain after the push
     * (J's sums, E, its exchange, the next B: the longest on the laser-wakefield decks,
     * where the sort's passes beside it held its J sums back), then the sort's */
    int least = 0, greatest = 0;
    GPU_CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    const int fields = greatest < least ? greatest + 1 : greatest;
    const int sort = fields < least ? fields + 1 : fields;
    GPU_CK(cudaStreamCreateWithPriority(&g->main_stream, cudaStreamNonBlocking,
                                        g->ranks > 1 ? sort : least));
    GPU_CK(cudaStreamCreateWithPriority(&g->field_stream, cudaStreamNonBlocking,
                                        g->ranks > 1 ? fields : least));
    GPU_CK(cudaStreamCreateWithPriority(&g->inner_stream, cudaStreamNonBlocking,
                                        g->ranks > 1 ? fields : least));
    GPU_CK(cudaEventCreateWithFlags(&g->tiles_ready, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->j_inner, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->e_inner, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->e_made, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->flows_done, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->e_cells, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->b_inner, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->pushed, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->fields_done, cudaEventDisableTiming));
    g->stream = g->main_stream;
    for (int k = 0; k < GPU_EVENTS; k++)
        GPU_CK(cudaEventCreate(&g->ev[k]));
    g->pinned_fields = cudaHostRegister(f->store, EMF_STORE * f->size * sizeof(float), 0) == cudaSuccess;
    if (!g->pinned_fields)
        cudaGetLastError();

    g->pitch = g->size + GPU_SLIDE;
    g->store = (float *)gpu_malloc(g, 15 * g->pitch * sizeof(float), "field arrays");
    GPU_CK(cudaMemset(g->store, 0, 15 * g->pitch * sizeof(float)));
    for (int c = 0; c < 3; c++) {
        g->e[c] = g->store + c * g->pitch;
        g->b[c] = g->store + (3 + c) * g->pitch;
        g->j[c] = g->store + (6 + c) * g->pitch;
        g->bn[c] = g->store + (12 + c) * g->pitch;
        GPU_CK(cudaMemcpy(g->e[c], f->e[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
        GPU_CK(cudaMemcpy(g->b[c], f->b[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
        GPU_CK(cudaMemcpy(g->j[c], f->j[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
    }
    g->rho = g->store + 9 * g->pitch;
    g->tmp = g->store + 10 * g->pitch;
    g->rho2 = g->store + 11 * g->pitch;
    GPU_CK(cudaMemcpy(g->rho, f->rho, g->size * sizeof(float), cudaMemcpyHostToDevice));
}

/* The external fields' arrays (the components that vary in space) and their staging,
 * uploaded. */
static void open_ext(gpu_state *g, pic_state *st)
{
    const size_t n = gpu_ext_arrays(st);
    if (!n)
        return;
    for (int m = 0; m < 6; m++)
        if (st->ext.a[m])
            g->ext[m] = (float *)gpu_malloc(g, g->size * sizeof(float), "external fields");
    GPU_CK(cudaMallocHost(&g->h_ext, n * g->size * sizeof(float)));
    GPU_CK(cudaEventCreateWithFlags(&g->ext_done, cudaEventDisableTiming));
    GPU_CK(cudaEventRecord(g->ext_done, g->stream));
    gpu_ext_fields(g, st);
}

/* The averaged dumps' sums, uploaded (zeros, or a restart's). */
static void open_avg(gpu_state *g, const pic_state *st)
{
    const size_t bytes = (size_t)avg_arrays(st->avg_q) * g->size * sizeof(double);
    if (!bytes)
        return;
    g->avg = (double *)gpu_malloc(g, bytes, "averaged field sums");
    GPU_CK(cudaMemcpy(g->avg, st->avg, bytes, cudaMemcpyHostToDevice));
}

/* The cluster tables, the tile sets, the fixed-point sums, the reductions and the flags. */
static void open_tables(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    g->x0 = (int *)gpu_malloc(g, (size_t)(g->ncx + 1) * sizeof(int), "cluster table");
    g->y0 = (int *)gpu_malloc(g, (size_t)(g->ncy + 1) * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpy(g->x0, st->cl->x0, (size_t)(g->ncx + 1) * sizeof(int),
                      cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(g->y0, st->cl->y0, (size_t)(g->ncy + 1) * sizeof(int),
                      cudaMemcpyHostToDevice));
    g->cx_of = (int *)gpu_malloc(g, (size_t)f->nx * sizeof(int), "cluster table");
    g->cy_of = (int *)gpu_malloc(g, (size_t)f->ny * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpy(g->cx_of, st->cl->cx_of, (size_t)f->nx * sizeof(int),
                      cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(g->cy_of, st->cl->cy_of, (size_t)f->ny * sizeof(int),
                      cudaMemcpyHostToDevice));
    g->tiles = (long long *)gpu_malloc(g, g->ntiles * g->tile_set * sizeof(long long),
                                       "current tiles");
    GPU_CK(cudaMemset(g->tiles, 0, g->ntiles * g->tile_set * sizeof(long long)));
    g->tile_live = (int *)gpu_malloc(g, (size_t)g->ntiles * g->ncl * sizeof(int), "tile flags");
    GPU_CK(cudaMemset(g->tile_live, 0, (size_t)g->ntiles * g->ncl * sizeof(int)));
    for (int s = 0; s < st->nsp; s++)
        if (st->sp[s].z && !g->rest)
            g->rest = (uint8_t *)gpu_malloc(g, (size_t)g->ntiles * g->ncl, "atoms at rest");
    g->acc = (long long *)gpu_malloc(g, 3 * g->size * sizeof(long long), "current sums");
    /* per cluster: 5 field sums, or the kinetic energy of each species */
    const size_t np = (size_t)g->ncl * (g->nsp > 5 ? g->nsp : 5);
    g->partial = (double *)gpu_malloc(g, np * sizeof(double), "reductions");
    GPU_CK(cudaMallocHost(&g->h_partial, np * sizeof(double)));
    g->order = (int *)gpu_malloc(g, (size_t)g->ncl * g->nsp * sizeof(int), "cluster order");
    gpu_split *x = &g->split;
    x->first = (int *)gpu_malloc(g, 2 * (size_t)g->ncl * g->nsp * sizeof(int), "cluster parts");
    x->done = x->first + (size_t)g->ncl * g->nsp;
    GPU_CK(cudaMemset(x->done, 0, (size_t)g->ncl * g->nsp * sizeof(int)));
    x->queue = (int *)gpu_malloc(g, 4 * sizeof(int), "cluster parts");
    GPU_CK(cudaMemset(x->queue, 0, 4 * sizeof(int)));
    GPU_CK(cudaMallocHost(&x->h_want, sizeof(int)));
    *x->h_want = 0;
    g->flags = (int *)gpu_malloc(g, 4 * DECK_MAX_SPECIES * sizeof(int), "flags");
    GPU_CK(cudaMemset(g->flags, 0, 4 * DECK_MAX_SPECIES * sizeof(int)));
    GPU_CK(cudaMallocHost(&g->h_flags, 4 * DECK_MAX_SPECIES * sizeof(int)));
    GPU_CK(cudaEventCreateWithFlags(&g->flags_ready, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->ion_ready, cudaEventDisableTiming));
    g->room = (int *)gpu_malloc(g, (size_t)DECK_MAX_SPECIES * g->ncy * sizeof(int), "flags");
    GPU_CK(cudaMallocHost(&g->h_room, (size_t)DECK_MAX_SPECIES * g->ncy * sizeof(int)));
    GPU_CK(cudaEventCreateWithFlags(&g->stage_done, cudaEventDisableTiming));
    GPU_CK(cudaEventCreateWithFlags(&g->stage_read, cudaEventDisableTiming));
    GPU_CK(cudaStreamCreateWithFlags(&g->up_stream, cudaStreamNonBlocking));
    GPU_CK(cudaEventRecord(g->stage_done, g->up_stream));
    GPU_CK(cudaEventRecord(g->stage_read, g->stream));
}

void gpu_memory_open(gpu_state *g, pic_state *st)
{
    open_fields(g, st->f);
    open_ext(g, st);
    open_avg(g, st);
    open_tables(g, st);
    for (int s = 0; s < st->nsp; s++)
        upload_species(g, st, s);
    GPU_CK(cudaStreamSynchronize(g->stream)); /* the arrays exist for every stream */
    transfer(g, st, 0);
    if (g->ranks > 1)
        GPU_CK(cudaMallocHost(&g->h_hist, (size_t)g->nsp * g->ncl * 9 * sizeof(int)));
    GPU_CK(cudaMallocHost(&g->h_relay, (size_t)g->ncl * 13 * sizeof(int)));
}

void gpu_memory_close(gpu_state *g, pic_state *st)
{
    if (g->pinned_fields)
        cudaHostUnregister(st->f->store);
    g->stream = g->main_stream;
    for (int s = 0; s < g->nsp; s++)
        free_species(g, &g->sp[s]);
    GPU_CK(cudaStreamSynchronize(g->stream));
    cudaMemPool_t pool; /* what the pool kept back to the device: a rebalance's reopen
                           allocates its fields outside the pool */
    GPU_CK(cudaDeviceGetDefaultMemPool(&pool, g->device));
    GPU_CK(cudaMemPoolTrimTo(pool, 0));
    void *p[] = {g->store, g->x0, g->y0, g->cx_of, g->cy_of, g->tiles, g->tile_live, g->rest,
                 g->acc, g->partial, g->flags, g->lists, g->heavy, g->spare_start, g->chunk,
                 g->room, g->order, g->ion_tab, g->ion_dz, g->avg,
                 g->split.first, g->split.queue, g->split.parts, g->split.tiles,
                 g->split.hist, g->split.live, g->split.ke};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    for (int m = 0; m < 6; m++)
        if (g->ext[m])
            cudaFree(g->ext[m]);
    if (g->h_ext) {
        cudaFreeHost(g->h_ext);
        cudaEventDestroy(g->ext_done);
    }
    if (g->h_partial)
        cudaFreeHost(g->h_partial);
    if (g->split.h_want)
        cudaFreeHost(g->split.h_want);
    if (g->h_flags)
        cudaFreeHost(g->h_flags);
    if (g->h_room)
        cudaFreeHost(g->h_room);
    if (g->h_ion_tab)
        cudaFreeHost(g->h_ion_tab);
    free(g->ionq);
    if (g->h_halo)
        cudaFreeHost(g->h_halo);
    if (g->h_hist)
        cudaFreeHost(g->h_hist);
    cudaFreeHost(g->h_relay);
    if (g->h_chunk)
        cudaFreeHost(g->h_chunk);
    for (int k = 0; k < 2; k++)
        if (g->xfer[k]) {
            cudaFreeHost(g->xfer[k]);
            cudaEventDestroy(g->xfer_done[k]);
        }
    for (int s = 0; s < g->nsp; s++) {
        gpu_border *B = &g->border[s];
        if (B->dev)
            cudaFree(B->dev);
        if (B->host)
            cudaFreeHost(B->host);
        if (B->table)
            cudaFree(B->table), cudaFreeHost(B->h_table);
    }
    if (g->flags_ready)
        cudaEventDestroy(g->flags_ready);
    if (g->ion_ready)
        cudaEventDestroy(g->ion_ready);
    if (g->stage_done)
        cudaEventDestroy(g->stage_done);
    if (g->stage_read)
        cudaEventDestroy(g->stage_read);
    if (g->up_stream)
        cudaStreamDestroy(g->up_stream);
    for (int k = 0; k < GPU_EVENTS; k++)
        if (g->ev[k])
            cudaEventDestroy(g->ev[k]);
    if (g->pushed)
        cudaEventDestroy(g->pushed);
    if (g->fields_done)
        cudaEventDestroy(g->fields_done);
    if (g->main_stream)
        cudaStreamDestroy(g->main_stream);
    if (g->field_stream)
        cudaStreamDestroy(g->field_stream);
    if (g->inner_stream) {
        cudaStreamDestroy(g->inner_stream);
        const cudaEvent_t in[] = {g->tiles_ready, g->j_inner, g->e_inner, g->e_made,
                                  g->flows_done, g->e_cells, g->b_inner};
        for (size_t k = 0; k < sizeof in / sizeof in[0]; k++)
            cudaEventDestroy(in[k]);
    }
    if (g->border_stream) {
        cudaStreamDestroy(g->border_stream);
        cudaEventDestroy(g->border_ready);
        cudaEventDestroy(g->border_pushed);
        cudaEventDestroy(g->border_done);
        cudaEventDestroy(g->fold_sent);
        cudaFree(g->border_entries);
    }
    free(g);
}

void gpu_fetch_particles(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    const size_t nc = (size_t)g->ncl;
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int s = 0; s < st->nsp; s++) { /* the tables, the host arrays grown to the layout */
        species *h = &st->sp[s];
        gpu_species *d = &g->sp[s];
        if (h->alloc < d->alloc) /* the device re-laid the segments out with more slots */
            species_resize(h, d->alloc);
        GPU_CK(cudaMemcpy(h->start, d->start, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->count, d->count, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->cap, d->cap, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->hist, d->hist, nc * 9 * sizeof(int), cudaMemcpyDeviceToHost));
    }
    transfer(g, st, 1);
}

void gpu_counts(void *ctx, pic_state *st, int *count)
{
    gpu_state *g = (gpu_state *)ctx;
    const size_t nc = (size_t)g->ncl;
    gpu_fields_join(g);
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int s = 0; s < st->nsp; s++)
        GPU_CK(cudaMemcpy(count + (size_t)s * nc, g->sp[s].count, nc * sizeof(int),
                          cudaMemcpyDeviceToHost));
}

double gpu_bandwidth(void *ctx)
{
    (void)ctx;
    const size_t n = (size_t)1 << 30; /* 1 GiB each way */
    void *a = NULL, *b = NULL;
    if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) {
        cudaGetLastError();
        if (a)
            cudaFree(a);
        return 0.0;
    }
    cudaEvent_t t0, t1;
    GPU_CK(cudaEventCreate(&t0));
    GPU_CK(cudaEventCreate(&t1));
    GPU_CK(cudaMemset(a, 1, n));
    GPU_CK(cudaMemset(b, 2, n));
    GPU_CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice)); /* warm-up */
    float best = 0.0f;
    for (int r = 0; r < 5; r++) {
        float ms = 0.0f;
        GPU_CK(cudaEventRecord(t0));
        GPU_CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
        GPU_CK(cudaEventRecord(t1));
        GPU_CK(cudaEventSynchronize(t1));
        GPU_CK(cudaEventElapsedTime(&ms, t0, t1));
        if (best == 0.0f || ms < best)
            best = ms;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaFree(a);
    cudaFree(b);
    return best > 0.0f ? 2.0 * (double)n / (1e-3 * best) : 0.0;
}

/* Device bytes of particle storage: every species' arrays as allocated (their segments'
 * slack and the arrays' room to grow included) and ids. */
double gpu_particle_bytes(void *ctx, const pic_state *st)
{
    const gpu_state *g = (const gpu_state *)ctx;
    (void)st;
    double bytes = 0.0;
    for (int s = 0; g && s < g->nsp; s++)
        bytes += (double)(SLOT_BYTES + g->sp[s].idb + g->sp[s].zb) * (double)g->sp[s].slots;
    return bytes;
}
