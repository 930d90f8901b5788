/* gpu_fields.cu - Yee field phases on the device: half B advance, periodic guard fill, fold
 * of guard currents, the filter, E advance, and the field diagnostics (energies, Gauss-law
 * error). Cell updates, the filter plan and the diagnostics' per-cell terms are yee.h's, the
 * CPU's, in the same order of operations. */
#include "gpu_internal.h"
#include "yee.h"

#include <math.h>

#define FX 32
#define FY 8

typedef struct {
    int nx, ny, stride, off;
    int px, py; /* periodic along x, y: guards filled and folded across that axis */
} mesh;

static mesh mesh_of(const gpu_state *g)
{
    mesh m = {g->nx, g->ny, g->stride, g->off, g->px, g->py};
    return m;
}

static dim3 interior_grid(const gpu_state *g)
{
    return dim3(gpu_blocks((size_t)g->nx, FX), gpu_blocks((size_t)g->ny, FY));
}

__global__ void k_b_half(mesh m, float *bx, float *by, float *bz, const float *ex,
                         const float *ey, const float *ez, float hx, float hy)
{
    int i = blockIdx.x * FX + threadIdx.x, j = blockIdx.y * FY + threadIdx.y;
    if (i < m.nx && j < m.ny)
        yee_b_cell(bx, by, bz, ex, ey, ez, m.off + i + j * m.stride, m.stride, hx, hy);
}

__global__ void k_e_advance(mesh m, float *ex, float *ey, float *ez, const float *bx,
                            const float *by, const float *bz, const float *jx,
                            const float *jy, const float *jz, float dt, float cx, float cy)
{
    int i = blockIdx.x * FX + threadIdx.x, j = blockIdx.y * FY + threadIdx.y;
    if (i < m.nx && j < m.ny)
        yee_e_cell(ex, ey, ez, bx, by, bz, jx, jy, jz, m.off + i + j * m.stride, m.stride, dt,
                   cx, cy);
}

/* Guard fill of up to three arrays (yee_guard_source). Threads run over the guard frame
 * only: the guard rows, then the guard columns of the interior rows. */
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

void gpu_guard_fill(gpu_state *g, float *a0, float *a1, float *a2)
{
    size_t n = (size_t)2 * EMF_GUARD * g->stride + (size_t)2 * EMF_GUARD * g->ny;
    k_guard_fill<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(mesh_of(g), a0, a1, a2);
    GPU_LAUNCHED(g, "k_guard_fill");
}

/* Fold of one array into interior cell (i, j) (yee_guard_fold; only cells within G of an
 * edge change). */
__device__ __forceinline__ void fold_cell(float *a, int i, int j, mesh m)
{
    const int G = EMF_GUARD;
    if (i >= G && i < m.nx - G && j >= G && j < m.ny - G)
        return;
    float *o = a + m.off;
    o[i + j * m.stride] = yee_guard_fold(o, i, j, m.stride, m.nx, m.ny, G, m.px, m.py);
}

__global__ void k_fold(mesh m, float *a0, float *a1, float *a2)
{
    int i = blockIdx.x * FX + threadIdx.x, j = blockIdx.y * FY + threadIdx.y;
    if (i >= m.nx || j >= m.ny)
        return;
    fold_cell(a0, i, j, m);
    if (a1)
        fold_cell(a1, i, j, m);
    if (a2)
        fold_cell(a2, i, j, m);
}

/* Zero the guard frame (after a fold in a box with a non-periodic side). */
__global__ void k_guard_zero(mesh m, float *a0, float *a1, float *a2)
{
    const int G = EMF_GUARD, s = m.stride;
    int t = blockIdx.x * blockDim.x + threadIdx.x, k;
    const int band = 2 * G * s;
    if (t < band) {
        int r = t / s;
        k = (r < G ? r : m.ny + r) * s + t % s;
    } else {
        t -= band;
        if (t >= 2 * G * m.ny)
            return;
        int c = t % (2 * G);
        k = (t / (2 * G) + G) * s + (c < G ? c : m.nx + c);
    }
    a0[k] = 0.0f;
    if (a1)
        a1[k] = 0.0f;
    if (a2)
        a2[k] = 0.0f;
}

void gpu_guard_zero(gpu_state *g, float *a0, float *a1, float *a2)
{
    size_t n = (size_t)2 * EMF_GUARD * g->stride + (size_t)2 * EMF_GUARD * g->ny;
    k_guard_zero<<<gpu_blocks(n, 256), 256, 0, g->stream>>>(mesh_of(g), a0, a1, a2);
    GPU_LAUNCHED(g, "k_guard_zero");
}

