/* gpu_window.cu - the moving window on the device (the twin of src/cpu/cpu_window.c):
 * fields, PML memories and particle cells one cell toward -x (window_shift_particle),
 * migration codes and histograms updated so that the next sort moves particles into their
 * new clusters and drops the back column (PBND_DROP): the particle kernel and the walls
 * shift the mobile species' particles as they push them, k_window_particles after them
 * those of immobile species and atoms at rest; and the injection of the new column:
 * generated on the host by the initial load's code (species_column, called by the caller:
 * profiles are muparser formulas, RNG keyed by global cell, so the same particles as on the
 * CPU), uploaded to a staging buffer and appended to the segments of the last cluster
 * column (re-laid first when one would overflow). */
#include "gpu_internal.h"
#include "ebal.h"
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

/* The window's shift of an array of rows: every row one entry toward -x, its last entry
 * cleared, its first `first` entries kept (the guards below x = 0 at the box's edge). Moving
 * the array's pointer one float on shifts every row at once (x is the fastest index), so a
 * shift copies nothing: the array lies in an allocation with GPU_SLIDE floats of room behind
 * it, used up one shift at a time, then copied back to the allocation's start. */

/* Array *p (n floats of an allocation of cap floats from base) one float on; back to base
 * first when its room is used up, through g->tmp in pieces of at most g->size floats (the
 * field stream's order: the filter's use of tmp is done; each piece's copy back ends before
 * the next piece starts, so it never overwrites what is yet to be read). */
static void slide(gpu_state *g, float **p, float *base, size_t cap, size_t n)
{
    if ((size_t)(*p - base) + n + 1 > cap) {
        for (size_t at = 0; at < n; at += g->size) {
            const size_t k = n - at < g->size ? n - at : g->size;
            GPU_CK(cudaMemcpyAsync(g->tmp, *p + at, k * sizeof(float),
                                   cudaMemcpyDeviceToDevice, g->stream));
            GPU_CK(cudaMemcpyAsync(base + at, g->tmp, k * sizeof(float),
                                   cudaMemcpyDeviceToDevice, g->stream));
        }
        *p = base;
    }
    (*p)++;
}

/* A field array of the store (e, b, j: each in a slot of g->pitch floats) slid. */
static void slide_field(gpu_state *g, float **p)
{
    float *base = g->store + (size_t)(*p - g->store) / g->pitch * g->pitch;
    slide(g, p, base, g->pitch, g->size);
}

/* The slid arrays of one k_slide_rows launch: `rows` rows of len entries each, the first
 * `first` of each row kept. */
#define SLIDE_MAX 24
typedef struct {
    float *p[SLIDE_MAX];
    int rows[SLIDE_MAX], len[SLIDE_MAX], first[SLIDE_MAX];
    int n;
} slid_rows;

static void slid_add(slid_rows *a, float *p, int rows, int len, int first)
{
    a->p[a->n] = p;
    a->rows[a->n] = rows;
    a->len[a->n] = len;
    a->first[a->n++] = first;
}

/* After the slide: row j's first entries take back the values that slid off them (now one
 * entry before), and the entry before row j (row j - 1's last, which row j's first entry
 * slid into) is cleared. Thread j (0..rows) of array blockIdx.y alone reads and writes
 * those entries. */
__global__ void k_slide_rows(const __grid_constant__ slid_rows a)
{
    const int k = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > a.rows[k])
        return;
    float *row = a.p[k] + (size_t)j * a.len[k], v[EMF_GUARD];
    const int first = j < a.rows[k] ? a.first[k] : 0;
#pragma unroll
    for (int c = 0; c < EMF_GUARD; c++)
        if (c < first)
            v[c] = row[c - 1];
#pragma unroll
    for (int c = 0; c < EMF_GUARD; c++)
        if (c < first)
            row[c] = v[c];
    if (j > 0)
        row[-1] = 0.0f;
}

