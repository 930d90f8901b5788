/* gpu_fields.cu - Yee field phases on the device (the twin of src/cpu/cpu_fields.c): half B
 * advance, guard fill, the current's and charge's fixed-point sums finished (guard deposits
 * folded, one conversion), the filter, E advance, and the field diagnostics (energies,
 * Gauss-law error). Cell updates, the filter plan and the diagnostics' per-cell terms are
 * yee.h's, the CPU's, in the same order of operations. Over several ranks the kernels run
 * over this rank's cells (global indices, as emf.h) and the exchanges with the neighbours
 * go through gpu_halo.cu. */
#include "gpu_internal.h"
#include "ebal.h"
#include "pml.h"
#include "yee.h"

#include <math.h>
#include <string.h>

#define FX 32
#define FY 8

typedef struct {
    int nx, ny, stride, off;
    int px, py;         /* periodic along x, y: guards filled across that axis (one rank) */
    int i0, i1, j0, j1; /* this rank's cells */
    int images;         /* the updates write the guards (guard_images) */
} mesh;

static mesh mesh_of(const gpu_state *g)
{
    mesh m = {g->nx, g->ny, g->stride, g->off, g->px, g->py, g->i0, g->i1, g->j0, g->j1, 0};
    return m;
}

/* Whether the B and E updates write the guard cells themselves: a box periodic along both
 * axes on one rank, with no field boundary to apply after the update. Each guard cell is
 * then the periodic image of one cell (yee_guard_source), written by the thread that
 * updates that cell: the guard fill's values without its launch (3 a step). */
static mesh update_mesh(const gpu_state *g, const pic_state *st)
{
    mesh m = mesh_of(g);
    m.images = g->ranks == 1 && g->px && g->py && !st->f->fb && g->nx >= EMF_GUARD &&
               g->ny >= EMF_GUARD;
    return m;
}

/* The guard copies of updated cell (i, j) (entry k) of a box periodic along both axes. */
__device__ __forceinline__ void guard_images(const mesh &m, int i, int j, int k, float *a0,
                                             float *a1, float *a2)
{
    const int G = EMF_GUARD;
    if (i >= G && i < m.nx - G && j >= G && j < m.ny - G)
        return;
    for (int b = -1; b <= 1; b++) {
        const int gj = j + b * m.ny;
        if (gj < -G || gj >= m.ny + G)
            continue;
        for (int a = -1; a <= 1; a++) {
            const int gi = i + a * m.nx, d = a * m.nx + b * m.ny * m.stride;
            if ((a == 0 && b == 0) || gi < -G || gi >= m.nx + G)
                continue;
            a0[k + d] = a0[k];
            a1[k + d] = a1[k];
            a2[k + d] = a2[k];
        }
    }
}

/* Threads over the cells of m: global cell (i, j) of thread (x, y) of block (bx, by). */
static dim3 mesh_grid(const mesh &m)
{
    return dim3(gpu_blocks((size_t)(m.i1 - m.i0), FX), gpu_blocks((size_t)(m.j1 - m.j0), FY));
}

__device__ __forceinline__ bool cell_of_thread(const mesh &m, int &i, int &j)
{
    i = m.i0 + (int)(blockIdx.x * FX + threadIdx.x);
    j = m.j0 + (int)(blockIdx.y * FY + threadIdx.y);
    return i < m.i1 && j < m.j1;
}

/* B = B0 - h curl E at cell (i, j) (entry k) into bo (bo = b0: in place), with its guard
 * images. */
__device__ __forceinline__ void b_half_cell(const mesh &m, int i, int j, int k, const float *bx0,
                                            const float *by0, const float *bz0, float *bx,
                                            float *by, float *bz, const float *ex,
                                            const float *ey, const float *ez, float hx,
                                            float hy)
{
    float x, y, z;
    yee_b_new(bx0, by0, bz0, ex, ey, ez, k, m.stride, hx, hy, &x, &y, &z);
    bx[k] = x;
    by[k] = y;
    bz[k] = z;
    if (m.images)
        guard_images(m, i, j, k, bx, by, bz);
}