/* The fold: guard deposits added across periodic sides, dropped at the others (where the
 * guards are then cleared). */
void gpu_fold(gpu_state *g, float *a0, float *a1, float *a2)
{
    k_fold<<<interior_grid(g), dim3(FX, FY), 0, g->stream>>>(mesh_of(g), a0, a1, a2);
    GPU_LAUNCHED(g, "k_fold");
    if (!g->px || !g->py)
        gpu_guard_zero(g, a0, a1, a2);
}

__global__ void k_filter3(mesh m, const float *a, float *out, int d, float wa, float wb)
{
    int i = blockIdx.x * FX + threadIdx.x, j = blockIdx.y * FY + threadIdx.y;
    if (i < m.nx && j < m.ny) {
        int k = m.off + i + j * m.stride;
        out[k] = filter_3pt(a, k, d, wa, wb);
    }
}

/* a = tmp on the interior and the periodic image of tmp on the guards (those of a
 * non-periodic axis left as they are). */
__global__ void k_copy_fill(mesh m, int rows, float *a, const float *tmp)
{
    const int G = EMF_GUARD;
    int i = blockIdx.x * FX + threadIdx.x - G, j = blockIdx.y * FY + threadIdx.y - G;
    if (i >= m.stride - G || j >= rows - G)
        return;
    if ((!m.px && (i < 0 || i >= m.nx)) || (!m.py && (j < 0 || j >= m.ny)))
        return;
    a[m.off + i + j * m.stride] = tmp[m.off + wrap_index(i, m.nx) + wrap_index(j, m.ny) * m.stride];
}

static void filter_pass(gpu_state *g, float *a, int d, float wa, float wb)
{
    k_filter3<<<interior_grid(g), dim3(FX, FY), 0, g->stream>>>(mesh_of(g), a, g->tmp, d, wa,
                                                                 wb);
    GPU_LAUNCHED(g, "k_filter3");
    dim3 grid(gpu_blocks((size_t)g->stride, FX), gpu_blocks((size_t)g->rows, FY));
    k_copy_fill<<<grid, dim3(FX, FY), 0, g->stream>>>(mesh_of(g), g->rows, a, g->tmp);
    GPU_LAUNCHED(g, "k_copy_fill");
}

/* The deck's filter on one array (yee.h's filter plan). */
void gpu_filter(gpu_state *g, const pic_state *st, float *a)
{
    const int np = filter_pass_count(st->f->filter_passes, st->f->filter_compensate);
    if (np == 0)
        return;
    gpu_guard_fill(g, a, NULL, NULL);
    for (int dir = 0; dir < 2; dir++)
        for (int p = 0; p < np; p++) {
            float wa, wb;
            filter_weights(st->f->filter_passes, p, &wa, &wb);
            filter_pass(g, a, dir ? g->stride : 1, wa, wb);
        }
}

static void b_half(gpu_state *g, const pic_state *st)
{
    const float hx = (float)(0.5 * st->f->dt / st->f->dx), hy = (float)(0.5 * st->f->dt / st->f->dy);
    k_b_half<<<interior_grid(g), dim3(FX, FY), 0, g->stream>>>(
        mesh_of(g), g->b[0], g->b[1], g->b[2], g->e[0], g->e[1], g->e[2], hx, hy);
    GPU_LAUNCHED(g, "k_b_half");
    if (st->f->fb)
        gpu_bnd_b(g, st);
    gpu_guard_fill(g, g->b[0], g->b[1], g->b[2]);
}

void gpu_b_half(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    int t = gpu_tic(g, st);
    b_half(g, st);
    gpu_toc(g, t, PH_FIELD);
    gpu_debug(g, st, DBG_B_HALF);
}

void gpu_fields(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    const emf *f = st->f;
    int t = gpu_tic(g, st);
    b_half(g, st);
    gpu_fold(g, g->j[0], g->j[1], g->j[2]);
    for (int c = 0; c < 3; c++)
        gpu_filter(g, st, g->j[c]);
    const float dt = (float)f->dt, cx = (float)(f->dt / f->dx), cy = (float)(f->dt / f->dy);
    if (f->fb)
        gpu_bnd_e_save(g, st);
    k_e_advance<<<interior_grid(g), dim3(FX, FY), 0, g->stream>>>(
        mesh_of(g), g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2], g->j[0], g->j[1],
        g->j[2], dt, cx, cy);
    GPU_LAUNCHED(g, "k_e_advance");
    if (f->fb)
        gpu_bnd_e(g, st);
    gpu_guard_fill(g, g->e[0], g->e[1], g->e[2]);
    gpu_toc(g, t, PH_FIELD);
    gpu_debug(g, st, DBG_FIELDS);
}