static void slide_rows(gpu_state *g, const slid_rows *a)
{
    int most = 0;
    for (int k = 0; k < a->n; k++)
        most = a->rows[k] > most ? a->rows[k] : most;
    k_slide_rows<<<dim3(gpu_blocks((size_t)most + 1, 128), (unsigned)a->n), 128, 0,
                   g->stream>>>(*a);
    GPU_LAUNCHED(g, "k_slide_rows");
}

/* One block per cluster and species of the list (blockIdx.y: the entry), for the clusters
 * the particle kernel does not shift: every cluster of an immobile species; this rank's
 * clusters of atoms at rest off the walls (k_walls shifts those on them). In the back
 * column, before the shift, the energy of the particles it drops into lost[species ncl +
 * cluster] (atoms at rest take nothing away); then each particle shifted and the histogram
 * rebuilt from the codes. */
typedef struct {
    uint32_t *cell[DECK_MAX_SPECIES];
    uint8_t *code[DECK_MAX_SPECIES];
    const float2 *uxy[DECK_MAX_SPECIES], *uzw[DECK_MAX_SPECIES];
    const int *start[DECK_MAX_SPECIES], *count[DECK_MAX_SPECIES];
    const uint8_t *rest[DECK_MAX_SPECIES]; /* gpu_rest_of */
    int *hist[DECK_MAX_SPECIES];
    double *lost[DECK_MAX_SPECIES];        /* the species' ncl entries of gpu_state.lost */
    int mobile[DECK_MAX_SPECIES];
    unsigned walls[DECK_MAX_SPECIES];      /* pbnd_sides */
} kwindow;

__global__ void k_window_particles(const __grid_constant__ kwindow w, const int *x0, int ncx,
                                   int ncy, int4 own)
{
    const int sp = blockIdx.y, c = blockIdx.x, cx = c % ncx, cy = c / ncx;
    const bool rest = w.rest[sp] && w.rest[sp][c];
    if (w.mobile[sp] && !(rest && in_box(own, cx, cy) &&
                          !pbnd_edge_cluster(w.walls[sp], cx, cy, ncx, ncy)))
        return; /* the same in the block */
    gpu_window_cluster(w.cell[sp], w.code[sp], w.uxy[sp], w.uzw[sp], w.start[sp][c],
                       w.count[sp][c], x0[cx], cx == 0 && !rest, &w.lost[sp][c],
                       w.hist[sp] + 9 * c);
}

/* Whether k_window_particles shifts species s (immobile, or with atoms at rest). */
static int shifted_after_push(const gpu_state *g, int s)
{
    return !g->sp[s].mobile || gpu_rest_of(g, s);
}

int gpu_window_after_push(const gpu_state *g)
{
    for (int s = 0; s < g->nsp; s++)
        if (shifted_after_push(g, s))
            return 1;
    return 0;
}

void gpu_window_particles(gpu_state *g, const pic_state *st)
{
    if (!g->window || !st->window_next)
        return;
    kwindow w;
    int m = 0;
    for (int s = 0; s < g->nsp; s++) {
        const gpu_species *d = &g->sp[s];
        if (!shifted_after_push(g, s))
            continue; /* shifted by the particle kernel and the walls */
        w.cell[m] = d->cell;
        w.code[m] = d->code;
        w.uxy[m] = d->uxy;
        w.uzw[m] = d->uzw;
        w.start[m] = d->start;
        w.count[m] = d->count;
        w.rest[m] = gpu_rest_of(g, s);
        w.hist[m] = d->hist;
        w.lost[m] = g->lost + (size_t)s * g->ncl;
        w.mobile[m] = d->mobile;
        w.walls[m++] = pbnd_sides(d->walls.bnd);
    }
    if (!m)
        return;
    k_window_particles<<<dim3((unsigned)g->ncl, (unsigned)m), GPU_THREADS, 0, g->stream>>>(
        w, g->x0, g->ncx, g->ncy, g->own);
    GPU_LAUNCHED(g, "k_window_particles");
}