/* B's half steps with E(n) over the cells of m: B(n) = B(n-1/2) - h curl E(n) in place,
 * B(n+1/2) = B(n) - h curl E(n) into bn. Neither half reads another cell's B: both in one
 * pass (the boundaries' terms of both follow, gpu_fbnd_b). */
__global__ void k_b_step(mesh m, float *bx, float *by, float *bz, float *nbx, float *nby,
                         float *nbz, const float *ex, const float *ey, const float *ez,
                         float hx, float hy)
{
    int i, j;
    if (!cell_of_thread(m, i, j))
        return;
    const int k = m.off + i + j * m.stride;
    b_half_cell(m, i, j, k, bx, by, bz, bx, by, bz, ex, ey, ez, hx, hy);
    b_half_cell(m, i, j, k, bx, by, bz, nbx, nby, nbz, ex, ey, ez, hx, hy);
}

/* E(n+1) = E(n) + dt (curl B(n+1/2) - J(n+1/2)) over the cells of m, or with nframe over the
 * nframe elements of acc's frame (frame_element; its guards skipped): one kernel, so that
 * both take the same instructions per cell. */
__global__ void k_e_advance(mesh m, size_t nframe, float *ex, float *ey, float *ez,
                            const float *bx, const float *by, const float *bz, const float *jx,
                            const float *jy, const float *jz, float dt, float cx, float cy)
{
    int i, j;
    if (nframe) {
        const int G = EMF_GUARD, w = m.i1 - m.i0, h = m.j1 - m.j0;
        const size_t t = (blockIdx.x * (size_t)FY + threadIdx.y) * FX + threadIdx.x;
        if (t >= nframe)
            return;
        const int2 cr = frame_element(t, m.stride, w, h);
        if (cr.x < G || cr.x >= G + w || cr.y < G || cr.y >= G + h)
            return;
        i = m.i0 + cr.x - G;
        j = m.j0 + cr.y - G;
    } else if (!cell_of_thread(m, i, j)) {
        return;
    }
    const int k = m.off + i + j * m.stride;
    yee_e_cell(ex, ey, ez, bx, by, bz, jx, jy, jz, k, m.stride, dt, cx, cy);
    if (m.images)
        guard_images(m, i, j, k, ex, ey, ez);
}

/* Guard fill of up to three arrays on one rank (yee_guard_source). Threads run over the
 * guard frame only: the guard rows, then the guard columns of the interior rows. */
__global__ void k_guard_fill(mesh m, float *a0, float *a1, float *a2)
{
    const int G = EMF_GUARD, s = m.stride;
    int t = blockIdx.x * blockDim.x + threadIdx.x, i, j, si, sj;
    const int band = 2 * G * s;
    if (t < band) {
        int r = t / s;
        j = r < G ? r - G : m.ny + r - G;
        i = t % s - G;
    } else {
        t -= band;
        if (t >= 2 * G * m.ny)
            return;
        j = t / (2 * G);
        int c = t % (2 * G);
        i = c < G ? c - G : m.nx + c - G;
    }
    if (!yee_guard_source(i, j, m.nx, m.ny, m.px, m.py, &si, &sj))
        return;
    int k = m.off + i + j * s, src = m.off + si + sj * s;
    a0[k] = a0[src];
    if (a1)
        a1[k] = a1[src];
    if (a2)
        a2[k] = a2[src];
}

/* Half of a guard fill across a periodic side that this rank holds alone (emf_guard_axis):
 * along x the G columns of this rank's rows (and of the edge row above: yee_fill_top),
 * along y G whole rows; array blockIdx.y. */
typedef struct {
    float *p[GPU_HALO_MAX];
} guard_arrays;