/* Per block: sum E^2, sum B^2 (double) and max |div E - (rho - rho_bg)| over its cells
 * (the Gauss-law nodes in [glo, ghi) only). */
__global__ void k_field_diag(mesh m, const float *ex, const float *ey, const float *ez,
                             const float *bx, const float *by, const float *bz,
                             const float *rho, double rho_bg, float idx, float idy,
                             int2 glo, int2 ghi, double *partial)
{
    __shared__ double se[FX * FY], sb[FX * FY], sg[FX * FY];
    int i = blockIdx.x * FX + threadIdx.x, j = blockIdx.y * FY + threadIdx.y;
    int t = threadIdx.x + FX * threadIdx.y;
    double ve = 0.0, vb = 0.0, vg = 0.0;
    if (i < m.nx && j < m.ny) {
        int k = m.off + i + j * m.stride;
        ve = yee_square(ex, ey, ez, k);
        vb = yee_square(bx, by, bz, k);
        if (i >= glo.x && i < ghi.x && j >= glo.y && j < ghi.y)
            vg = yee_gauss_residual(ex, ey, rho, rho_bg, k, m.stride, idx, idy);
    }
    se[t] = ve;
    sb[t] = vb;
    sg[t] = vg;
    __syncthreads();
    for (int h = FX * FY / 2; h > 0; h >>= 1) {
        if (t < h) {
            se[t] += se[t + h];
            sb[t] += sb[t + h];
            sg[t] = fmax(sg[t], sg[t + h]);
        }
        __syncthreads();
    }
    if (t == 0) {
        size_t b = blockIdx.x + (size_t)gridDim.x * blockIdx.y;
        partial[3 * b] = se[0];
        partial[3 * b + 1] = sb[0];
        partial[3 * b + 2] = sg[0];
    }
}

void gpu_charge(gpu_state *g, const pic_state *st)
{
    GPU_CK(cudaMemsetAsync(g->rho, 0, g->size * sizeof(float), g->stream));
    gpu_rho_deposit(g, -1, g->rho);
    gpu_fold(g, g->rho, NULL, NULL);
    gpu_filter(g, st, g->rho);
    gpu_guard_fill(g, g->rho, NULL, NULL);
    gpu_debug(g, st, DBG_RHO);
}

/* The charge density at the current positions is deposited here (never copied to the host). */
void gpu_field_diag(void *ctx, pic_state *st, double *energy_e, double *energy_b,
                    double *gauss)
{
    gpu_state *g = (gpu_state *)ctx;
    const emf *f = st->f;
    gpu_charge(g, st);
    dim3 grid = interior_grid(g);
    size_t nb = (size_t)grid.x * grid.y;
    double *part = g->partial, *hpart = g->h_partial;
    int own = nb > (size_t)g->ncl;
    if (own) { /* more blocks than the per-cluster scratch holds */
        part = (double *)gpu_malloc(g, nb * 3 * sizeof(double), "field diagnostics");
        hpart = (double *)empic_alloc(nb * 3 * sizeof(double), "field diagnostics");
    }
    k_field_diag<<<grid, dim3(FX, FY), 0, g->stream>>>(
        mesh_of(g), g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2], g->rho, f->rho_bg,
        (float)(1.0 / f->dx), (float)(1.0 / f->dy), make_int2(f->glo[0], f->glo[1]),
        make_int2(f->ghi[0], f->ghi[1]), part);
    GPU_LAUNCHED(g, "k_field_diag");
    GPU_CK(cudaMemcpyAsync(hpart, part, nb * 3 * sizeof(double), cudaMemcpyDeviceToHost,
                           g->stream));
    gpu_harvest(g, st);
    double se = 0.0, sb = 0.0, gm = 0.0;
    for (size_t b = 0; b < nb; b++) {
        se += hpart[3 * b];
        sb += hpart[3 * b + 1];
        gm = hpart[3 * b + 2] > gm ? hpart[3 * b + 2] : gm;
    }
    if (own) {
        cudaFree(part);
        g->bytes -= nb * 3 * sizeof(double);
        free(hpart);
    }
    *energy_e = yee_energy(se, f->dx, f->dy);
    *energy_b = yee_energy(sb, f->dx, f->dy);
    *gauss = gm;
}