/* Before the fields' shift: the field energy it moves out of the balance region at xmin and
 * in from the xmax layer (ebal_shift_column; the CPU's fbnd_shift_flows), slot (cluster row)
 * blockIdx.x, side blockIdx.y: the threads take a row each, thread 0 adds them in row order. */
#define EBAL_SHIFT_THREADS 32
__global__ void k_ebal_shift(ebal_region r, const int *y0, const int *cx_of, int4 own,
                             const float *ex, const float *ey, const float *ez,
                             const float *bx, const float *by, const float *bz, int off,
                             int stride, double h, int nslot, double *bal)
{
    __shared__ double row[EBAL_SHIFT_THREADS];
    const int sl = blockIdx.x, k = blockIdx.y;
    const int node = k ? r.hi[0] : r.lo[0];
    if (!in_box(own, cx_of[node], sl))
        return;
    double v = 0.0;
    for (int t0 = y0[sl]; t0 < y0[sl + 1]; t0 += EBAL_SHIFT_THREADS) {
        const int t = t0 + threadIdx.x, m = min(EBAL_SHIFT_THREADS, y0[sl + 1] - t0);
        if (t < y0[sl + 1])
            row[threadIdx.x] = ebal_shift_column(&r, k, t, ex, ey, ez, bx, by, bz, off, stride);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int q = 0; q < m; q++)
                v += row[q];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        bal[k * nslot + sl] += k ? -h * v : h * v;
}

/* The first column a shift moves: the left guards too where a rank lies on the left. */
static int shift_first(const gpu_state *g)
{
    return g->nb[SIDE_XMIN] >= 0 && g->i0 > 0 ? 0 : EMF_GUARD;
}

void gpu_window_j(gpu_state *g)
{
    for (; g->j_behind > 0; g->j_behind--) {
        if (g->ranks > 1) /* the column that moves in is the neighbour's */
            gpu_guard_fill(g, g->j[0], g->j[1], g->j[2]);
        slid_rows a;
        a.n = 0;
        for (int c = 0; c < 3; c++) {
            slide_field(g, &g->j[c]);
            slid_add(&a, g->j[c], g->rows, g->stride, shift_first(g));
        }
        slide_rows(g, &a);
    }
}

void gpu_window_shift(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    /* the fields' part, after the field phase and beside the sort (the particles were shifted
       as they were pushed: gpu_window_particles) */
    gpu_fields_begin(g);
    int t = gpu_tic(g, st);
    /* J waits: the next step's current overwrites it, and what reads it before shifts it
     * first (gpu_window_j). Over several ranks E's and B's guards, filled before the shift
     * (gpu_fields), are filled again after it, and the layers' memories' border columns
     * exchanged: B's half steps run over the guards two cells deep (gpu_b_half). */
    const int first = shift_first(g);
    if (st->f->fb) {
        k_ebal_shift<<<dim3((unsigned)g->ncy, 2), EBAL_SHIFT_THREADS, 0, g->stream>>>(
            st->reg, g->y0, g->cx_of, g->own, g->e[0], g->e[1], g->e[2],
            g->b[0], g->b[1], g->b[2], g->off, g->stride, 0.5 * st->f->dx * st->f->dy,
            st->nslot, g->bal);
        GPU_LAUNCHED(g, "k_ebal_shift");
    }
    slid_rows a;
    a.n = 0;
    for (int c = 0; c < 3; c++) {
        slide_field(g, &g->e[c]);
        slide_field(g, &g->b[c]);
        slid_add(&a, g->e[c], g->rows, g->stride, first);
        slid_add(&a, g->b[c], g->rows, g->stride, first);
    }
    g->j_behind++;
    /* the layers' memories: x layers rows of n entries along x, y layers rows of len */
    for (int l = 0; st->f->fb && l < g->nlayers; l++) {
        gpu_layer *L = &g->layer[l];
        const size_t n = (size_t)L->n * L->len;
        for (int m = 0; m < 4; m++) {
            slide(g, &L->psi[m], L->psi_mem[m], n + GPU_SLIDE, n);
            slid_add(&a, L->psi[m], L->axis ? L->n : L->len, L->axis ? L->len : L->n, 0);
        }
    }
    slide_rows(g, &a);
    if (st->f->fb && g->nlayers > 0) {
        if (g->ranks > 1 && g->nccl) { /* the layers' last column from the rank on the
                                          right, device to device (gpu_nccl.cu) */
            gpu_nccl_psi_column(g);
        } else if (g->ranks > 1) { /* the same: the host's exchange on host copies (the
                                      memories are thin strips) */
            GPU_CK(cudaStreamSynchronize(g->stream));
            gpu_fbnd_fetch(g, st);
            fbnd_shift_exchange(st->f);
            const fbnd *b = st->f->fb;
            for (int l = 0; l < g->nlayers; l++)
                for (int m = 0; m < 4; m++)
                    GPU_CK(cudaMemcpyAsync(g->layer[l].psi[m], b->layer[l].psi[m],
                                           (size_t)g->layer[l].n * g->layer[l].len *
                                               sizeof(float),
                                           cudaMemcpyHostToDevice, g->stream));
        }
    }
    if (g->ranks > 1) {
        float *const eb[6] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2]};
        gpu_guard_fill_n(g, eb, 6);
        /* gpu_b_half's split after the fill, which reads B's cells that its inner part
           changes */
        GPU_CK(cudaEventRecord(g->e_cells, g->stream));
    }
    g->shift++; /* the laser sources' clock (fbnd.shift, written back by gpu_fetch_fields) */
    gpu_toc(g, t, PH_FIELD);
    gpu_fields_end(g);
}