__global__ void k_guard_axis(mesh m, int axis, guard_arrays arr)
{
    const int G = EMF_GUARD, s = m.stride, w = m.i1 - m.i0, h = m.j1 - m.j0;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float *a = arr.p[blockIdx.y];
    if (axis == 0) {
        if (t >= G * (h + yee_fill_top(m.j1, m.ny, m.py)))
            return;
        const int r = G + t / G, c = t % G; /* guard column c <- w + c, G + w + c <- G + c */
        a[r * s + c] = a[r * s + w + c];
        a[r * s + G + w + c] = a[r * s + G + c];
    } else {
        if (t >= G * s)
            return;
        const int r = t / s, c = t % s;
        a[r * s + c] = a[(h + r) * s + c];
        a[(G + h + r) * s + c] = a[(G + r) * s + c];
    }
}

/* gpu_halo's device half for an axis this rank holds alone: guard fills, all arrays in one
 * launch. */
static void guard_self(gpu_state *g, void *const a[], int ncomp, int axis)
{
    if (!ncomp)
        return;
    const int rows = g->j1 - g->j0 + yee_fill_top(g->j1, g->ny, g->py);
    const size_t n = (size_t)EMF_GUARD * (axis ? g->stride : rows);
    guard_arrays arr;
    for (int c = 0; c < GPU_HALO_MAX; c++)
        arr.p[c] = c < ncomp ? (float *)a[c] : NULL;
    k_guard_axis<<<dim3(gpu_blocks(n, 256), (unsigned)ncomp), 256, 0, g->stream>>>(mesh_of(g),
                                                                                  axis, arr);
    GPU_LAUNCHED(g, "k_guard_axis");
}

void gpu_guard_fill_n(gpu_state *g, float *const a[], int n)
{
    if (g->ranks == 1) {
        for (int k = 0; k < n; k += 3)
            gpu_guard_fill(g, a[k], k + 1 < n ? a[k + 1] : NULL, k + 2 < n ? a[k + 2] : NULL);
        return;
    }
    gpu_halo(g, (void *const *)a, n, 0, guard_self);
}

void gpu_guard_fill(gpu_state *g, float *a0, float *a1, float *a2)
{
    if (g->ranks == 1) {
        if (!g->px && !g->py)
            return; /* no periodic side: no guard has a source (yee_guard_source) */
        size_t n = (size_t)2 * EMF_GUARD * g->stride + (size_t)2 * EMF_GUARD * g->ny;
        k_guard_fill<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(mesh_of(g), a0, a1, a2);
        GPU_LAUNCHED(g, "k_guard_fill");
        return;
    }
    void *const arr[3] = {a0, a1, a2};
    gpu_halo(g, arr, a2 ? 3 : a1 ? 2 : 1, 0, guard_self);
}

/* Fold across a periodic side that this rank holds alone (emf_acc_fold): along x every
 * row's guard columns added into the cells they stand for, along y the whole guard rows;
 * the guards zeroed. One thread per row (x) or column (y) of each component: its adds are
 * in its own order, and integer adds give the same sums in any. */
__global__ void k_acc_fold_axis(mesh m, int axis, long long *acc, int ncomp, size_t size)
{
    const int G = EMF_GUARD, s = m.stride, w = m.i1 - m.i0, h = m.j1 - m.j0;
    const int rows = h + 2 * G, lines = axis ? s : rows;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ncomp * lines)
        return;
    unsigned long long *a = (unsigned long long *)acc + (size_t)(t / lines) * size;
    const int l = t % lines, d = axis ? s : 1;    /* the line, and the step across it */
    unsigned long long *o = a + (axis ? l : (size_t)l * s);
    const int n = axis ? h : w;
    for (int c = 0; c < G; c++) {
        const unsigned long long lo = o[c * d], hi = o[(G + n + c) * d];
        o[(n + c) * d] += lo;   /* low guards: the last cells */
        o[(G + c) * d] += hi;   /* high guards: the first cells */
        o[c * d] = 0;
        o[(G + n + c) * d] = 0;
    }
}

/* The finished sums as floats (one rounding, as emf_acc_finish); guards zero: n elements,
 * all, or with `frame` acc's frame only (k_tiles_mesh wrote the rest). */
