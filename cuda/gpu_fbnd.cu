/* gpu_fbnd.cu - the field boundaries on the device (the twin of src/cpu/cpu_fbnd.c): CPML
 * layers, Mur edges and laser sources around the Yee phases (include/pml.h's and
 * include/laser.h's cell rules and line geometry). The layers and edges are thin strips:
 * small kernels over their cells, launched in the CPU's order (the two layers of one axis,
 * whose cells are apart, in one launch). Nothing here runs for a periodic deck. */
#include "gpu_internal.h"
#include "ebal.h"
#include "laser.h"
#include "pml.h"

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
}

void gpu_fbnd_free(gpu_state *g)
{
    if (g->bal)
        cudaFree(g->bal);
    for (int l = 0; l < g->nlayers; l++) {
        cudaFree(g->layer[l].coef);
        for (int m = 0; m < 4; m++)
            cudaFree(g->layer[l].psi[m]);
    }
    for (int k = 0; k < 4; k++)
        if (g->mur_old[k])
            cudaFree(g->mur_old[k]);
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

/* The source lines of the lasers after a half B step into bo (e = 0) or the E step (e = 1). */
static void laser_lines(gpu_state *g, const emf *f, int e, float *const bo[3])
{
    const fbnd *b = f->fb;
    float *const a[6] = {g->e[0], g->e[1], g->e[2], bo[0], bo[1], bo[2]};
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

void gpu_fbnd_b(gpu_state *g, const pic_state *st, float *const bo[3])
{
    const emf *f = st->f;
    const int upd = pml_psi_due(&g->psi_step, f->step); /* the device's own psi clock */
    const float h = (float)(0.5 * f->dt), idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int l = 0, n = 1; l < g->nlayers; l += n) {
        dim3 grid;
        const klayers a = group_args(g, l, 2, &n, &grid);
        k_pml_b<<<grid, 128, 0, g->stream>>>(a, bo[0], bo[1], bo[2], g->e[0], g->e[1], g->e[2],
                                              idx, idy, h, upd);
        GPU_LAUNCHED(g, "k_pml_b");
    }
    laser_lines(g, f, 0, bo);
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
    const emf *f = st->f;
    const float dt = (float)f->dt, idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int l = 0, n = 1; l < g->nlayers; l += n) {
        dim3 grid;
        const klayers a = group_args(g, l, 0, &n, &grid);
        k_pml_e<<<grid, 128, 0, g->stream>>>(a, g->e[0], g->e[1], g->e[2], g->b[0], g->b[1],
                                              g->b[2], idx, idy, dt);
        GPU_LAUNCHED(g, "k_pml_e");
    }
    laser_lines(g, f, 1, g->b);
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

void gpu_fbnd_flows(gpu_state *g, const pic_state *st, int after)
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
        a.f[3 + c] = g->b[c];
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
