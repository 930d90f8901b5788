/* gpu_bnd.cu - non-periodic boundaries on the device: CPML layers, Mur edges and laser
 * sources around the Yee phases (include/pml.h's and include/laser.h's cell rules and line
 * geometry), and the particle walls (include/pbnd.h): the wall fix-up of the particles of
 * edge clusters that crossed a wall, the fold of their tile current beyond the wall before
 * the colour write-back, and the removal of dropped particles before the sort. The layers
 * and edges are thin strips: small kernels over their cells, launched in the CPU's order (the
 * two layers of one axis, whose cells are apart, in one launch). Nothing here runs for a
 * periodic deck. */
#include "gpu_internal.h"
#include "laser.h"
#include "pbnd.h"
#include "pml.h"

#include <stdlib.h>
#include <string.h>

/* ---- setup ---- */

void gpu_bnd_setup(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    const clusters *cl = st->cl;
    g->px = f->bnd[SIDE_XMIN] == FBND_PERIODIC;
    g->py = f->bnd[SIDE_YMIN] == FBND_PERIODIC;
    g->cx_of = (int *)gpu_malloc(g, (size_t)f->nx * sizeof(int), "cluster table");
    g->cy_of = (int *)gpu_malloc(g, (size_t)f->ny * sizeof(int), "cluster table");
    GPU_CK(cudaMemcpy(g->cx_of, cl->cx_of, (size_t)f->nx * sizeof(int), cudaMemcpyHostToDevice));
    GPU_CK(cudaMemcpy(g->cy_of, cl->cy_of, (size_t)f->ny * sizeof(int), cudaMemcpyHostToDevice));
    const fbnd *b = f->fb;
    if (b) {
        g->nlayers = b->nlayers;
        for (int l = 0; l < b->nlayers; l++) {
            const pml_layer *L = &b->layer[l];
            gpu_layer *D = &g->layer[l];
            D->axis = L->axis;
            D->n = L->n;
            D->first = L->first;
            D->len = L->len;
            D->coef = (float *)gpu_malloc(g, 4 * (size_t)L->n * sizeof(float), "PML layer");
            GPU_CK(cudaMemcpy(D->coef, L->eb, 4 * (size_t)L->n * sizeof(float),
                              cudaMemcpyHostToDevice));
            for (int m = 0; m < 4; m++) {
                size_t n = (size_t)L->n * L->len * sizeof(float);
                D->psi[m] = (float *)gpu_malloc(g, n, "PML layer");
                GPU_CK(cudaMemcpy(D->psi[m], L->psi[m], n, cudaMemcpyHostToDevice));
            }
        }
        for (int k = 0; k < 4; k++) {
            if (!b->mur_old[k])
                continue;
            size_t n = 4 * (size_t)(k / 2 ? f->nx : f->ny) * sizeof(float);
            g->mur_old[k] = (float *)gpu_malloc(g, n, "Mur edge");
            GPU_CK(cudaMemcpy(g->mur_old[k], b->mur_old[k], n, cudaMemcpyHostToDevice));
        }
    }
    for (int s = 0; s < st->nsp; s++) {
        const species *h = &st->sp[s];
        gpu_species *d = &g->sp[s];
        species_walls(h, cl, f->nx, f->ny, &d->walls);
        int *list = (int *)empic_alloc((size_t)cl->n * sizeof(int), "wall clusters"), n = 0;
        for (int c = 0; c < cl->n; c++)
            if (species_on_wall(h, cl, c))
                list[n++] = c;
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
}

void gpu_bnd_free(gpu_state *g)
{
    for (int l = 0; l < g->nlayers; l++) {
        cudaFree(g->layer[l].coef);
        for (int m = 0; m < 4; m++)
            cudaFree(g->layer[l].psi[m]);
    }
    for (int k = 0; k < 4; k++)
        if (g->mur_old[k])
            cudaFree(g->mur_old[k]);
    for (int s = 0; s < g->nsp; s++)
        if (g->sp[s].edge)
            cudaFree(g->sp[s].edge);
    void *p[] = {g->cx_of, g->cy_of, g->scratch, g->stage};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    if (g->h_stage)
        cudaFreeHost(g->h_stage);
}

/* The layer and edge memories and the boundary clocks into the host fbnd (checkpoints). */
void gpu_bnd_fetch(gpu_state *g, pic_state *st)
{
    fbnd *b = st->f->fb;
    if (!b)
        return;
    b->shift = g->shift;
    b->psi_step = g->psi_step;
    for (int l = 0; l < g->nlayers; l++)
        for (int m = 0; m < 4; m++)
            GPU_CK(cudaMemcpy(b->layer[l].psi[m], g->layer[l].psi[m],
                              (size_t)g->layer[l].n * g->layer[l].len * sizeof(float),
                              cudaMemcpyDeviceToHost));
    for (int k = 0; k < 4; k++)
        if (g->mur_old[k])
            GPU_CK(cudaMemcpy(b->mur_old[k], g->mur_old[k],
                              4 * (size_t)(k / 2 ? g->nx : g->ny) * sizeof(float),
                              cudaMemcpyDeviceToHost));
}

/* ---- CPML layers ---- */

typedef struct {
    pml_strip st;
    int off, stride;
    const float *coef;
    float *psi0, *psi1;
    int4 cells;         /* this rank's cells: columns [x, y), rows [z, w) */
} klayer;

static int4 cells_of(const gpu_state *g) { return make_int4(g->i0, g->i1, g->j0, g->j1); }

static klayer layer_args(const gpu_state *g, const gpu_layer *L, int m0)
{
    klayer a = {{L->axis, L->first, L->n, L->len}, g->off, g->stride, L->coef, L->psi[m0],
                L->psi[m0 + 1], cells_of(g)};
    return a;
}

/* Up to two layers of one axis in one launch: layer blockIdx.y of the group. */
typedef struct {
    klayer l[2];
} klayers;

/* How many layers from l0 on one launch takes: two consecutive ones of the same axis, whose
 * cells are apart (an x and a y layer share the corners, which take both updates in the
 * order of the layers, so they stay in launches of their own). */
static int layer_group(const gpu_state *g, int l0)
{
    const gpu_layer *A = &g->layer[l0], *B = &g->layer[l0 + 1];
    if (l0 + 1 < g->nlayers && B->axis == A->axis &&
        (A->first + A->n <= B->first || B->first + B->n <= A->first))
        return 2;
    return 1;
}

/* The group of layers from l0 (layer_group's count into *n), its arguments and its grid. */
static klayers group_args(const gpu_state *g, int l0, int m0, int *n, dim3 *grid)
{
    klayers a;
    memset(&a, 0, sizeof a);
    *n = layer_group(g, l0);
    size_t most = 0;
    for (int k = 0; k < *n; k++) {
        const gpu_layer *L = &g->layer[l0 + k];
        a.l[k] = layer_args(g, L, m0);
        most = (size_t)L->n * L->len > most ? (size_t)L->n * L->len : most;
    }
    *grid = dim3(gpu_blocks(most, 128), (unsigned)*n);
    return a;
}

/* B psi terms: thread t = cell t of the layer. */
__global__ void k_pml_b(klayers g, float *b0, float *b1, float *b2, const float *e0,
                        const float *e1, const float *e2, float idx, float idy, float h,
                        int upd)
{
    const klayer &a = g.l[blockIdx.y];
    int t = blockIdx.x * blockDim.x + threadIdx.x, i, j;
    if (t >= a.st.n * a.st.len)
        return;
    pml_strip_cell(&a.st, t, &i, &j);
    if (!in_box(a.cells, i, j))
        return;
    pml_b_cell(&a.st, a.off, a.stride, t, b0, b1, b2, e0, e1, e2, a.psi0, a.psi1,
               a.coef + 2 * a.st.n, a.coef + 3 * a.st.n, a.st.axis ? idy : idx, h, upd);
}

__global__ void k_pml_e(klayers g, float *e0, float *e1, float *e2, const float *b0,
                        const float *b1, const float *b2, float idx, float idy, float dt)
{
    const klayer &a = g.l[blockIdx.y];
    int t = blockIdx.x * blockDim.x + threadIdx.x, i, j;
    if (t >= a.st.n * a.st.len)
        return;
    pml_strip_cell(&a.st, t, &i, &j);
    if (!in_box(a.cells, i, j))
        return;
    pml_e_cell(&a.st, a.off, a.stride, t, e0, e1, e2, b0, b1, b2, a.psi0, a.psi1, a.coef,
               a.coef + a.st.n, a.st.axis ? idy : idx, dt);
}

/* ---- lasers ---- */

/* One source line of a laser (laser_line_of): entry t (0..n-1) at k0 + t kstep, cell
 * (at, t) of an x plane, (t, at) of a y plane, where this rank holds it. */
__global__ void k_laser(laser_beam beam, laser_line ln, int n, int k0, int kstep, float *d1,
                        float *d2, int axis, int4 cells)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n || !(axis ? in_box(cells, t, ln.at) : in_box(cells, ln.at, t)))
        return;
    int k = k0 + t * kstep;
    laser_line_add(&beam, &ln, t, &d1[k], &d2[k]);
}