__global__ void k_acc_convert(mesh m, const long long *acc, size_t size, size_t n, double inv,
                              int frame, float *d0, float *d1, float *d2)
{
    const int G = EMF_GUARD, s = m.stride, w = m.i1 - m.i0, h = m.j1 - m.j0;
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const int2 cr = frame ? frame_element(t, s, w, h) : make_int2((int)(t % s), (int)(t / s));
    const size_t e = (size_t)cr.y * s + cr.x;
    const bool cell = cr.x >= G && cr.x < G + w && cr.y >= G && cr.y < G + h;
    float *const d[3] = {d0, d1, d2};
    for (int k = 0; k < 3 && d[k]; k++)
        d[k][e] = cell ? (float)((double)acc[k * size + e] * inv) : 0.0f;
}

/* gpu_halo's device half for an axis this rank holds alone: the fold. */
static void fold_self(gpu_state *g, void *const a[], int ncomp, int axis)
{
    (void)a; /* g->acc's components */
    const int lines = axis ? g->stride : g->rows;
    k_acc_fold_axis<<<gpu_blocks((size_t)ncomp * lines, 128), 128, 0, g->stream>>>(
        mesh_of(g), axis, g->acc, ncomp, g->size);
    GPU_LAUNCHED(g, "k_acc_fold_axis");
}

void gpu_acc_finish(gpu_state *g, int ncomp, float *d0, float *d1, float *d2, int frame)
{
    void *const acc[3] = {g->acc, g->acc + g->size, g->acc + 2 * g->size};
    gpu_halo(g, acc, ncomp, 1, fold_self);
    int framed;
    const size_t n = acc_elements(g, frame, &framed);
    k_acc_convert<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(
        mesh_of(g), g->acc, g->size, n, 1.0 / (double)g->scale, framed, d0, d1, d2);
    GPU_LAUNCHED(g, "k_acc_convert");
}

__global__ void k_filter3(mesh m, const float *a, float *out, int d, float wa, float wb)
{
    int i, j;
    if (cell_of_thread(m, i, j)) {
        int k = m.off + i + j * m.stride;
        out[k] = filter_3pt(a, k, d, wa, wb);
    }
}

/* a = tmp on the interior and the periodic image of tmp on the guards (those of a
 * non-periodic axis left as they are; over several ranks px = py = 0: the cells only). */
__global__ void k_copy_fill(mesh m, float *a, const float *tmp)
{
    const int G = EMF_GUARD;
    int i = m.i0 + (int)(blockIdx.x * FX + threadIdx.x) - G;
    int j = m.j0 + (int)(blockIdx.y * FY + threadIdx.y) - G;
    if (i >= m.i1 + G || j >= m.j1 + G)
        return;
    if ((!m.px && (i < m.i0 || i >= m.i1)) || (!m.py && (j < m.j0 || j >= m.j1)))
        return;
    a[m.off + i + j * m.stride] = tmp[m.off + wrap_index(i, m.nx) + wrap_index(j, m.ny) * m.stride];
}

/* One pass along x (d = 1) or y (d = stride) over the arrays a[0..n), then their guards. */
static void filter_pass(gpu_state *g, float *const a[3], int n, int d, float wa, float wb)
{
    mesh m = mesh_of(g);
    if (g->ranks > 1)
        m.px = m.py = 0; /* the guards from the neighbours below */
    dim3 grid(gpu_blocks((size_t)g->stride, FX), gpu_blocks((size_t)g->rows, FY));
    for (int c = 0; c < n; c++) {
        k_filter3<<<mesh_grid(m), dim3(FX, FY), 0, g->stream>>>(mesh_of(g), a[c], g->tmp, d,
                                                                  wa, wb);
        GPU_LAUNCHED(g, "k_filter3");
        k_copy_fill<<<grid, dim3(FX, FY), 0, g->stream>>>(m, a[c], g->tmp);
        GPU_LAUNCHED(g, "k_copy_fill");
    }
    if (g->ranks > 1)
        gpu_guard_fill(g, a[0], n > 1 ? a[1] : NULL, n > 2 ? a[2] : NULL);
}

/* The deck's filter on up to three arrays (yee.h's filter plan, each array on its own; their
 * exchanges between ranks together). */