/* Staged particles: tracking ids (n, 8 bytes, tracked species only), cell, x, y, ux, uy,
 * uz, w (n each, 4 bytes), code (n bytes). */
typedef struct {
    const unsigned long long *id;
    const uint32_t *cell;
    const float *x, *y, *ux, *uy, *uz, *w;
    const uint8_t *code;
    const int *from;          /* first staged particle of cluster row cy (ncy + 1) */
} kstage;

/* A species' staged column and where it goes. */
typedef struct {
    kstage a;
    gpu_parts p;
    const int *start;
    int *count;
    unsigned z0;              /* an ionizing species' initial charge state (the load's) */
} kinject;

typedef struct {
    kinject s[DECK_MAX_SPECIES];
} kinject_all;

/* One block per cluster row cy and species (blockIdx.y): append its staged particles to
 * cluster (cx, cy). */
__global__ void k_inject(const __grid_constant__ kinject_all all, int cx, int ncx)
{
    const kinject &d = all.s[blockIdx.y];
    const kstage &a = d.a;
    const gpu_parts &o = d.p;
    const int *start = d.start;
    int *count = d.count;
    const int cy = blockIdx.x, c = cx + cy * ncx;
    const int f0 = a.from[cy], n = a.from[cy + 1] - f0;
    const int at = start[c] + count[c];
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const int q = f0 + k;
        const gpu_part v = {make_float2(a.x[q], a.y[q]),   make_float2(a.ux[q], a.uy[q]),
                            make_float2(a.uz[q], a.w[q]), a.cell[q],
                            a.code[q],                     a.id ? a.id[q] : 0ull,
                            d.z0};
        gpu_parts_put(o, at + k, v); /* ids in 4 bytes: <= species.id_max */
    }
    __syncthreads();
    if (threadIdx.x == 0)
        count[c] += n;
}

/* Layout of a species' staged column of n particles, each part on a 16-byte boundary: the
 * ids (8 bytes each, tracked species only), 7 arrays of 4-byte values, the codes and the
 * ncy + 1 row offsets. */
typedef struct {
    size_t arrays, code, from, bytes;
} stage_layout;