/* The source lines of the lasers after a half B step (e = 0) or the E step (e = 1). */
static void laser_lines(gpu_state *g, const emf *f, int e)
{
    const fbnd *b = f->fb;
    float *const a[6] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2]};
    for (int l = 0; l < b->nlasers; l++) {
        const laser_src *L = &b->lasers[l];
        const laser_line ln = laser_line_of(L, e, f->step, f->dt, f->dx, f->dy, g->shift);
        if (!ln.on)
            continue;
        const int n = L->axis ? g->nx : g->ny;
        const int k0 = L->axis ? g->off + ln.at * g->stride : g->off + ln.at;
        const int kstep = L->axis ? 1 : g->stride;
        k_laser<<<gpu_blocks((size_t)n, 128), 128, 0, g->stream>>>(
            L->beam, ln, n, k0, kstep, a[ln.d1], a[ln.d2], L->axis, cells_of(g));
        GPU_LAUNCHED(g, "k_laser");
    }
}

/* ---- the hooks of the Yee phases ---- */

void gpu_bnd_b(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    const int upd = pml_psi_due(&g->psi_step, f->step); /* the device's own psi clock */
    const float h = (float)(0.5 * f->dt), idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int l = 0, n = 1; l < g->nlayers; l += n) {
        dim3 grid;
        const klayers a = group_args(g, l, 2, &n, &grid);
        k_pml_b<<<grid, 128, 0, g->stream>>>(a, g->b[0], g->b[1], g->b[2], g->e[0], g->e[1],
                                              g->e[2], idx, idy, h, upd);
        GPU_LAUNCHED(g, "k_pml_b");
    }
    laser_lines(g, f, 0);
}