void gpu_fields_filter(gpu_state *g, const pic_state *st, float *a0, float *a1, float *a2)
{
    const int np = filter_pass_count(st->f->filter_passes, st->f->filter_compensate);
    if (np == 0)
        return;
    float *const a[3] = {a0, a1, a2};
    const int n = a2 ? 3 : a1 ? 2 : 1;
    gpu_guard_fill(g, a0, a1, a2);
    for (int dir = 0; dir < 2; dir++)
        for (int p = 0; p < np; p++) {
            float wa, wb;
            filter_weights(st->f->filter_passes, p, &wa, &wb);
            filter_pass(g, a, n, dir ? g->stride : 1, wa, wb);
        }
}

/* The cells B's half steps update (m's): this rank's, and over several ranks the guards
 * across each side with a rank there (all but the outermost upper line, whose E neighbour is
 * not here and which neither the gather nor E's update reads). From guards of E and B equal
 * to the cells they stand for, the same operations give the values the neighbour computes,
 * bit for bit, with no exchange: the boundary terms too, as every rank keeps the CPML layers'
 * memories of the whole box (fbnd.h) and updates those of its guards as the neighbour does
 * its cells'. Not across a periodic side of a box with field boundaries that this rank holds
 * alone (a cell and its image would update the same memory twice), nor with a Mur edge: it
 * sets the edge node, a guard, of this rank's own lines only, and an exchange along the other
 * axis does not carry that corner. Returns whether the guards are so made. */
static int b_cells(const gpu_state *g, const pic_state *st, mesh *m)
{
    *m = update_mesh(g, st);
    int keep = (g->px && g->nb[SIDE_XMIN] == g->rank) || (g->py && g->nb[SIDE_YMIN] == g->rank);
    for (int k = 0; k < 4; k++)
        keep |= g->mur_old[k] != NULL;
    if (g->ranks == 1 || (st->f->fb && keep))
        return 0;
    const int G = EMF_GUARD;
    m->i0 -= g->nb[SIDE_XMIN] >= 0 ? G : 0;
    m->i1 += g->nb[SIDE_XMAX] >= 0 ? G - 1 : 0;
    m->j0 -= g->nb[SIDE_YMIN] >= 0 ? G : 0;
    m->j1 += g->nb[SIDE_YMAX] >= 0 ? G - 1 : 0;
    return 1;
}

/* B's two half steps (k_b_step) over the cells of m with their boundary terms (listed in
 * bound[slot]), and the guards that the pass did not make (wide: b_cells) filled. */
static void b_step(gpu_state *g, const pic_state *st, const mesh &m, int slot, int wide,
                   int upd)
{
    const emf *f = st->f;
    const float hx = (float)(0.5 * f->dt / f->dx), hy = (float)(0.5 * f->dt / f->dy);
    if (m.i1 <= m.i0 || m.j1 <= m.j0)
        return;
    k_b_step<<<mesh_grid(m), dim3(FX, FY), 0, g->stream>>>(m, g->b[0], g->b[1], g->b[2],
                                                           g->bn[0], g->bn[1], g->bn[2],
                                                           g->e[0], g->e[1], g->e[2], hx, hy);
    GPU_LAUNCHED(g, "k_b_step");
    if (f->fb)
        gpu_fbnd_b(g, st, make_int4(m.i0, m.i1, m.j0, m.j1), slot, upd, hx, hy);
    if (!m.images && !wide) {
        float *const b[6] = {g->b[0], g->b[1], g->b[2], g->bn[0], g->bn[1], g->bn[2]};
        gpu_guard_fill_n(g, b, 6);
    }
}

/* Whether B's step over the guards (b_cells) splits around E's guard exchange: the cells
 * whose stencil stays in this rank's E (all but the last column before a rank on the right,
 * and the guards) on inner_stream as soon as E's cells are final (e_cells), the strips at the
 * x borders after the exchange. Ranks along x only (along y the exchange also fills the
 * corners and a periodic side this rank holds alone). */
