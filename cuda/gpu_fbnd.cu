/* gpu_fbnd.cu - the field boundaries on the device (the twin of src/cpu/cpu_fbnd.c): CPML
 * layers, Mur edges and laser sources around the Yee phases (include/pml.h's and
 * include/laser.h's cell rules and line geometry). The layers' and the lasers' terms of a
 * phase are one launch over those blocks of the cells it updated that hold such cells: over
 * the guards too for B's half steps over several ranks. Mur's edges are small kernels around
 * the E step. Nothing here runs for a periodic deck. */
#include "gpu_internal.h"
#include "ebal.h"
#include "laser.h"
#include "pml.h"
#include "yee.h"

#include <string.h>

/* ---- setup ---- */

/* The layers' coefficients and memories and the Mur edges' old values onto the device. */
void gpu_fbnd_setup(gpu_state *g, const pic_state *st)
{
    const emf *f = st->f;
    const fbnd *b = f->fb;
    /* the energy balance's sums (flow and lost, host-owned gain apart) */
    g->bal_n = (size_t)st->nterm * st->nslot + (size_t)st->nsp * st->cl->n;
    g->bal = (double *)gpu_malloc(g, g->bal_n * sizeof(double), "energy balance");
    g->lost = g->bal + (size_t)st->nterm * st->nslot;
    GPU_CK(cudaMemcpy(g->bal, st->flow, g->bal_n * sizeof(double), cudaMemcpyHostToDevice));
    g->fbnd = b != NULL;
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
                D->psi[m] = D->psi_mem[m] = (float *)gpu_malloc(
                    g, n + GPU_SLIDE * sizeof(float), "PML layer");
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
}

void gpu_fbnd_free(gpu_state *g)
{
    if (g->bal)
        cudaFree(g->bal);
    for (int l = 0; l < g->nlayers; l++) {
        cudaFree(g->layer[l].coef);
        for (int m = 0; m < 4; m++)
            cudaFree(g->layer[l].psi_mem[m]);
    }
    for (int k = 0; k < 4; k++)
        if (g->mur_old[k])
            cudaFree(g->mur_old[k]);
    for (int e = 0; e < GPU_BOUND_SLOTS; e++)
        if (g->bound[e].dev)
            cudaFree(g->bound[e].dev);
}

/* The layer and edge memories and the boundary clocks into the host fbnd (checkpoints). */
void gpu_fbnd_fetch(gpu_state *g, pic_state *st)
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

/* ---- CPML layers and lasers: their terms cell by cell ---- */

static int4 cells_of(const gpu_state *g) { return make_int4(g->i0, g->i1, g->j0, g->j1); }

/* A Yee phase's field boundaries: after the cells' own update, the CPML layers' psi terms in
 * the layers' order, then the lasers' source lines, as the CPU's boundary phases add them
 * (each term of a cell reads the other field and writes this cell's: per cell the order is
 * theirs). A guard cell across a periodic side stands for the cell it images: its terms are
 * that cell's. */
typedef struct {
    int nlayers, nlines;
    pml_strip st[4];
    const float *coef[4];         /* the phase's b, c (E: eb, ec; B: bb, bc) */
    float *p0[4], *p1[4];         /* the phase's two psi arrays of each layer */
    laser_beam beam[DECK_MAX_LASERS];
    laser_line ln[DECK_MAX_LASERS];
    int axis[DECK_MAX_LASERS];
    int4 quiet;                   /* the cells no layer holds: columns [x, y), rows [z, w) */
    int nx, ny;
    float idx, idy;
} kbound;

/* The terms of phase e (0: B's half step, 1: E's step); none (nlayers = nlines = 0) without
 * field boundaries. */