static stage_layout stage_of(long long n, int ncy, int tracked)
{
    stage_layout L;
    L.arrays = tracked ? ((size_t)n * 8 + 15) / 16 * 16 : 0;
    L.code = L.arrays + ((size_t)n * 28 + 15) / 16 * 16;
    L.from = L.code + ((size_t)n + 15) / 16 * 16;
    L.bytes = L.from + ((size_t)(ncy + 1) * 4 + 15) / 16 * 16;
    return L;
}

/* The injection column cx when the room the last sort left there may not take it: every
 * species' counts and capacities read back, and a species whose segments there would
 * overflow re-laid first. */
static void make_room(gpu_state *g, pic_state *st, const long long *n, const int *add, int cx)
{
    const clusters *cl = st->cl;
    const int ncy = cl->ncy, nc = cl->n, nsp = g->nsp;
    int *tab = (int *)empic_alloc((size_t)nsp * 2 * nc * sizeof(int), "injection");
    for (int s = 0; s < nsp; s++)
        if (n[s]) {
            GPU_CK(cudaMemcpyAsync(tab + 2 * s * nc, g->sp[s].count,
                                   (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost,
                                   g->stream));
            GPU_CK(cudaMemcpyAsync(tab + (2 * s + 1) * nc, g->sp[s].cap,
                                   (size_t)nc * sizeof(int), cudaMemcpyDeviceToHost,
                                   g->stream));
        }
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaEventSynchronize(g->stage_done)); /* the last upload has left h_stage */
    for (int s = 0; s < nsp; s++) { /* a segment that would overflow: re-lay first */
        int *count = tab + 2 * s * nc, *cap = count + nc, grow = 0;
        const int *ad = add + s * (ncy + 1);
        for (int cy = 0; cy < ncy && n[s]; cy++)
            grow |= count[cx + cy * cl->ncx] + ad[cy] > cap[cx + cy * cl->ncx];
        if (grow) {
            for (int c = 0; c < nc; c++)
                count[c] += c % cl->ncx == cx ? ad[c / cl->ncx] : 0;
            gpu_relayout(g, st, s, count, count, NULL);
        }
    }
    free(tab);
}

/* The columns of every species (n[s] particles, total bytes staged) packed into the pinned
 * staging buffer (grown when too small) and uploaded in one copy on up_stream, once k_inject
 * has read the last one: it travels while the main stream's sort passes run. */
static void stage_upload(gpu_state *g, const species *col, const long long *n, const int *add,
                         int ncy, size_t total)
{
    if (total > g->stage_n) {
        if (g->stage) {
            GPU_CK(cudaStreamSynchronize(g->stream)); /* k_inject has read it */
            GPU_CK(cudaFree(g->stage));
            GPU_CK(cudaFreeHost(g->h_stage));
            g->bytes -= g->stage_n;
        }
        g->stage_n = 2 * total;
        g->stage = gpu_malloc(g, g->stage_n, "injected particles");
        GPU_CK(cudaMallocHost(&g->h_stage, g->stage_n));
    }
    size_t at = 0;
    for (int s = 0; s < g->nsp; s++) { /* pack: arrays, codes, row offsets */
        if (!n[s])
            continue;
        char *h = (char *)g->h_stage + at;
        const size_t n4 = (size_t)n[s] * 4;
        const stage_layout L = stage_of(n[s], ncy, col[s].id != NULL);
        const void *src[7] = {col[s].cell, col[s].x, col[s].y, col[s].ux,
                              col[s].uy,   col[s].uz, col[s].w};
        if (col[s].id)
            memcpy(h, col[s].id, (size_t)n[s] * 8);
        for (int v = 0; v < 7; v++)
            memcpy(h + L.arrays + v * n4, src[v], n4);
        memcpy(h + L.code, col[s].code, (size_t)n[s]);
        int *from = (int *)(h + L.from), run = 0;
        for (int cy = 0; cy <= ncy; cy++) {
            from[cy] = run;
            run += cy < ncy ? add[s * (ncy + 1) + cy] : 0;
        }
        at += L.bytes;
    }
    if (total) {
        GPU_CK(cudaStreamWaitEvent(g->up_stream, g->stage_read, 0));
        GPU_CK(cudaMemcpyAsync(g->stage, g->h_stage, total, cudaMemcpyHostToDevice,
                               g->up_stream));
        GPU_CK(cudaEventRecord(g->stage_done, g->up_stream));
    }
}