/* Mur side m (mur_line_of): save entry t's old values (before the E step) or apply the
 * edge rule (after it), where this rank holds the node inside the edge, `in` across it. */
__global__ void k_mur(int save, mur_line m, float *c1, float *c2, float *o, float mr, int in,
                      int4 cells)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m.len || !(m.axis ? in_box(cells, t, in) : in_box(cells, in, t)))
        return;
    if (save)
        mur_save(&m, t, c1, c2, o);
    else
        mur_apply(&m, t, c1, c2, o, mr);
}

static void mur_sides(gpu_state *g, const pic_state *st, int save)
{
    const fbnd *b = st->f->fb;
    for (int k = 0; k < 4; k++) {
        if (!g->mur_old[k])
            continue;
        const mur_line m = mur_line_of(k, g->nx, g->ny, g->off, g->stride);
        const int in = k & 1 ? (k / 2 ? g->ny : g->nx) - 1 : 1; /* the node inside the edge */
        k_mur<<<gpu_blocks((size_t)m.len, 128), 128, 0, g->stream>>>(
            save, m, m.axis ? g->e[0] : g->e[1], g->e[2], g->mur_old[k], b->mur_m[m.axis], in,
            cells_of(g));
        GPU_LAUNCHED(g, "k_mur");
    }
}