static int b_split(const gpu_state *g, int wide)
{
    return wide && g->overlap && gpu_axis_kind(g, 1) == -1 && g->i1 - g->i0 > 2 * EMF_GUARD &&
           (g->nb[SIDE_XMIN] >= 0 || g->nb[SIDE_XMAX] >= 0);
}

/* B(n) = B(n-1/2) - dt/2 curl E(n), which the push waits for, and B(n+1/2) = B(n) - dt/2
 * curl E(n) into bn (neither reads J or the particles), which gpu_fields swaps in: in one
 * pass (B(n+1/2) made beside the push in a launch of its own measured slower, on one rank
 * too), split around E's guard exchange where b_split allows. */
void gpu_b_half(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_trace_step(g, st->f->step);
    gpu_fields_continue(g); /* beside the last step's ionization and collisions */
    int t = gpu_tic(g, st);
    const int upd = pml_psi_due(&g->psi_step, st->f->step); /* the device's own psi clock */
    mesh m;
    const int wide = b_cells(g, st, &m);
    if (b_split(g, wide)) {
        mesh in = m, lo = m, hi = m;
        in.i0 = lo.i1 = g->i0;
        in.i1 = hi.i0 = g->nb[SIDE_XMAX] >= 0 ? g->i1 - 1 : m.i1;
        g->stream = g->inner_stream;
        GPU_CK(cudaStreamWaitEvent(g->stream, g->e_cells, 0));
        b_step(g, st, in, BOUND_B, 1, upd);
        GPU_CK(cudaEventRecord(g->b_inner, g->stream));
        g->stream = g->field_stream;
        b_step(g, st, lo, BOUND_B_LO, 1, upd);
        b_step(g, st, hi, BOUND_B_HI, 1, upd);
        GPU_CK(cudaStreamWaitEvent(g->stream, g->b_inner, 0));
    } else {
        b_step(g, st, m, BOUND_B, wide, upd);
    }
    gpu_toc(g, t, PH_FIELD);
    gpu_fields_end(g);
    gpu_debug(g, st, DBG_B_HALF);
}

