/* gpu_particles.cu - push, move and charge-conserving deposit on the device (design.md §5):
 * one thread block per cluster. The push kernel stages its cluster's E and B (plus ghosts)
 * in shared memory and pushes the particles with particle.h's gather_component / boris_push;
 * the move kernel moves them and deposits the current with move_pieces / deposit_add into a
 * shared-memory tile of the cluster plus ghosts (1 cell below, 2 above, as src/push.c). The
 * two can also run as one fused kernel (EMPIC_GPU_FUSED=1; no faster, see NOTES.md). Threads take 4 consecutive particles with
 * 16-byte loads, so the lanes of a warp work in several cells at once, and the lanes spread
 * over up to 4 private tile copies: fewer threads meet on one shared-memory word. The tiles
 * hold 64-bit fixed-point integers (particle.h's deposit_add_fixed, scale from the deck):
 * native integer atomics, and a sum that does not depend on the order of the adds, so the
 * current is the same in every run. Each block writes its reduced tile to a per-cluster
 * float buffer; four colour passes (2x2 colouring of the
 * clusters, Kong Fig. 3) then add the tiles to the mesh current without atomics. The block
 * also writes each particle's 4-bit migration code and the cluster's 9-bin histogram. */
#include "gpu_internal.h"
#include "particle.h"

#define FULL 0xffffffffu

enum { M_PUSH = 1, M_MOVE = 2, M_BOTH = 3 };

typedef struct {
    uint32_t *cell;
    float *x, *y, *ux, *uy, *uz;
    const float *w;
    uint8_t *code;
    const int *start, *count;
    int *hist;
    const float *f[6];          /* ex, ey, ez, bx, by, bz */
    float *tiles;
    double *partial;
    const int *x0, *y0;
    int ncx, stride, off, nx, ny;
    int tszp, cstride, copies, tile_stride;
    float qdt2m, rdx, rdy, jxq, jyq, q;
    float scale;                /* fixed-point scale of the current tile */
    float ext[6];               /* external E, B */
} kpart;

/* The cluster's tile: cells [x0-1, x1+2) x [y0-1, y1+2). */
typedef struct {
    int xlo, xhi, ylo, yhi, i0, j0, tw, tsz;
} ctile;

__device__ __forceinline__ ctile tile_of(const int *x0, const int *y0, int ncx, int c)
{
    ctile t;
    int cx = c % ncx, cy = c / ncx;
    t.xlo = x0[cx];
    t.xhi = x0[cx + 1];
    t.ylo = y0[cy];
    t.yhi = y0[cy + 1];
    t.i0 = t.xlo - 1;
    t.j0 = t.ylo - 1;
    t.tw = t.xhi - t.xlo + 3;
    t.tsz = t.tw * (t.yhi - t.ylo + 3);
    return t;
}

/* Sum the private fixed-point copies of ncomp tile components (exact) into the block's slot
 * of the buffer, as floats (one rounding). */
__device__ __forceinline__ void tile_store(const long long *sj, int copies, int cstride,
                                           int tszp, int ncomp, int tsz, float scale,
                                           float *dst)
{
    const double inv = 1.0 / (double)scale; /* a power of two: exact */
    for (int idx = threadIdx.x; idx < ncomp * tsz; idx += blockDim.x) {
        int comp = idx / tsz, r = idx - comp * tsz;
        long long v = sj[comp * tszp + r];
        for (int cp = 1; cp < copies; cp++)
            v += sj[cp * cstride + comp * tszp + r];
        dst[idx] = (float)((double)v * inv);
    }
}

/* A value the compiler must treat as unknown (an empty asm that may change it). */
__device__ __forceinline__ float opaque(float v)
{
    asm volatile("" : "+f"(v));
    return v;
}

/* E and B at offset (x, y) of tile cell k: particle.h's gather_component for each Yee
 * component, exactly as gather_eb, but with the offsets passed through opaque() per
 * component. nvcc 13.0 (-O3, sm_90) miscompiles gather_eb's six inlined gathers: it derives
 * the Ez address from the Ex address with the cell shift of the x < 0.5 half-cell select
 * taken with the wrong sign (PTX: xor.pred of the two selects, then -4 bytes instead of +4),
 * so Ez was read one cell to the left for x < 0.5 (and worse in the fused kernel). Keeping
 * each component's offsets opaque stops that rewrite. See cuda/NOTES.md. */