void gpu_bnd_e_save(gpu_state *g, const pic_state *st) { mur_sides(g, st, 1); }

void gpu_bnd_e(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    const float dt = (float)f->dt, idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int l = 0, n = 1; l < g->nlayers; l += n) {
        dim3 grid;
        const klayers a = group_args(g, l, 0, &n, &grid);
        k_pml_e<<<grid, 128, 0, g->stream>>>(a, g->e[0], g->e[1], g->e[2], g->b[0], g->b[1],
                                              g->b[2], idx, idy, dt);
        GPU_LAUNCHED(g, "k_pml_e");
    }
    laser_lines(g, f, 1);
    mur_sides(g, st, 0);
}

/* ---- particle walls ---- */

/* One block per edge cluster of a species: its particles get the wall fix-up, its tile the
 * fold of the current beyond the wall. */
typedef struct {
    float2 *xy, *uxy, *uzw;
    uint32_t *cell;
    uint8_t *code;
    const int *start, *count, *edge, *x0, *y0, *cx_of, *cy_of;
    int *hist;
    long long *tiles;
    int tile_stride;
    long step;
    pbnd_walls w;
} kwalls;

/* The species with walls, in one launch (blockIdx.y: the species' entry). */
typedef struct {
    kwalls s[DECK_MAX_SPECIES];
    int nedge[DECK_MAX_SPECIES];
} kwalls_all;

__global__ void k_walls(const __grid_constant__ kwalls_all all)
{
    if ((int)blockIdx.x >= all.nedge[blockIdx.y])
        return;
    const kwalls &a = all.s[blockIdx.y];
    const int c = a.edge[blockIdx.x], cx = c % a.w.ncx, cy = c / a.w.ncx;
    const pbnd_edges e = pbnd_edges_of(&a.w, cx, cy);
    const int s0 = a.start[c], n = a.count[c];
    int *hist = a.hist + 9 * c;
    for (int p = s0 + threadIdx.x; p < s0 + n; p += blockDim.x)
        pbnd_fixup(&a.w, &e, cx, cy, a.cx_of, a.cy_of, a.step, &a.code[p], hist, &a.cell[p],
                   &a.xy[p].x, &a.xy[p].y, &a.uxy[p].x, &a.uxy[p].y, &a.uzw[p].x);
    if (threadIdx.x == 0) {
        const cluster_tile T = cluster_tile_of(a.x0, a.y0, a.w.ncx, c);
        const int tsz = T.w * T.h;
        long long *t = a.tiles + (size_t)c * a.tile_stride;
        pbnd_fold_tile_fixed(&a.w, cx, cy, &T, t, t + tsz, t + 2 * tsz);
    }
}

void gpu_walls(gpu_state *g, const pic_state *st, int n, const int *which)
{
    kwalls_all all;
    int m = 0, most = 0;
    for (int k = 0; k < n; k++) {
        const gpu_species *d = &g->sp[which[k]];
        if (!d->nedge)
            continue;
        long long *tiles = g->tiles + k * g->tile_set;
        all.s[m] = kwalls{d->xy,    d->uxy,   d->uzw,  d->cell, d->code, d->start, d->count,
                          d->edge,  g->x0,    g->y0,   g->cx_of, g->cy_of, d->hist, tiles,
                          3 * g->tsz_max, st->f->step, d->walls};
        all.nedge[m++] = d->nedge;
        most = d->nedge > most ? d->nedge : most;
    }
    if (!m)
        return;
    k_walls<<<dim3((unsigned)most, (unsigned)m), GPU_THREADS, 0, g->stream>>>(all);
    GPU_LAUNCHED(g, "k_walls");
}

/* ---- removal of dropped particles ---- */

/* Block-wide exclusive prefix sum of v and the block's total (every thread of the block
 * must call it). */
