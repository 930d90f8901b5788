/* gpu_core.cu - the CUDA backend's table (cuda_backend), device, memory, uploads and
 * downloads, error checks, phase timers and the bandwidth measurement. */
#include "gpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gpu_check(cudaError_t e, const char *what, const char *file, int line)
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
    if (e == cudaSuccess && g && g->sync_each)
        e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) {
        empic_report(file, line, "CUDA error in kernel %s: %s (%s)", kernel,
                     cudaGetErrorString(e), cudaGetErrorName(e));
        empic_exit(1);
    }
}

void *gpu_malloc(gpu_state *g, size_t bytes, const char *what)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 16;
    cudaError_t e = cudaMalloc(&p, bytes);
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

void gpu_put_pairs(float2 *p, const float *a, const float *b, size_t n)
{
    float2 *t = (float2 *)empic_alloc((n ? n : 1) * sizeof(float2), "particle copy");
    for (size_t k = 0; k < n; k++)
        t[k] = make_float2(a[k], b[k]);
    GPU_CK(cudaMemcpy(p, t, n * sizeof(float2), cudaMemcpyHostToDevice));
    free(t);
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
    return a;
}

void gpu_toc(gpu_state *g, int tic, int phase)
{
    int b = g->nev++;
    GPU_CK(cudaEventRecord(g->ev[b], g->stream));
    g->pend_a[g->npend] = tic;
    g->pend_b[g->npend] = b;
    g->pend_phase[g->npend] = phase;
    g->npend++;
}

int gpu_tictoc(gpu_state *g, pic_state *st, int tic, int phase)
{
    gpu_toc(g, tic, phase);
    if (g->nev + 1 > GPU_EVENTS || g->npend + 1 > GPU_EVENTS / 2)
        return gpu_tic(g, st); /* no room for the next stop: harvest, a fresh start */
    return g->nev - 1;
}

void gpu_harvest(gpu_state *g, pic_state *st)
{
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int k = 0; k < g->npend; k++) {
        float ms = 0.0f;
        GPU_CK(cudaEventElapsedTime(&ms, g->ev[g->pend_a[k]], g->ev[g->pend_b[k]]));
        st->phase_s[g->pend_phase[k]] += 1e-3 * ms;
    }
    g->npend = 0;
    g->nev = 0;
}

/* A do-nothing kernel: its image tells whether this build runs on the device. */
__global__ void k_probe(int *p)
{
    if (p)
        *p = 0;
}

/* 1 when a usable CUDA device exists (its name into name), else 0 (the reason into name;
 * reported too when a GPU is there but this build cannot run on it). */
static int gpu_available(char *name, size_t len)
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