__device__ __forceinline__ void gather_tile(const float *sf, int tszp, int k, int tw, float x,
                                            float y, float e[3], float b[3])
{
    e[0] = gather_component(sf, k, tw, opaque(x), opaque(y), 1, 0);
    e[1] = gather_component(sf + tszp, k, tw, opaque(x), opaque(y), 0, 1);
    e[2] = gather_component(sf + 2 * tszp, k, tw, opaque(x), opaque(y), 0, 0);
    b[0] = gather_component(sf + 3 * tszp, k, tw, opaque(x), opaque(y), 0, 1);
    b[1] = gather_component(sf + 4 * tszp, k, tw, opaque(x), opaque(y), 1, 0);
    b[2] = gather_component(sf + 5 * tszp, k, tw, opaque(x), opaque(y), 1, 1);
}

/* The 8 migration codes of movers, in histogram-bin order of their (dx, dy). */
__constant__ unsigned char mover_code[8] = {10, 8, 9, 2, 1, 6, 4, 5};
__constant__ unsigned char mover_bin[8] = {0, 1, 2, 3, 5, 6, 7, 8};

template <int MODE, bool KE>
__global__ void __launch_bounds__(GPU_THREADS, 3) k_particles(kpart a)
{
    extern __shared__ float sm[];
    __shared__ int shist[9];
    __shared__ double sred[GPU_THREADS / 32];
    const int c = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
    const ctile T = tile_of(a.x0, a.y0, a.ncx, c);
    float *sf = sm;
    long long *sj = (long long *)(sm + ((MODE & M_PUSH) ? 6 * a.tszp : 0));
    if (MODE & M_PUSH)
        for (int idx = tid; idx < T.tsz; idx += GPU_THREADS) {
            int r = idx / T.tw;
            int gk = a.off + T.i0 + (idx - r * T.tw) + (T.j0 + r) * a.stride;
#pragma unroll
            for (int comp = 0; comp < 6; comp++)
                sf[comp * a.tszp + idx] = a.f[comp][gk];
        }
    if (MODE & M_MOVE) {
        for (int idx = tid; idx < a.copies * a.cstride; idx += GPU_THREADS)
            sj[idx] = 0;
        if (tid < 9)
            shist[tid] = 0;
    }
    __syncthreads();

    const int n = a.count[c], s0 = a.start[c];
    const int trips = (n + GPU_VEC * GPU_THREADS - 1) / (GPU_VEC * GPU_THREADS);
    long long *jc = sj + (lane % a.copies) * a.cstride;
    int mv[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* movers per code, the same in all lanes */
    double ke = 0.0;
    for (int t = 0; t < trips; t++) {
        const int base = t * GPU_VEC * GPU_THREADS + GPU_VEC * tid;
        const int nv = min(GPU_VEC, n - base), p = s0 + base;
        uint4 c4 = make_uint4(0, 0, 0, 0);
        float4 x4 = make_float4(0, 0, 0, 0), y4 = x4, ux4 = x4, uy4 = x4, uz4 = x4, w4 = x4;
        if (nv > 0) { /* segments start on 32-slot multiples; slots up to 4*ceil(n/4) exist */
            c4 = *(const uint4 *)(a.cell + p);
            x4 = *(const float4 *)(a.x + p);
            y4 = *(const float4 *)(a.y + p);
            ux4 = *(const float4 *)(a.ux + p);
            uy4 = *(const float4 *)(a.uy + p);
            uz4 = *(const float4 *)(a.uz + p);
            if (KE || (MODE & M_MOVE))
                w4 = *(const float4 *)(a.w + p);
        }
        uint32_t cl[4] = {c4.x, c4.y, c4.z, c4.w};
        float xs[4] = {x4.x, x4.y, x4.z, x4.w}, ys[4] = {y4.x, y4.y, y4.z, y4.w};
        float us[3][4] = {{ux4.x, ux4.y, ux4.z, ux4.w},
                          {uy4.x, uy4.y, uy4.z, uy4.w},
                          {uz4.x, uz4.y, uz4.z, uz4.w}};
        float ws[4] = {w4.x, w4.y, w4.z, w4.w};
        unsigned codes[4] = {0, 0, 0, 0};
#pragma unroll
        for (int q = 0; q < GPU_VEC; q++) {
            if (q >= nv)
                continue;
            int i = (int)(cl[q] & 0xffffu), j = (int)(cl[q] >> 16);
            const int k = (i - T.i0) + (j - T.j0) * T.tw;
            float u[3] = {us[0][q], us[1][q], us[2][q]};
            if (MODE & M_PUSH) {
                float e[3], b[3];
                gather_tile(sf, a.tszp, k, T.tw, xs[q], ys[q], e, b);
                for (int d = 0; d < 3; d++) {
                    e[d] += a.ext[d];
                    b[d] += a.ext[3 + d];
                }
                float u0[3] = {u[0], u[1], u[2]};
                boris_push(u, e, b, a.qdt2m);
                if (KE) {
                    float gm = lorentz_gamma(0.5f * (u0[0] + u[0]), 0.5f * (u0[1] + u[1]),
                                             0.5f * (u0[2] + u[2]));
                    ke += (double)ws[q] * (gm - 1.0f);
                }
                us[0][q] = u[0];
                us[1][q] = u[1];
                us[2][q] = u[2];
            }
            if (MODE & M_MOVE) {
                float ig = 1.0f / lorentz_gamma(u[0], u[1], u[2]);
                float x0 = xs[q], y0 = ys[q];
                float x1 = x0 + u[0] * ig * a.rdx, y1 = y0 + u[1] * ig * a.rdy;
                float qw = a.q * ws[q];
                /* Kong's three pieces (particle.h); as the CPU backend, add the first always,
                 * the middle one only after two edge crossings and the last only after a cell
                 * change: the others have zero weights, and a cold or warm plasma then needs
                 * 8 shared-memory atomics per particle instead of 16 */
                int o[3];
                float w[24];
                int mid = move_pieces(x0, y0, x1, y1, qw * a.jxq, qw * a.jyq, qw * u[2] * ig,
                                      T.tw, o, w, 1);
                int di = offset_wrap(&x1), dj = offset_wrap(&y1);
                long long *jy = jc + a.tszp, *jz = jc + 2 * a.tszp;
                deposit_add_fixed(jc, jy, jz, k + o[0], T.tw, w, 1, a.scale);
                if (mid)
                    deposit_add_fixed(jc, jy, jz, k + o[1], T.tw, w + 8, 1, a.scale);
                if (di | dj)
                    deposit_add_fixed(jc, jy, jz, k + o[2], T.tw, w + 16, 1, a.scale);
                i += di;
                j += dj;
                int dcx = i < T.xlo ? -1 : (i >= T.xhi ? 1 : 0);
                int dcy = j < T.ylo ? -1 : (j >= T.yhi ? 1 : 0);
                i = i < 0 ? i + a.nx : (i >= a.nx ? i - a.nx : i);
                j = j < 0 ? j + a.ny : (j >= a.ny ? j - a.ny : j);
                cl[q] = (uint32_t)i | ((uint32_t)j << 16);
                xs[q] = x1;
                ys[q] = y1;
                codes[q] = mig_code(dcx, dcy);
            }
        }
        if (nv == GPU_VEC) {
            if (MODE & M_PUSH) {
                *(float4 *)(a.ux + p) = make_float4(us[0][0], us[0][1], us[0][2], us[0][3]);
                *(float4 *)(a.uy + p) = make_float4(us[1][0], us[1][1], us[1][2], us[1][3]);
                *(float4 *)(a.uz + p) = make_float4(us[2][0], us[2][1], us[2][2], us[2][3]);
            }
            if (MODE & M_MOVE) {
                *(uint4 *)(a.cell + p) = make_uint4(cl[0], cl[1], cl[2], cl[3]);
                *(float4 *)(a.x + p) = make_float4(xs[0], xs[1], xs[2], xs[3]);
                *(float4 *)(a.y + p) = make_float4(ys[0], ys[1], ys[2], ys[3]);
                *(uchar4 *)(a.code + p) = make_uchar4(codes[0], codes[1], codes[2], codes[3]);
            }
        } else {
#pragma unroll
            for (int q = 0; q < GPU_VEC; q++) {
                if (q >= nv)
                    continue;
                if (MODE & M_PUSH) {
                    a.ux[p + q] = us[0][q];
                    a.uy[p + q] = us[1][q];
                    a.uz[p + q] = us[2][q];
                }
                if (MODE & M_MOVE) {
                    a.cell[p + q] = cl[q];
                    a.x[p + q] = xs[q];
                    a.y[p + q] = ys[q];
                    a.code[p + q] = (uint8_t)codes[q];
                }
            }
        }
        if (MODE & M_MOVE) {
            /* warp votes count the movers; a warp whose particles all stay skips them */
            if (__ballot_sync(FULL, (codes[0] | codes[1] | codes[2] | codes[3]) != 0u)) {
#pragma unroll
                for (int q = 0; q < GPU_VEC; q++)
#pragma unroll
                    for (int b = 0; b < 8; b++)
                        mv[b] += __popc(__ballot_sync(FULL, codes[q] == mover_code[b]));
            }
        }
    }

    if (MODE & M_MOVE) {
        if (lane == 0)
            for (int b = 0; b < 8; b++)
                if (mv[b])
                    atomicAdd(&shist[mover_bin[b]], mv[b]);
    }
    if (KE) {
        for (int o = 16; o > 0; o >>= 1)
            ke += __shfl_down_sync(FULL, ke, o);
        if (lane == 0)
            sred[tid >> 5] = ke;
    }
    __syncthreads();
    if (KE && tid == 0) {
        double s = 0.0;
        for (int w = 0; w < GPU_THREADS / 32; w++)
            s += sred[w];
        a.partial[c] = s;
    }
    if (MODE & M_MOVE) {
        if (tid < 9) {
            int moved = 0;
            for (int b = 0; b < 9; b++)
                moved += b == 4 ? 0 : shist[b];
            a.hist[9 * c + tid] = tid == 4 ? n - moved : shist[tid];
        }
        tile_store(sj, a.copies, a.cstride, a.tszp, 3, T.tsz, a.scale,
                   a.tiles + (size_t)c * a.tile_stride);
    }
}

/* Charge of one species at the current positions into the tile buffer. */
typedef struct {
    const uint32_t *cell;
    const float *x, *y, *w;
    const int *start, *count;
    float *tiles;
    const int *x0, *y0;
    int ncx, tszp, cstride, copies, tile_stride;
    float q, scale;
} krho;

__global__ void __launch_bounds__(GPU_THREADS) k_rho(krho a)
{
    extern __shared__ float sm[];
    long long *sr = (long long *)sm;
    const int c = blockIdx.x, tid = threadIdx.x;
    const ctile T = tile_of(a.x0, a.y0, a.ncx, c);
    for (int idx = tid; idx < a.copies * a.cstride; idx += GPU_THREADS)
        sr[idx] = 0;
    __syncthreads();
    long long *rc = sr + ((tid & 31) % a.copies) * a.cstride;
    const int n = a.count[c], s0 = a.start[c];
    for (int base = GPU_VEC * tid; base < n; base += GPU_VEC * GPU_THREADS) {
        const int nv = min(GPU_VEC, n - base), p = s0 + base;
        uint4 c4 = *(const uint4 *)(a.cell + p);
        float4 x4 = *(const float4 *)(a.x + p), y4 = *(const float4 *)(a.y + p),
               w4 = *(const float4 *)(a.w + p);
        uint32_t cl[4] = {c4.x, c4.y, c4.z, c4.w};
        float xs[4] = {x4.x, x4.y, x4.z, x4.w}, ys[4] = {y4.x, y4.y, y4.z, y4.w};
        float ws[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int q = 0; q < GPU_VEC; q++) {
            if (q >= nv)
                continue;
            int k = ((int)(cl[q] & 0xffffu) - T.i0) + ((int)(cl[q] >> 16) - T.j0) * T.tw;
            deposit_charge_fixed(rc, k, T.tw, xs[q], ys[q], a.q * ws[q], a.scale);
        }
    }
    __syncthreads();
    tile_store(sr, a.copies, a.cstride, a.tszp, 1, T.tsz, a.scale,
               a.tiles + (size_t)c * a.tile_stride);
}

/* One colour pass: the clusters (2m + (colour & 1), 2n + (colour >> 1)) add their tiles to
 * the mesh; tiles of one colour never overlap (clusters are at least 3 cells wide). */
__global__ void k_tile_add(int colour, int ncomp, const float *tiles, int tile_stride,
                           float *d0, float *d1, float *d2, const int *x0, const int *y0,
                           int ncx, int stride, int off)
{
    const int half = ncx / 2, b = blockIdx.x;
    const int cx = 2 * (b % half) + (colour & 1), cy = 2 * (b / half) + (colour >> 1);
    const int c = cx + cy * ncx;
    const ctile T = tile_of(x0, y0, ncx, c);
    const float *t = tiles + (size_t)c * tile_stride;
    for (int idx = threadIdx.x; idx < T.tsz; idx += blockDim.x) {
        int r = idx / T.tw;
        int gk = off + T.i0 + (idx - r * T.tw) + (T.j0 + r) * stride;
        d0[gk] += t[idx];
        if (ncomp > 1) {
            d1[gk] += t[T.tsz + idx];
            d2[gk] += t[2 * T.tsz + idx];
        }
    }
}

static void colour_passes(gpu_state *g, int ncomp, float *d0, float *d1, float *d2)
{
    const unsigned blocks = (unsigned)((g->ncx / 2) * (g->ncy / 2));
    for (int colour = 0; colour < 4; colour++) {
        k_tile_add<<<blocks, 128, 0, g->stream>>>(colour, ncomp, g->tiles, 3 * g->tsz_max, d0,
                                                  d1, d2, g->x0, g->y0, g->ncx, g->stride,
                                                  g->off);
        GPU_LAUNCHED(g, "k_tile_add");
    }
}

template <int MODE, bool KE> static void set_smem(size_t bytes)
{
    GPU_CK(cudaFuncSetAttribute(k_particles<MODE, KE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)bytes));
}