__device__ __forceinline__ int block_excl_sum(int v, int *warp_n, int *total)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o)
            inc += t;
    }
    if (lane == 31)
        warp_n[wid] = inc;
    __syncthreads();
    int before = 0, all = 0;
    for (int w = 0; w < nw; w++) {
        before += w < wid ? warp_n[w] : 0;
        all += warp_n[w];
    }
    __syncthreads();
    *total = all;
    return before + inc - v;
}

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
    int *count, *scratch, *dropped;
    int ncx, ncy;
    pbnd_drops sides;
} kdrop;

/* One block per cluster; those on a dropping side remove their PBND_DROP particles: n - nd
 * survive; the survivors behind the new end, listed in slot order, fill the holes in front
 * of it in slot order. Codes are read 16 at a time (per-thread bit masks, block prefix sums
 * of their counts: ordered, whatever the thread scheduling). */
__global__ void __launch_bounds__(GPU_THREADS) k_drop(kdrop a)
{
    __shared__ int warp_n[GPU_THREADS / 32];
    const int c = blockIdx.x, cx = c % a.ncx, cy = c / a.ncx, tid = threadIdx.x;
    if (!pbnd_drops_at(&a.sides, cx, cy, a.ncx, a.ncy))
        return;
    const int s0 = a.start[c], n = a.count[c];
    const uint8_t *code = a.p.code + s0;
    int nd = 0, tot;
    for (int i0 = 0; i0 < n; i0 += 16 * blockDim.x) {
        block_excl_sum(__popc(drop_mask(code, i0 + 16 * tid, 0, n)), warp_n, &tot);
        nd += tot;
    }
    if (nd == 0)
        return;
    const int keep = n - nd, from = keep / 16 * 16;
    int done = 0;
    for (int i0 = from; i0 < n; i0 += 16 * blockDim.x) { /* the fillers, in slot order */
        const int i = i0 + 16 * tid;
        unsigned f = 0;
        if (i < n) {
            const unsigned valid = n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u;
            const unsigned tail = keep <= i ? 0xffffu : 0xffffu & ~((1u << (keep - i)) - 1u);
            f = ~drop_mask(code, i, 0, n) & valid & tail;
        }
        int r = done + block_excl_sum(__popc(f), warp_n, &tot);
        for (; f; f &= f - 1u)
            a.scratch[s0 + r++] = i + __ffs(f) - 1;
        done += tot;
    }
    __syncthreads();
    done = 0;
    for (int i0 = 0; i0 < keep; i0 += 16 * blockDim.x) { /* the holes, in slot order */
        const int i = i0 + 16 * tid;
        unsigned h = drop_mask(code, i, 0, keep);
        int r = done + block_excl_sum(__popc(h), warp_n, &tot);
        for (; h; h &= h - 1u, r++)
            gpu_parts_copy(a.p, s0 + i + __ffs(h) - 1, s0 + a.scratch[s0 + r]);
        done += tot;
    }
    if (tid == 0) {
        a.count[c] = keep;
        atomicAdd(a.dropped, nd);
    }
}

void gpu_drop(gpu_state *g, int s, int window)
{
    gpu_species *d = &g->sp[s];
    kdrop a = {gpu_parts_of(d), d->start, d->count, NULL, g->flags + 4 * s + 3, g->ncx, g->ncy,
               pbnd_drops_of(d->walls.bnd, window)};
    if (!pbnd_drops_any(&a.sides))
        return;
    if (g->scratch_n < d->alloc) {
        if (g->scratch) {
            GPU_CK(cudaStreamSynchronize(g->stream));
            GPU_CK(cudaFree(g->scratch));
            g->bytes -= g->scratch_n * sizeof(int);
        }
        g->scratch = (int *)gpu_malloc(g, d->alloc * sizeof(int), "drop lists");
        g->scratch_n = d->alloc;
    }
    a.scratch = g->scratch;
    k_drop<<<(unsigned)g->ncl, GPU_THREADS, 0, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_drop");
}