static size_t deck_bytes(const pic_state *st, size_t tile_entries)
{
    size_t b = 12 * st->f->size * sizeof(float) + 3 * st->f->size * sizeof(long long) +
               tile_entries * sizeof(long long) +
               (size_t)st->cl->n * 3 * sizeof(double);
    for (int s = 0; s < st->nsp; s++)
        b += st->sp[s].alloc * (SLOT_BYTES + id_bytes(&st->sp[s])) +
             (size_t)st->cl->n * (4 + 9 + 1 + 4) * sizeof(int);
    return b;
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
    d->xy = (float2 *)gpu_malloc(g, n * 8, "particle positions");
    d->uxy = (float2 *)gpu_malloc(g, n * 8, "particle momenta");
    d->uzw = (float2 *)gpu_malloc(g, n * 8, "particle momenta and weights");
    d->cell = (uint32_t *)gpu_malloc(g, n * 4, "particle cells");
    d->code = (uint8_t *)gpu_malloc(g, n, "migration codes");
    d->start = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->count = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->cap = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->need = (int *)gpu_malloc(g, nc * sizeof(int), "cluster table");
    d->hist = (int *)gpu_malloc(g, nc * 9 * sizeof(int), "cluster table");
    d->movers = (int4 *)gpu_malloc(g, nc * sizeof(int4), "cluster table");
    gpu_put_pairs(d->xy, h->x, h->y, n);
    gpu_put_pairs(d->uxy, h->ux, h->uy, n);
    gpu_put_pairs(d->uzw, h->uz, h->w, n);
    GPU_CK(cudaMemcpy(d->cell, h->cell, n * 4, cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(d->code, h->code, n, cudaMemcpyHostToDevice));
    d->idb = id_bytes(h);
    if (d->idb == 8) {
        d->id = gpu_malloc(g, n * 8, "particle ids");
        GPU_CK(cudaMemcpy(d->id, h->id, n * 8, cudaMemcpyHostToDevice));
    } else if (d->idb == 4) {
        uint32_t *t = (uint32_t *)empic_alloc((n ? n : 1) * 4, "particle ids");
        for (size_t p = 0; p < n; p++)
            t[p] = (uint32_t)h->id[p]; /* <= id_max: every slot's id fits */
        d->id = gpu_malloc(g, n * 4, "particle ids");
        GPU_CK(cudaMemcpy(d->id, t, n * 4, cudaMemcpyHostToDevice));
        free(t);
    }
    GPU_CK(cudaMemcpy(d->start, h->start, nc * sizeof(int), cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(d->count, h->count, nc * sizeof(int), cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(d->cap, h->cap, nc * sizeof(int), cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(d->hist, h->hist, nc * 9 * sizeof(int), cudaMemcpyHostToDevice));
}

static void free_species(gpu_species *d)
{
    void *p[] = {d->xy,    d->uxy,   d->uzw,  d->cell, d->code,   d->start,
                 d->count, d->cap,   d->need, d->hist, d->movers, d->id};
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

int gpu_open(pic_state *st, void **ctx)
{
    char name[128];
    *ctx = NULL;
    if (!gpu_available(name, sizeof name)) {
        empic_report(NULL, 0, "backend \"cuda\": %s", name);
        return -1;
    }
    gpu_state *g = (gpu_state *)empic_calloc(1, sizeof *g, "GPU state");
    int ndev = 1;
    GPU_CK(cudaGetDeviceCount(&ndev));
    g->device = comm_local_rank() % ndev; /* one GPU per rank of the node, in turn */
    GPU_CK(cudaSetDevice(g->device));
    cudaDeviceProp p;
    GPU_CK(cudaGetDeviceProperties(&p, g->device));
    snprintf(name, sizeof name, "%.127s", p.name);
    g->nsm = p.multiProcessorCount;
    g->smem_optin = p.sharedMemPerBlockOptin;
    g->sync_each = env_flag("EMPIC_GPU_SYNC");
    g->check = env_flag("EMPIC_GPU_CHECK");
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
    /* the device's own copies of the boundary clocks (written back by gpu_fetch_fields) */
    g->shift = f->fb ? f->fb->shift : st->window_cells;
    g->psi_step = f->fb ? f->fb->psi_step : -1;
    /* shared-memory plan of the particle kernels (fails with a message if clusters are too
     * large for this device) */
    gpu_particles_setup(g, st);

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
                     "particles or cells, or the CPU backend",
                     need, need / 1073741824.0, name, fr, fr / 1073741824.0, tot);
        free(g);
        return -1;
    }
    GPU_CK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    for (int k = 0; k < GPU_EVENTS; k++)
        GPU_CK(cudaEventCreate(&g->ev[k]));
    /* the host fields pinned: dumps copy them at full bus speed (not fatal if refused) */
    g->pinned_fields = cudaHostRegister(f->store, EMF_STORE * f->size * sizeof(float), 0) == cudaSuccess;
    if (!g->pinned_fields)
        cudaGetLastError();

    g->store = (float *)gpu_malloc(g, 12 * g->size * sizeof(float), "field arrays");
    GPU_CK(cudaMemset(g->store, 0, 12 * g->size * sizeof(float)));
    for (int c = 0; c < 3; c++) {
        g->e[c] = g->store + c * g->size;
        g->b[c] = g->store + (3 + c) * g->size;
        g->j[c] = g->store + (6 + c) * g->size;
        GPU_CK(cudaMemcpy(g->e[c], f->e[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
        GPU_CK(cudaMemcpy(g->b[c], f->b[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
        GPU_CK(cudaMemcpy(g->j[c], f->j[c], g->size * sizeof(float), cudaMemcpyHostToDevice));
    }
    g->rho = g->store + 9 * g->size;
    g->tmp = g->store + 10 * g->size;
    g->rho2 = g->store + 11 * g->size;
    GPU_CK(cudaMemcpy(g->rho, f->rho, g->size * sizeof(float), cudaMemcpyHostToDevice));

    g->x0 = (int *)gpu_malloc(g, (size_t)(g->ncx + 1) * sizeof(int), "cluster table");
    g->y0 = (int *)gpu_malloc(g, (size_t)(g->ncy + 1) * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpy(g->x0, st->cl->x0, (size_t)(g->ncx + 1) * sizeof(int),
                      cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(g->y0, st->cl->y0, (size_t)(g->ncy + 1) * sizeof(int),
                      cudaMemcpyHostToDevice));
    g->tiles = (long long *)gpu_malloc(g, g->ntiles * g->tile_set * sizeof(long long),
                                       "current tiles");
    GPU_CK(cudaMemset(g->tiles, 0, g->ntiles * g->tile_set * sizeof(long long)));
    g->acc = (long long *)gpu_malloc(g, 3 * g->size * sizeof(long long), "current sums");
    /* per cluster: 3 field sums, or the kinetic energy of each species */
    const size_t np = (size_t)g->ncl * (g->nsp > 3 ? g->nsp : 3);
    g->partial = (double *)gpu_malloc(g, np * sizeof(double), "reductions");
    GPU_CK(cudaMallocHost(&g->h_partial, np * sizeof(double)));
    g->order = (int *)gpu_malloc(g, (size_t)g->ncl * g->nsp * sizeof(int), "cluster order");
    g->flags = (int *)gpu_malloc(g, 4 * DECK_MAX_SPECIES * sizeof(int), "flags");
    GPU_CK(cudaMemset(g->flags, 0, 4 * DECK_MAX_SPECIES * sizeof(int)));
    GPU_CK(cudaMallocHost(&g->h_flags, 4 * DECK_MAX_SPECIES * sizeof(int)));
    GPU_CK(cudaEventCreateWithFlags(&g->flags_ready, cudaEventDisableTiming));
    g->room = (int *)gpu_malloc(g, (size_t)DECK_MAX_SPECIES * g->ncy * sizeof(int), "flags");
    GPU_CK(cudaMallocHost(&g->h_room, (size_t)DECK_MAX_SPECIES * g->ncy * sizeof(int)));
    GPU_CK(cudaEventCreateWithFlags(&g->stage_done, cudaEventDisableTiming));
    GPU_CK(cudaEventRecord(g->stage_done, g->stream));
    for (int s = 0; s < st->nsp; s++)
        upload_species(g, st, s);
    if (g->ranks > 1)
        GPU_CK(cudaMallocHost(&g->h_hist, (size_t)g->nsp * g->ncl * 9 * sizeof(int)));
    gpu_bnd_setup(g, st);
    gpu_transport_open(g, st);
    GPU_CK(cudaDeviceSynchronize());
    *ctx = g;
    return 0;
}

void gpu_close(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    if (!g)
        return;
    cudaStreamSynchronize(g->stream);
    gpu_transport_close(g);
    if (g->pinned_fields)
        cudaHostUnregister(st->f->store);
    gpu_bnd_free(g);
    for (int s = 0; s < g->nsp; s++)
        free_species(&g->sp[s]);
    gpu_diag_free(g);
    void *p[] = {g->store, g->x0,    g->y0,          g->tiles, g->acc,  g->partial,
                 g->flags, g->lists, g->spare_start, g->room,  g->order};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    if (g->h_partial)
        cudaFreeHost(g->h_partial);
    if (g->h_flags)
        cudaFreeHost(g->h_flags);
    if (g->h_room)
        cudaFreeHost(g->h_room);
    if (g->h_halo)
        cudaFreeHost(g->h_halo);
    if (g->h_hist)
        cudaFreeHost(g->h_hist);
    for (int s = 0; s < g->nsp; s++) {
        gpu_border *B = &g->border[s];
        if (B->dev)
            cudaFree(B->dev), cudaFreeHost(B->host);
        if (B->table)
            cudaFree(B->table), cudaFreeHost(B->h_table);
    }
    if (g->flags_ready)
        cudaEventDestroy(g->flags_ready);
    if (g->stage_done)
        cudaEventDestroy(g->stage_done);
    for (int k = 0; k < GPU_EVENTS; k++)
        if (g->ev[k])
            cudaEventDestroy(g->ev[k]);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    free(g);
}

/* Per species into per + s size (folded, filtered, guards filled, as J) and their sum into
 * f->rho; without per, all species deposited together and folded and filtered once (as the
 * CPU's sim_rho). */
void gpu_rho(void *ctx, pic_state *st, float *per)
{
    gpu_state *g = (gpu_state *)ctx;
    emf *f = st->f;
    const size_t bytes = g->size * sizeof(float);
    if (!per) {
        gpu_charge(g, st);
        GPU_CK(cudaMemcpyAsync(f->rho, g->rho, bytes, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaStreamSynchronize(g->stream));
        return;
    }
    for (int s = 0; s < st->nsp; s++) {
        gpu_rho_deposit(g, s, g->rho2);
        gpu_filter(g, st, g->rho2, NULL, NULL);
        gpu_guard_fill(g, g->rho2, NULL, NULL);
        GPU_CK(cudaStreamSynchronize(g->stream));
        GPU_CK(cudaMemcpy(per + (size_t)s * g->size, g->rho2, bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->tmp, g->rho2, bytes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < g->size; k++)
            f->rho[k] = s ? f->rho[k] + f->tmp[k] : f->tmp[k];
    }
}

void gpu_fetch_fields(void *ctx, pic_state *st, float *per)
{
    gpu_state *g = (gpu_state *)ctx;
    emf *f = st->f;
    const size_t bytes = g->size * sizeof(float);
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int c = 0; c < 3; c++) {
        GPU_CK(cudaMemcpy(f->e[c], g->e[c], bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->b[c], g->b[c], bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->j[c], g->j[c], bytes, cudaMemcpyDeviceToHost));
    }
    gpu_bnd_fetch(g, st); /* PML memories, Mur edges and their clocks, for checkpoints */
    if (per)
        gpu_rho(ctx, st, per);
}

/* Grow the host arrays of species s to n slots (the device may have re-laid segments). */
static void host_grow(species *h, size_t n)
{
    if (h->alloc >= n)
        return;
    void **p[] = {(void **)&h->cell, (void **)&h->x,  (void **)&h->y, (void **)&h->ux,
                  (void **)&h->uy,   (void **)&h->uz, (void **)&h->w};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++) {
        void *q = realloc(*p[k], n * 4);
        if (!q)
            EMPIC_DIE("out of host memory fetching %zu particles", n);
        *p[k] = q;
    }
    void *q = realloc(h->code, n);
    if (!q)
        EMPIC_DIE("out of host memory fetching %zu particles", n);
    h->code = (uint8_t *)q;
    if (h->id && !(h->id = (uint64_t *)realloc(h->id, n * 8)))
        EMPIC_DIE("out of host memory fetching %zu particles", n);
    h->alloc = n;
}

void gpu_fetch_particles(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    const size_t nc = (size_t)g->ncl;
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int s = 0; s < st->nsp; s++) {
        species *h = &st->sp[s];
        gpu_species *d = &g->sp[s];
        host_grow(h, d->alloc);
        const size_t n = d->alloc;
        gpu_get_pairs(h->x, h->y, d->xy, n);
        gpu_get_pairs(h->ux, h->uy, d->uxy, n);
        gpu_get_pairs(h->uz, h->w, d->uzw, n);
        GPU_CK(cudaMemcpy(h->cell, d->cell, n * 4, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->code, d->code, n, cudaMemcpyDeviceToHost));
        if (d->idb == 8)
            GPU_CK(cudaMemcpy(h->id, d->id, n * 8, cudaMemcpyDeviceToHost));
        if (d->idb == 4) {
            uint32_t *t = (uint32_t *)empic_alloc((n ? n : 1) * 4, "particle ids");
            GPU_CK(cudaMemcpy(t, d->id, n * 4, cudaMemcpyDeviceToHost));
            for (size_t p = 0; p < n; p++)
                h->id[p] = t[p];
            free(t);
        }
        GPU_CK(cudaMemcpy(h->start, d->start, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->count, d->count, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->cap, d->cap, nc * sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(h->hist, d->hist, nc * 9 * sizeof(int), cudaMemcpyDeviceToHost));
    }
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
        bytes += (double)(SLOT_BYTES + g->sp[s].idb) * (double)g->sp[s].slots;
    return bytes;
}

/* The sort flags of the last step checked and the phase timers settled. */
void gpu_finish(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    GPU_CK(cudaMemcpyAsync(g->h_flags, g->flags, 4 * g->nsp * sizeof(int),
                           cudaMemcpyDeviceToHost, g->stream));
    gpu_harvest(g, st);
    for (int s = 0; s < g->nsp; s++)
        gpu_check_flags(g, st, s);
}

const backend *cuda_backend(char *name, size_t len)
{
    static backend b;
    if (!gpu_available(name, len))
        return NULL;
    b.name = "cuda";
    b.kind = BACKEND_CUDA;
    b.on_host = 0;
    b.open = gpu_open;
    b.close = gpu_close;
    b.b_half = gpu_b_half;
    b.particles = gpu_particles;
    b.fields = gpu_fields;
    b.window_shift = gpu_window_shift;
    b.sort = gpu_sort;
    b.inject = gpu_inject;
    b.rho = gpu_rho;
    b.field_diag = gpu_field_diag;
    b.fetch_fields = gpu_fetch_fields;
    b.fetch_particles = gpu_fetch_particles;
    b.fetch_tracked = gpu_fetch_tracked;
    b.release_tracked = gpu_release_tracked;
    b.phasespace = gpu_phasespace;
    b.phasespace_extent = gpu_phasespace_extent;
    b.finish = gpu_finish;
    b.bandwidth = gpu_bandwidth;
    b.particle_bytes = gpu_particle_bytes;
    return &b;
}