static kbound bound_of(const gpu_state *g, const pic_state *st, int e)
{
    const emf *f = st->f;
    const fbnd *b = f->fb;
    kbound a;
    memset(&a, 0, sizeof a);
    if (!b)
        return a;
    a.nx = g->nx;
    a.ny = g->ny;
    a.idx = (float)(1.0 / f->dx);
    a.idy = (float)(1.0 / f->dy);
    a.nlayers = g->nlayers;
    a.quiet = make_int4(0, g->nx, 0, g->ny);
    for (int l = 0; l < g->nlayers; l++) {
        const gpu_layer *L = &g->layer[l];
        int *lo = L->axis ? &a.quiet.z : &a.quiet.x, *hi = L->axis ? &a.quiet.w : &a.quiet.y;
        if (L->first == 0)
            *lo = L->n > *lo ? L->n : *lo;
        else
            *hi = L->first < *hi ? L->first : *hi;
        a.st[l] = pml_strip{L->axis, L->first, L->n, L->len};
        a.coef[l] = L->coef + (e ? 0 : 2 * L->n);
        a.p0[l] = L->psi[e ? 0 : 2];
        a.p1[l] = L->psi[e ? 1 : 3];
    }
    for (int l = 0; l < b->nlasers; l++) {
        const laser_src *L = &b->lasers[l];
        const laser_line ln = laser_line_of(L, e, f->step, f->dt, f->dx, f->dy, g->shift);
        if (!ln.on)
            continue;
        a.beam[a.nlines] = L->beam;
        a.axis[a.nlines] = L->axis;
        a.ln[a.nlines++] = ln;
    }
    return a;
}

/* Component d (0..5: Ex..Bz), picked without an indexed array (which would live in local
 * memory). */
__device__ __forceinline__ float *pick(int d, float *ex, float *ey, float *ez, float *bx,
                                       float *by, float *bz)
{
    return d < 3 ? (d == 0 ? ex : d == 1 ? ey : ez) : (d == 3 ? bx : d == 4 ? by : bz);
}

/* Whether a block's cells (global columns [x, y), rows [z, w)) may have terms: not all
 * inside the quiet cells with no laser line across. */
static bool bound_near(const kbound &a, int4 r)
{
    if (r.x < a.quiet.x || r.y > a.quiet.y || r.z < a.quiet.z || r.w > a.quiet.w)
        return true;
    for (int l = 0; l < a.nlines; l++) {
        const int at = a.ln[l].at;
        if (a.axis[l] ? at >= r.z && at < r.w : at >= r.x && at < r.y)
            return true;
    }
    return false;
}

/* The terms of phase e of global cell (i, j) (guards included) of a mesh whose cell (0, 0)
 * is at off, row stride s: into B when e = 0 (half step h, psi updated when upd), into E
 * when e = 1 (step h). */
__device__ __forceinline__ void bound_cell(const kbound &a, int e, int i, int j, int off, int s,
                                           float *ex, float *ey, float *ez, float *bx,
                                           float *by, float *bz, float h, int upd)
{
    const int wi = wrap_index(i, a.nx), wj = wrap_index(j, a.ny);
    const int o = off + (i - wi) + (j - wj) * s; /* an image's terms written on the guard */
    for (int l = 0; l < a.nlayers; l++) {
        const pml_strip &L = a.st[l];
        const int t = pml_strip_index(&L, wi, wj);
        if (t < 0)
            continue;
        const float id = L.axis ? a.idy : a.idx, *b = a.coef[l], *c = a.coef[l] + L.n;
        if (e)
            pml_e_cell(&L, o, s, t, ex, ey, ez, bx, by, bz, a.p0[l], a.p1[l], b, c, id, h);
        else
            pml_b_cell(&L, o, s, t, bx, by, bz, ex, ey, ez, a.p0[l], a.p1[l], b, c, id, h, upd);
    }
    for (int l = 0; l < a.nlines; l++) {
        const laser_line &ln = a.ln[l];
        if ((a.axis[l] ? wj : wi) == ln.at) {
            const int k = off + i + j * s;
            laser_line_add(&a.beam[l], &ln, a.axis[l] ? wi : wj,
                           &pick(ln.d1, ex, ey, ez, bx, by, bz)[k],
                           &pick(ln.d2, ex, ey, ez, bx, by, bz)[k]);
        }
    }
}