void gpu_fields(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    const emf *f = st->f;
    gpu_fields_begin(g); /* beside the sort, which gpu_sort then joins */
    int t = gpu_tic(g, st);
    for (int c = 0; c < 3; c++) { /* B(n+1/2), made by gpu_b_half */
        float *const b = g->b[c];
        g->b[c] = g->bn[c];
        g->bn[c] = b;
    }
    /* several ranks: J's cells that no fold reaches were summed on inner_stream
     * (tiles_current); E's update there follows them while the fold travels, then acc's
     * frame's (no filter: it would spread the fold's cells inward) */
    const int G = EMF_GUARD, inner = g->overlap && g->ranks > 1;
    const int split = inner && acc_frame_n(g) && g->i1 - g->i0 > 2 * G &&
                      !filter_pass_count(f->filter_passes, f->filter_compensate);
    if (split)
        g->stream = g->inner_stream;
    else if (inner)
        GPU_CK(cudaStreamWaitEvent(g->stream, g->j_inner, 0));
    gpu_fields_filter(g, st, g->j[0], g->j[1], g->j[2]);
    const float dt = (float)f->dt, cx = (float)(f->dt / f->dx), cy = (float)(f->dt / f->dy);
    const mesh m = update_mesh(g, st);
    if (f->fb) { /* before E changes: its balance sums (gpu_particles), Mur's old values */
        GPU_CK(cudaStreamWaitEvent(g->stream, g->flows_done, 0));
        gpu_fbnd_e_save(g, st);
    }
    mesh mi = m;
    if (split)
        mi.i0 += G, mi.i1 -= G, mi.j0 += G, mi.j1 -= G;
    k_e_advance<<<mesh_grid(mi), dim3(FX, FY), 0, g->stream>>>(
        mi, 0, g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2], g->j[0], g->j[1], g->j[2],
        dt, cx, cy);
    GPU_LAUNCHED(g, "k_e_advance");
    if (split) {
        GPU_CK(cudaEventRecord(g->e_inner, g->stream));
        g->stream = g->field_stream;
        GPU_CK(cudaStreamWaitEvent(g->stream, g->e_inner, 0));
        const size_t n = acc_frame_n(g);
        k_e_advance<<<gpu_blocks(n, FX * FY), dim3(FX, FY), 0, g->stream>>>(
            m, n, g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2], g->j[0], g->j[1],
            g->j[2], dt, cx, cy);
        GPU_LAUNCHED(g, "k_e_advance");
    }
    /* the balance sums of E(n+1) on inner_stream beside E's guard fill, which they do not
       read; not beside a fill of B's guards too (before a window shift), which they do */
    const int beside = f->fb && g->overlap && !(st->window_next && g->ranks > 1);
    if (f->fb) {
        gpu_fbnd_e(g, st);
        if (beside) {
            GPU_CK(cudaEventRecord(g->e_made, g->stream));
            GPU_CK(cudaStreamWaitEvent(g->inner_stream, g->e_made, 0));
            g->stream = g->inner_stream;
        }
        gpu_fbnd_flows(g, st, 1, g->b);
        if (beside) {
            GPU_CK(cudaEventRecord(g->flows_done, g->stream));
            g->stream = g->field_stream;
        }
    }
    if (st->window_next && g->ranks > 1) {
        /* and B's: the shift moves the right guards' first column into this rank's cells;
         * the guards are filled again after it (gpu_window_shift) */
        float *const eb[6] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2]};
        gpu_guard_fill_n(g, eb, 6);
    } else if (!m.images) {
        GPU_CK(cudaEventRecord(g->e_cells, g->stream)); /* gpu_b_half's split */
        gpu_guard_fill(g, g->e[0], g->e[1], g->e[2]);
    }
    if (beside) /* before anything on this stream changes the fields again */
        GPU_CK(cudaStreamWaitEvent(g->stream, g->flows_done, 0));
    gpu_toc(g, t, PH_FIELD);
    gpu_fields_end(g);
    gpu_debug(g, st, DBG_FIELDS);
}

/* Per cluster (one block each): sum E^2, sum B^2, the sum of the squares outside the
 * balance region r and of the stagger term inside it (ebal.h) (double) and max |div E - (rho - rho_bg)| over its cells
 * (the Gauss-law nodes in [glo, ghi) only), each thread's cells in a fixed order, then a
 * fixed tree: the same sums whatever the ranks (other ranks' clusters: 0). */
/* The lasers' B columns at E's time level (laser.h e = 0), for the stagger term. */
typedef struct {
    laser_beam beam[DECK_MAX_LASERS];
    laser_line ln[DECK_MAX_LASERS];
    int axis[DECK_MAX_LASERS], n;
} klaser_cols;