/* The fixed-point scale of the current and charge tiles, from the deck (the same after a
 * restart): the largest contribution one particle makes to a tile entry in a step is below
 * max |q| w_max times max(1, dx/dt, dy/dt) (Jx, Jy: q w dx/dt times a move below one cell;
 * Jz: q w |v_z| < q w; rho: q w). */
static float deposit_scale(const pic_state *st)
{
    const emf *f = st->f;
    double r = fmax(1.0, fmax(f->dx / f->dt, f->dy / f->dt)), bound = 0.0;
    for (int s = 0; s < st->nsp; s++)
        bound = fmax(bound, fabs((double)st->sp[s].q) * st->sp[s].wbound * r);
    return fixed_scale(bound);
}

void gpu_particles_setup(gpu_state *g, const pic_state *st)
{
    /* the move kernel's tile copies (64-bit entries) within 64 KB: 3 blocks on a 228 KB
     * multiprocessor */
    const size_t budget = 64 * 1024;
    const size_t limit = g->smem_optin - 2048;
    g->tszp = (g->tsz_max + 3) / 4 * 4;
    for (g->copies = GPU_MAX_COPIES; g->copies >= 1; g->copies /= 2) {
        g->cstride = (3 * g->tszp + 31) / 32 * 32 + (g->copies > 1 ? 32 / g->copies : 0);
        g->smem_move = (size_t)g->copies * g->cstride * sizeof(long long);
        g->smem_push = (size_t)6 * g->tszp * sizeof(float);
        g->smem_part = g->smem_push + g->smem_move;
        if (g->smem_move <= budget || g->copies == 1)
            break;
    }
    g->smem_rho = g->smem_move; /* 1 component fits in the room of 3 */
    g->scale = deposit_scale(st);
    if (g->smem_part > limit) {
        empic_report(NULL, 0, "grid.cluster: clusters of up to %dx%d cells need %zu bytes "
                     "of shared memory per block, the GPU allows %zu; use smaller clusters",
                     g->wmax, g->hmax, g->smem_part, limit);
        empic_exit(1);
    }
    set_smem<M_BOTH, false>(g->smem_part);
    set_smem<M_BOTH, true>(g->smem_part);
    set_smem<M_PUSH, false>(g->smem_push);
    set_smem<M_PUSH, true>(g->smem_push);
    set_smem<M_MOVE, false>(g->smem_move);
    GPU_CK(cudaFuncSetAttribute(k_rho, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)g->smem_rho));
}