#define BX 32
#define BY 8

/* The cell (i, j) of thread (x, y) of the block listed at blockIdx.x (bound_blocks), and
 * whether it lies in box. */
__device__ __forceinline__ bool bound_thread(const int2 *blocks, int4 box, int &i, int &j)
{
    const int2 b = blocks[blockIdx.x];
    i = box.x + b.x * BX + (int)threadIdx.x;
    j = box.z + b.y * BY + (int)threadIdx.y;
    return i < box.y && j < box.w;
}

/* The blocks of BX x BY cells over box that may have terms (bound_near), listed again only
 * when the box, the layers or the laser lines change, onto the device in the stream: a
 * phase's launch runs them alone (a whole box's launch was mostly blocks with nothing to
 * do, 10-20 us of a step's critical path). Returns how many. */
static int bound_blocks(gpu_state *g, gpu_bound_blocks *L, const kbound &a, int4 box)
{
    gpu_bound_key k;
    memset(&k, 0, sizeof k);
    k.box = box;
    k.quiet = a.quiet;
    k.nlines = a.nlines;
    for (int l = 0; l < a.nlines; l++)
        k.at[l] = a.ln[l].at, k.axis[l] = a.axis[l];
    if (L->dev && !memcmp(&k, &L->key, sizeof k))
        return L->n;
    const int nbx = (box.y - box.x + BX - 1) / BX, nby = (box.w - box.z + BY - 1) / BY;
    int2 *list = (int2 *)empic_alloc((size_t)nbx * nby * sizeof(int2), "boundary blocks");
    int n = 0;
    for (int by = 0; by < nby; by++)
        for (int bx = 0; bx < nbx; bx++) {
            const int i0 = box.x + bx * BX, j0 = box.z + by * BY;
            const int i1 = i0 + BX < box.y ? i0 + BX : box.y;
            const int j1 = j0 + BY < box.w ? j0 + BY : box.w;
            if (bound_near(a, make_int4(i0, i1, j0, j1)))
                list[n++] = make_int2(bx, by);
        }
    if (n > L->cap) {
        if (L->dev)
            GPU_CK(cudaFree(L->dev));
        L->dev = (int2 *)gpu_malloc(g, (size_t)n * sizeof(int2), "boundary blocks");
        L->cap = n;
    }
    if (n) /* pageable: copied out before the call returns, written in stream order */
        GPU_CK(cudaMemcpyAsync(L->dev, list, (size_t)n * sizeof(int2), cudaMemcpyHostToDevice,
                               g->stream));
    free(list);
    L->key = k;
    L->n = n;
    return n;
}

/* After B's half steps (gpu_fbnd_b): the terms of B(n), B(n+1/2) made again from it, and
 * the terms of B(n+1/2). */
__global__ void k_fbnd_b(const int2 *blocks, int4 box, int off, int s, float *bx, float *by,
                         float *bz, float *nbx, float *nby, float *nbz, float *ex, float *ey,
                         float *ez, float hx, float hy, float h, int upd,
                         const __grid_constant__ kbound a)
{
    int i, j;
    if (!bound_thread(blocks, box, i, j))
        return;
    bound_cell(a, 0, i, j, off, s, ex, ey, ez, bx, by, bz, h, upd);
    const int k = off + i + j * s;
    float x, y, z;
    yee_b_new(bx, by, bz, ex, ey, ez, k, s, hx, hy, &x, &y, &z);
    nbx[k] = x;
    nby[k] = y;
    nbz[k] = z;
    bound_cell(a, 0, i, j, off, s, ex, ey, ez, nbx, nby, nbz, h, 0);
}