__global__ void k_field_diag(mesh m, const int *x0, const int *y0, int ncx, const float *ex,
                             const float *ey, const float *ez, const float *bx,
                             const float *by, const float *bz, const float *rho,
                             double rho_bg, float idx, float idy, int2 glo, int2 ghi,
                             ebal_region r, float hx, float hy, klaser_cols lc,
                             double *partial)
{
    __shared__ double se[FX * FY], sb[FX * FY], sl[FX * FY], ss[FX * FY], sg[FX * FY];
    const int c = blockIdx.x, t = threadIdx.x, cx = c % ncx, cy = c / ncx;
    const int ci0 = x0[cx], cw = x0[cx + 1] - ci0, cj0 = y0[cy], ch = y0[cy + 1] - cj0;
    double ve = 0.0, vb = 0.0, vl = 0.0, vs = 0.0, vg = 0.0;
    const float *const a[6] = {ex, ey, ez, bx, by, bz};
    if (ci0 >= m.i0 && ci0 < m.i1 && cj0 >= m.j0 && cj0 < m.j1)
        for (int q = t; q < cw * ch; q += FX * FY) {
            const int i = ci0 + q % cw, j = cj0 + q / cw, k = m.off + i + j * m.stride;
            ve += yee_square(ex, ey, ez, k);
            vb += yee_square(bx, by, bz, k);
            for (int n = 0; n < 6; n++)
                if (!ebal_inside(&r, n, i, j))
                    vl += (double)a[n][k] * a[n][k];
            vs += ebal_stagger(&r, i, j, ex, ey, ez, k, m.stride, hx, hy);
            for (int l = 0; l < lc.n; l++)
                vs += ebal_stagger_laser(&r, &lc.beam[l], &lc.ln[l], lc.axis[l], i, j, ex, ey,
                                         ez, k, m.stride, hx, hy);
            if (i >= glo.x && i < ghi.x && j >= glo.y && j < ghi.y)
                vg = fmax(vg, yee_gauss_residual(ex, ey, rho, rho_bg, k, m.stride, idx, idy));
        }
    se[t] = ve;
    sb[t] = vb;
    sl[t] = vl;
    ss[t] = vs;
    sg[t] = vg;
    __syncthreads();
    for (int h = FX * FY / 2; h > 0; h >>= 1) {
        if (t < h) {
            se[t] += se[t + h];
            sb[t] += sb[t + h];
            sl[t] += sl[t + h];
            ss[t] += ss[t + h];
            sg[t] = fmax(sg[t], sg[t + h]);
        }
        __syncthreads();
    }
    if (t == 0) {
        partial[5 * c] = se[0];
        partial[5 * c + 1] = sb[0];
        partial[5 * c + 2] = sl[0];
        partial[5 * c + 3] = ss[0];
        partial[5 * c + 4] = sg[0];
    }
}

/* Field energies (E and B at their own time levels) and max |div E - rho + rho_bg| with g->rho
 * as deposited (emf_energy_e, emf_energy_b, emf_gauss_max). */
void gpu_fields_energy(gpu_state *g, pic_state *st, double *energy_e, double *energy_b,
                       double *fbal, double *gauss)
{
    const emf *f = st->f;
    klaser_cols lc;
    memset(&lc, 0, sizeof lc);
    for (int l = 0; f->fb && l < f->fb->nlasers; l++) {
        const laser_src *L = &f->fb->lasers[l];
        lc.beam[l] = L->beam;
        lc.ln[l] = laser_line_of(L, 0, f->step, f->dt, f->dx, f->dy, g->shift);
        lc.axis[l] = L->axis;
        lc.n = l + 1;
    }
    k_field_diag<<<g->ncl, FX * FY, 0, g->stream>>>(
        mesh_of(g), g->x0, g->y0, g->ncx, g->e[0], g->e[1], g->e[2], g->b[0], g->b[1],
        g->b[2], g->rho, f->rho_bg, (float)(1.0 / f->dx), (float)(1.0 / f->dy),
        make_int2(f->glo[0], f->glo[1]), make_int2(f->ghi[0], f->ghi[1]), st->reg,
        (float)(0.5 * f->dt / f->dx), (float)(0.5 * f->dt / f->dy), lc, g->partial);
    GPU_LAUNCHED(g, "k_field_diag");
    const size_t n = (size_t)g->ncl * 5;
    GPU_CK(cudaMemcpyAsync(g->h_partial, g->partial, n * sizeof(double),
                           cudaMemcpyDeviceToHost, g->stream));
    gpu_harvest(g, st);
    comm_sum_double(g->h_partial, n); /* each cluster's entries from its rank alone: exact */
    double se = 0.0, sb = 0.0, sl = 0.0, ss = 0.0, gm = 0.0;
    for (int c = 0; c < g->ncl; c++) {
        se += g->h_partial[5 * c];
        sb += g->h_partial[5 * c + 1];
        sl += g->h_partial[5 * c + 2];
        ss += g->h_partial[5 * c + 3];
        gm = fmax(gm, g->h_partial[5 * c + 4]);
    }
    *energy_e = yee_energy(se, f->dx, f->dy);
    *energy_b = yee_energy(sb, f->dx, f->dy);
    fbal[0] = yee_energy(sl, f->dx, f->dy);
    fbal[1] = yee_energy(ss, f->dx, f->dy);
    *gauss = gm;
}