template <int MODE, bool KE> static void launch(gpu_state *g, const kpart &a, size_t smem)
{
    k_particles<MODE, KE><<<g->ncl, GPU_THREADS, smem, g->stream>>>(a);
    GPU_LAUNCHED(g, MODE == M_BOTH ? "k_particles (push, move, deposit)"
                    : MODE == M_PUSH ? "k_particles (push)" : "k_particles (move, deposit)");
}

void gpu_particles(void *ctx, pic_state *st, int want_ke, double *kinetic)
{
    gpu_state *g = (gpu_state *)ctx;
    const emf *f = st->f;
    gpu_debug(g, st, DBG_BEFORE_MOVE);
    GPU_CK(cudaMemsetAsync(g->j[0], 0, 3 * g->size * sizeof(float), g->stream));
    for (int s = 0; s < g->nsp; s++) {
        gpu_species *d = &g->sp[s];
        if (kinetic)
            kinetic[s] = 0.0;
        if (!d->mobile)
            continue;
        kpart a;
        a.cell = d->cell;
        a.x = d->x;
        a.y = d->y;
        a.ux = d->ux;
        a.uy = d->uy;
        a.uz = d->uz;
        a.w = d->w;
        a.code = d->code;
        a.start = d->start;
        a.count = d->count;
        a.hist = d->hist;
        for (int k = 0; k < 3; k++) {
            a.f[k] = g->e[k];
            a.f[3 + k] = g->b[k];
            a.ext[k] = st->ext_e[k];
            a.ext[3 + k] = st->ext_b[k];
        }
        a.tiles = g->tiles;
        a.partial = g->partial;
        a.x0 = g->x0;
        a.y0 = g->y0;
        a.ncx = g->ncx;
        a.stride = g->stride;
        a.off = g->off;
        a.nx = g->nx;
        a.ny = g->ny;
        a.tszp = g->tszp;
        a.cstride = g->cstride;
        a.copies = g->copies;
        a.tile_stride = 3 * g->tsz_max;
        /* the same float expressions as push_cpu / move_cluster */
        a.qdt2m = (float)(0.5 * f->dt) * d->qm;
        a.rdx = (float)(f->dt / f->dx);
        a.rdy = (float)(f->dt / f->dy);
        a.jxq = (float)(f->dx / f->dt);
        a.jyq = (float)(f->dy / f->dt);
        a.q = d->q;
        a.scale = g->scale;
        int t = gpu_tic(g, st);
        if (g->split) {
            if (want_ke)
                launch<M_PUSH, true>(g, a, g->smem_push);
            else
                launch<M_PUSH, false>(g, a, g->smem_push);
            gpu_toc(g, t, PH_PUSH);
            t = gpu_tic(g, st);
            launch<M_MOVE, false>(g, a, g->smem_move);
        } else if (want_ke) {
            launch<M_BOTH, true>(g, a, g->smem_part);
        } else {
            launch<M_BOTH, false>(g, a, g->smem_part);
        }
        if (!g->split) { /* fused kernel: counted as push, the write-back as deposit */
            gpu_toc(g, t, PH_PUSH);
            t = gpu_tic(g, st);
        }
        gpu_walls(g, st, s); /* edge clusters of non-periodic sides only */
        colour_passes(g, 3, g->j[0], g->j[1], g->j[2]);
        gpu_toc(g, t, PH_DEPOSIT);
        if (want_ke) {
            GPU_CK(cudaMemcpyAsync(g->h_partial, g->partial, (size_t)g->ncl * sizeof(double),
                                   cudaMemcpyDeviceToHost, g->stream));
            gpu_harvest(g, st);
            double sum = 0.0;
            for (int c = 0; c < g->ncl; c++)
                sum += g->h_partial[c];
            kinetic[s] = sum * d->m * f->dx * f->dy;
        }
    }
    gpu_debug(g, st, DBG_AFTER_MOVE);
    gpu_sort_prepare(g, st);
}

void gpu_rho_deposit(gpu_state *g, int s, float *dst)
{
    for (int k = 0; k < g->nsp; k++) {
        if (s >= 0 && k != s)
            continue;
        const gpu_species *d = &g->sp[k];
        krho a = {d->cell,  d->x,  d->y,  d->w,   d->start,  d->count,  g->tiles, g->x0,
                  g->y0,    g->ncx, g->tszp, g->cstride, g->copies, 3 * g->tsz_max, d->q,
                  g->scale};
        k_rho<<<g->ncl, GPU_THREADS, g->smem_rho, g->stream>>>(a);
        GPU_LAUNCHED(g, "k_rho");
        colour_passes(g, 1, dst, NULL, NULL);
    }
}