/* After E's step over this rank's cells: their terms. */
__global__ void k_fbnd_e(const int2 *blocks, int4 box, int off, int s, float *ex, float *ey,
                         float *ez, float *bx, float *by, float *bz, float dt,
                         const __grid_constant__ kbound a)
{
    int i, j;
    if (bound_thread(blocks, box, i, j))
        bound_cell(a, 1, i, j, off, s, ex, ey, ez, bx, by, bz, dt, 0);
}

void gpu_fbnd_b(gpu_state *g, const pic_state *st, int4 box, int slot, int upd, float hx,
                float hy)
{
    const kbound a = bound_of(g, st, 0);
    if (!a.nlayers && !a.nlines)
        return;
    gpu_bound_blocks *L = &g->bound[slot];
    const int n = bound_blocks(g, L, a, box);
    if (!n)
        return;
    k_fbnd_b<<<n, dim3(BX, BY), 0, g->stream>>>(
        L->dev, box, g->off, g->stride, g->b[0], g->b[1], g->b[2], g->bn[0], g->bn[1],
        g->bn[2], g->e[0], g->e[1], g->e[2], hx, hy, (float)(0.5 * st->f->dt), upd, a);
    GPU_LAUNCHED(g, "k_fbnd_b");
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

void gpu_fbnd_e_save(gpu_state *g, const pic_state *st) { mur_sides(g, st, 1); }

void gpu_fbnd_e(gpu_state *g, const pic_state *st)
{
    const kbound a = bound_of(g, st, 1);
    const int4 box = cells_of(g);
    const int n = a.nlayers || a.nlines ? bound_blocks(g, &g->bound[BOUND_E], a, box) : 0;
    if (n) {
        k_fbnd_e<<<n, dim3(BX, BY), 0, g->stream>>>(g->bound[BOUND_E].dev, box, g->off,
                                                    g->stride, g->e[0], g->e[1], g->e[2],
                                                    g->b[0], g->b[1], g->b[2],
                                                    (float)st->f->dt, a);
        GPU_LAUNCHED(g, "k_fbnd_e");
    }
    mur_sides(g, st, 0);
}

/* ---- the energy balance (ebal.h; the CPU's fbnd_flows) ---- */

/* Whether this rank holds cluster c (columns [own.x, own.y), rows [own.z, own.w)). */
__device__ __forceinline__ bool owns_cluster(int4 own, int c, int ncx)
{
    return in_box(own, c % ncx, c / ncx);
}

/* One sum of k_flows: side k's flow through its edge node line `at` (laser < 0), or the
 * flow of laser `laser`'s line `line` (laser.h: 0 its E plane after the E step, 1 its B column
 * before it, with line 2 too: the column's dB(n) and dB(n + 1)); its slots (t0, nsl: the
 * clusters along the line) and their sums (out, times h). */
typedef struct {
    int laser, line, k, at, nsl;
    const int *t0;
    double h, *out;
} kflow;

/* The sums of one call of gpu_fbnd_flows, a launch: the fields, the lasers and their lines. */
typedef struct {
    ebal_region r;
    const int *cx_of, *cy_of;
    int ncx, off, stride;
    int4 own;
    const float *f[6]; /* Ex, Ey, Ez, Bx, By, Bz */
    laser_beam beam[DECK_MAX_LASERS];
    int axis[DECK_MAX_LASERS];
    laser_line ln[DECK_MAX_LASERS][3];
    kflow job[EBAL_SIDES + 2 * DECK_MAX_LASERS];
} kflows;

/* One block per slot (blockIdx.x) of sum blockIdx.y: the slot's entries over the 32 threads,
 * then gpu_block_sum's fixed tree (the same sum on any rank split). */
__global__ void k_flows(const __grid_constant__ kflows a)
{
    __shared__ double sh[32];
    const kflow &q = a.job[blockIdx.y];
    const int sl = blockIdx.x;
    if (sl >= q.nsl)
        return;
    const int axis = q.laser < 0 ? q.k / 2 : a.axis[q.laser];
    if (!owns_cluster(a.own, ebal_cluster(axis, q.at, sl, a.cx_of, a.cy_of, a.ncx), a.ncx))
        return;
    double v = 0.0;
    for (int t = q.t0[sl] + threadIdx.x; t < q.t0[sl + 1]; t += blockDim.x) {
        if (q.laser < 0) {
            v += ebal_side(&a.r, q.k, t, a.f[0], a.f[1], a.f[2], a.f[3], a.f[4], a.f[5], a.off,
                           a.stride);
            continue;
        }
        const laser_beam *beam = &a.beam[q.laser];
        const laser_line *ln = &a.ln[q.laser][q.line];
        const int k = axis ? a.off + t + ln->at * a.stride : a.off + ln->at + t * a.stride;
        double w = ebal_laser(&a.r, beam, ln, axis, t, a.f[ln->d1], a.f[ln->d2], k);
        if (q.line) {
            const laser_line *l2 = &a.ln[q.laser][2];
            const int k2 = axis ? a.off + t + l2->at * a.stride : a.off + l2->at + t * a.stride;
            w += ebal_laser(&a.r, beam, l2, axis, t, a.f[ln->d1], a.f[ln->d2], k2);
        }
        v += w;
    }
    v = gpu_block_sum(v, sh);
    if (threadIdx.x == 0)
        q.out[sl] += q.h * v;
}

void gpu_fbnd_flows(gpu_state *g, const pic_state *st, int after, float *const bh[3])
{
    const emf *f = st->f;
    const fbnd *b = f->fb;
    if (!b)
        return;
    kflows a;
    memset(&a, 0, sizeof a);
    a.r = st->reg;
    a.cx_of = g->cx_of;
    a.cy_of = g->cy_of;
    a.ncx = g->ncx;
    a.off = g->off;
    a.stride = g->stride;
    a.own = g->own;
    for (int c = 0; c < 3; c++) {
        a.f[c] = g->e[c];
        a.f[3 + c] = bh[c];
    }
    const int ns = st->nslot;
    int n = 0, most = 0;
    for (int k = 0; k < EBAL_SIDES; k++) {
        if (b->bnd[k] == FBND_PERIODIC)
            continue;
        const int axis = k / 2;
        a.job[n++] = kflow{-1, 0, k, k & 1 ? a.r.hi[axis] : a.r.lo[axis],
                           axis ? g->ncx : g->ncy, axis ? g->x0 : g->y0,
                           0.5 * f->dt * (axis ? f->dx : f->dy), g->bal + (size_t)k * ns};
    }
    const double dxdy = f->dx * f->dy;
    for (int l = 0; l < b->nlasers; l++) {
        const laser_src *L = &b->lasers[l];
        double *fe = g->bal + (size_t)(EBAL_SIDES + 2 * l) * ns, *fb = fe + ns;
        const int nsl = L->axis ? g->ncx : g->ncy;
        const int *t0 = L->axis ? g->x0 : g->y0;
        a.beam[l] = L->beam;
        a.axis[l] = L->axis;
        a.ln[l][0] = laser_line_of(L, 1, f->step, f->dt, f->dx, f->dy, g->shift);
        a.ln[l][1] = laser_line_of(L, 0, f->step, f->dt, f->dx, f->dy, g->shift);
        a.ln[l][2] = laser_line_of(L, 0, f->step + 1, f->dt, f->dx, f->dy, g->shift);
        if (a.ln[l][0].on)
            a.job[n++] = kflow{l, 0, 0, a.ln[l][0].at, nsl, t0, 0.5 * dxdy, fe};
        if (!after && a.ln[l][1].on)
            a.job[n++] = kflow{l, 1, 0, a.ln[l][1].at, nsl, t0, dxdy, fb};
    }
    for (int k = 0; k < n; k++)
        most = a.job[k].nsl > most ? a.job[k].nsl : most;
    if (n == 0)
        return;
    k_flows<<<dim3((unsigned)most, (unsigned)n), 32, 0, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_flows");
}