/* k_inject over the staged columns: each species' particles appended to cluster column cx. */
static void stage_append(gpu_state *g, const species *col, const long long *n, int ncy, int cx,
                         int ncx)
{
    size_t at = 0;
    kinject_all all;
    unsigned ninj = 0;
    for (int s = 0; s < g->nsp; s++) {
        if (n[s]) {
            gpu_species *d = &g->sp[s];
            char *base = (char *)g->stage + at, *b = base;
            const size_t n4 = (size_t)n[s] * 4;
            const stage_layout L = stage_of(n[s], ncy, col[s].id != NULL);
            b += L.arrays;
            kstage a = {col[s].id ? (const unsigned long long *)base : NULL,
                        (const uint32_t *)b,         (const float *)(b + n4),
                        (const float *)(b + 2 * n4), (const float *)(b + 3 * n4),
                        (const float *)(b + 4 * n4), (const float *)(b + 5 * n4),
                        (const float *)(b + 6 * n4), (const uint8_t *)(base + L.code),
                        (const int *)(base + L.from)};
            all.s[ninj++] = kinject{a, gpu_parts_of(d), d->start, d->count,
                                    (unsigned)col[s].z0};
            at += L.bytes;
        }
    }
    if (ninj) {
        GPU_CK(cudaStreamWaitEvent(g->stream, g->stage_done, 0));
        k_inject<<<dim3((unsigned)ncy, ninj), GPU_THREADS, 0, g->stream>>>(all, cx, ncx);
        GPU_LAUNCHED(g, "k_inject");
        GPU_CK(cudaEventRecord(g->stage_read, g->stream));
    }
}

/* Host time (the capacity check, the upload) counted as sort time. All species' columns go
 * up in one copy from a pinned buffer. */
void gpu_inject(void *ctx, pic_state *st, species *col, const int *add)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_trace_host(g, "inject-column"); /* the sort's end, the column made and its energy */
    double t0 = host_seconds();
    const double w0 = gpu_trace_now(g);
    const clusters *cl = st->cl;
    const int i = st->f->nx - 1, cx = cl->cx_of[i], ncy = cl->ncy, nsp = g->nsp;
    long long n[DECK_MAX_SPECIES];
    size_t total = 0;
    /* the room the last sort left in this column takes the column: no read-back, no wait */
    int sure = g->room_valid;
    for (int s = 0; s < nsp; s++) {
        n[s] = col[s].np;
        total += n[s] ? stage_of(n[s], ncy, col[s].id != NULL).bytes : 0;
        for (int cy = 0; cy < ncy && n[s] && sure; cy++)
            sure = add[s * (ncy + 1) + cy] <= g->h_room[s * ncy + cy];
    }
    g->room_valid = 0;
    if (!total) { /* nothing to inject (ranks without the front column, a vacuum front):
                     no wait on the last upload, no read-back of the room */
        st->phase_s[PH_SORT] += host_seconds() - t0;
        return;
    }
    if (sure)
        GPU_CK(cudaEventSynchronize(g->stage_done)); /* the last upload has left h_stage */
    else
        make_room(g, st, n, add, cx);
    stage_upload(g, col, n, add, ncy, total);
    gpu_trace_wait(g, "inject-stage", w0);
    stage_append(g, col, n, ncy, cx, cl->ncx);
    st->phase_s[PH_SORT] += host_seconds() - t0;
}

void gpu_window_free(gpu_state *g)
{
    if (g->stage)
        cudaFree(g->stage);
    if (g->h_stage)
        cudaFreeHost(g->h_stage);
}
