/* cpu_deposit.c - move and current deposit of one cluster (cpu_deposit.h).
 *
 * Chunks of DCHUNK particles. A vectorised loop moves them, splits each move into Kong's
 * three pieces with their Villasenor-Buneman weights (particle.h's move_pieces, structure of
 * arrays), writes cells, migration codes and the histogram, and notes, per particle, which
 * pieces to add and where. The scatter then adds the pieces in particle order, piece order,
 * each piece's eight words as particle.h's deposit_add does:
 * - scalar processors: deposit_add into the planar tile;
 * - AVX-512 / AVX2: into a node tile holding (Jx, Jy, Jz, 0) per node, so that the eight
 *   words of a piece lie in two rows of a block of 4 x 3 nodes, which covers every piece of
 *   one move (a move changes each cell index by at most one). When the chunk's particles
 *   share cells (cold or warm plasma, still in load order), the block's rows live in vector
 *   registers while consecutive particles share the block and are written back when it
 *   changes; each weight goes to its word by a masked (AVX-512) or zero-filled (AVX2) vector
 *   add: a tile word never holds -0 (it starts at +0, and a float sum is -0 only when both
 *   terms are), so adding +0 leaves it unchanged. Chunks whose particles are scattered over
 *   the cluster (hot plasma after a few steps) reload the block for nearly every particle,
 *   where eight scalar adds per piece measured faster: those chunks take them (scatter_nodes).
 * Either way each tile word receives the same additions in the same order: bitwise the
 * current of the scalar path (tests/test_deposit.c). The node tile is copied to the planar
 * tile at the end. */
#include "cpu_deposit.h"
#include "empic.h"
#include "particle.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DEPOSIT_X86 1
#else
#define DEPOSIT_X86 0
#endif

#define DCHUNK 64

/* One chunk's moves. Piece m of particle r lies in cell (bx + dx, by + dy) of the block whose
 * origin node (bx, by) is at blk[r] in the node tile; pm[r] bits 3m, 3m + 1, 3m + 2: the piece
 * is added, dx, dy; bit 9: some added piece has dy = 1 (the block needs its third row). */
typedef struct {
    _Alignas(64) float ww[3][8][DCHUNK]; /* move_pieces' weights (structure of arrays) */
    _Alignas(64) float wt[DCHUNK][3][8]; /* the same, per particle (SIMD scatters) */
    int kk[3][DCHUNK];                   /* move_pieces' cell shifts, sx + 4 sy */
    int blk[DCHUNK];
    unsigned pm[DCHUNK];
} chunk_work;

/* Move particles [base, base + n): positions, cells, migration codes, histogram, pieces. */
static void move_chunk(species *s, int base, int n, const deposit_frame *fr, chunk_work *cw,
                       int hist[9])
{
    const move_step *ms = &fr->ms;
    const cluster_tile *T = &fr->T;
    const int nx = fr->nx, ny = fr->ny, i0 = T->i0, j0 = T->j0, tw = T->w;
    uint32_t *restrict cell = s->cell;
    float *restrict xs = s->x, *restrict ys = s->y;
    const float *restrict pux = s->ux, *restrict puy = s->uy, *restrict puz = s->uz,
                          *restrict pw = s->w;
    uint8_t *restrict code = s->code;
    /* an ionizing species: the charge state scales each particle's current */
    const uint8_t *restrict pz = s->z;
    const int charged = pz != NULL;
    int h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0, h7 = 0, h8 = 0;
#pragma omp simd reduction(+ : h0, h1, h2, h3, h4, h5, h6, h7, h8)
    for (int r = 0; r < n; r++) {
        const int p = base + r;
        float x0 = xs[p], y0 = ys[p], x = x0, y = y0;
        /* particle_move's end point (kept for the block origin below) and current factors */
        const float qw = charged ? pw[p] * (float)pz[p] : pw[p];
        const move_endpoint e = move_end(ms, pux[p], puy[p], puz[p], qw, x0, y0);
        const float x1 = e.x1, y1 = e.y1;
        uint32_t c0 = cell[p], c1 = c0;
        int dcx, dcy;
        unsigned used = move_to(T, nx, ny, 4, x1, y1, e.cx, e.cy, e.cz, &c1, &x, &y, &dcx, &dcy,
                                &cw->kk[0][r], &cw->ww[0][0][r], DCHUNK);
        /* the block: the start cell and the cell before it along each axis moved backwards */
        int ox = x1 < x0 ? -1 : 0, oy = y1 < y0 ? -1 : 0;
        unsigned pm = 0u, tall = 0u;
        EMPIC_UNROLL
        for (int m = 0; m < 3; m++) {
            int o = cw->kk[m][r] + 5; /* (sx + 1) + 4 (sy + 1) */
            unsigned dx = (unsigned)((o & 3) - 1 - ox) & 1u, dy = (unsigned)((o >> 2) - 1 - oy) & 1u;
            unsigned um = used >> m & 1u;
            pm |= (um | dx << 1 | dy << 2) << (3 * m);
            tall |= um & dy;
        }
        cw->pm[r] = pm | tall << 9;
        cw->blk[r] = 4 * ((cell_i(c0) + ox - i0) + (cell_j(c0) + oy - j0) * tw);
        cell[p] = c1;
        xs[p] = x;
        ys[p] = y;
        int mc = mig_bin(dcx, dcy);
        code[p] = (uint8_t)mig_code_of_bin(mc);
        h0 += mc == 0;
        h1 += mc == 1;
        h2 += mc == 2;
        h3 += mc == 3;
        h4 += mc == 4;
        h5 += mc == 5;
        h6 += mc == 6;
        h7 += mc == 7;
        h8 += mc == 8;
    }
    hist[0] += h0, hist[1] += h1, hist[2] += h2, hist[3] += h3, hist[4] += h4;
    hist[5] += h5, hist[6] += h6, hist[7] += h7, hist[8] += h8;
}

/* deposit_add's order: per particle, per added piece, its eight words. */
static void scatter_scalar(const chunk_work *cw, int n, int tw, float *jx, float *jy, float *jz)
{
    for (int r = 0; r < n; r++)
        for (int m = 0; m < 3; m++) {
            unsigned b = cw->pm[r] >> (3 * m);
            if (b & 1u)
                deposit_add(jx, jy, jz, cw->blk[r] / 4 + (int)(b >> 1 & 1u) + (int)(b >> 2 & 1u) * tw,
                            tw, &cw->ww[m][0][r], DCHUNK);
        }
}

/* scatter_scalar into the node tile: deposit_add's words, four floats per node. */
static void scatter_nodes(const chunk_work *cw, int n, int tw, float *nt)
{
    const int row = 4 * tw, D = DCHUNK;
    for (int r = 0; r < n; r++)
        for (int m = 0; m < 3; m++) {
            unsigned b = cw->pm[r] >> (3 * m);
            if (!(b & 1u))
                continue;
            float *t = nt + cw->blk[r] + 4 * (int)(b >> 1 & 1u) + (int)(b >> 2 & 1u) * row;
            const float *w = &cw->ww[m][0][r];
            t[0] += w[0];               /* Jx(k) */
            t[row] += w[D];             /* Jx(k+s) */
            t[1] += w[2 * D];           /* Jy(k) */
            t[5] += w[3 * D];           /* Jy(k+1) */
            t[2] += w[4 * D];           /* Jz(k) */
            t[6] += w[5 * D];           /* Jz(k+1) */
            t[row + 2] += w[6 * D];     /* Jz(k+s) */
            t[row + 6] += w[7 * D];     /* Jz(k+s+1) */
        }
}

/* Whether the chunk's particles share blocks enough for the block scatter: it pays when the
 * block's rows stay in registers over several particles (cold or warm plasma, still in load
 * order); for particles in scattered cells the scalar adds are faster. */
static int coherent(const chunk_work *cw, int n)
{
    int changes = 0;
    for (int r = 1; r < n; r++)
        changes += cw->blk[r] != cw->blk[r - 1];
    return 4 * changes <= n;
}

#if DEPOSIT_X86
/* Weights of 8 particles (rows src + e * DCHUNK, e = 0..7) to 8 per-particle rows dst + 24 r. */
__attribute__((target("avx"), always_inline)) static inline void transpose8(const float *src,
                                                                            float *dst)
{
    __m256 a[8], b[8];
    for (int e = 0; e < 8; e++)
        a[e] = _mm256_load_ps(src + e * DCHUNK);
    for (int e = 0; e < 8; e += 2) {
        b[e] = _mm256_unpacklo_ps(a[e], a[e + 1]);
        b[e + 1] = _mm256_unpackhi_ps(a[e], a[e + 1]);
    }
    for (int e = 0; e < 8; e += 4) {
        a[e] = _mm256_shuffle_ps(b[e], b[e + 2], _MM_SHUFFLE(1, 0, 1, 0));
        a[e + 1] = _mm256_shuffle_ps(b[e], b[e + 2], _MM_SHUFFLE(3, 2, 3, 2));
        a[e + 2] = _mm256_shuffle_ps(b[e + 1], b[e + 3], _MM_SHUFFLE(1, 0, 1, 0));
        a[e + 3] = _mm256_shuffle_ps(b[e + 1], b[e + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int r = 0; r < 4; r++) {
        _mm256_store_ps(dst + 24 * r, _mm256_permute2f128_ps(a[r], a[r + 4], 0x20));
        _mm256_store_ps(dst + 24 * (r + 4), _mm256_permute2f128_ps(a[r], a[r + 4], 0x31));
    }
}

/* cw->wt from cw->ww for the pieces that some particle of each group of 8 adds. */
__attribute__((target("avx"))) static void weights_per_particle(chunk_work *cw, int n)
{
    int r = 0;
    for (; r + 8 <= n; r += 8) {
        unsigned any = 0;
        for (int l = 0; l < 8; l++)
            any |= cw->pm[r + l];
        for (int m = 0; m < 3; m++)
            if (any >> (3 * m) & 1u)
                transpose8(&cw->ww[m][0][r], &cw->wt[r][m][0]);
    }
    for (; r < n; r++)
        for (int m = 0; m < 3; m++)
            for (int e = 0; e < 8; e++)
                cw->wt[r][m][e] = cw->ww[m][e][r];
}

/* Lanes of a piece's lower-row words Jx(k), Jy(k), Jz(k), Jy(k+1), Jz(k+1) (weights 0, 2, 4,
 * 3, 5) and upper-row words Jx(k+s), Jz(k+s), Jz(k+s+1) (weights 1, 6, 7) in a row of four
 * nodes (Jx, Jy, Jz, 0), for a piece in block column dx = 0 and 1. */
static const int32_t lane_lo[2][16] = {{0, 2, 4, 0, 0, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                       {0, 0, 0, 0, 0, 2, 4, 0, 0, 3, 5, 0, 0, 0, 0, 0}};
static const int32_t lane_up[2][16] = {{1, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                       {0, 0, 0, 0, 1, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0}};
#define MASK_LO 0x67u /* lanes 0, 1, 2, 5, 6 */
#define MASK_UP 0x45u /* lanes 0, 2, 6 */

__attribute__((target("avx512f"))) static void scatter_avx512(const chunk_work *cw, int n,
                                                               float *nt, int tw)
{
    const int row = 4 * tw;
    const __m512i il[2] = {_mm512_loadu_si512(lane_lo[0]), _mm512_loadu_si512(lane_lo[1])};
    const __m512i iu[2] = {_mm512_loadu_si512(lane_up[0]), _mm512_loadu_si512(lane_up[1])};
    __m512 r0 = _mm512_setzero_ps(), r1 = r0, r2 = r0;
    float *bp = nt;
    int open = -1, three = 0;
    for (int r = 0; r < n; r++) {
        const unsigned c = cw->pm[r];
        const int key = 2 * cw->blk[r] + (int)(c >> 9);
        if (key != open) {
            if (open >= 0) {
                _mm512_storeu_ps(bp, r0);
                _mm512_storeu_ps(bp + row, r1);
                if (three)
                    _mm512_storeu_ps(bp + 2 * row, r2);
            }
            open = key;
            three = (int)(c >> 9);
            bp = nt + cw->blk[r];
            r0 = _mm512_loadu_ps(bp);
            r1 = _mm512_loadu_ps(bp + row);
            if (three)
                r2 = _mm512_loadu_ps(bp + 2 * row);
        }
        /* the added pieces, in order; one masked add per row and piece */
        for (unsigned left = c & 0x49u; left; left &= left - 1) {
            const int m = __builtin_ctz(left) / 3;
            const unsigned b = c >> (3 * m), dx = b >> 1 & 1u, dy = b >> 2 & 1u;
            const __m512 w = _mm512_castps256_ps512(_mm256_load_ps(cw->wt[r][m]));
            const __m512 pl = _mm512_permutexvar_ps(il[dx], w), pu = _mm512_permutexvar_ps(iu[dx], w);
            const __mmask16 kl = (__mmask16)(MASK_LO << 4 * dx), ku = (__mmask16)(MASK_UP << 4 * dx);
            if (dy) {
                r1 = _mm512_mask_add_ps(r1, kl, r1, pl);
                r2 = _mm512_mask_add_ps(r2, ku, r2, pu);
            } else {
                r0 = _mm512_mask_add_ps(r0, kl, r0, pl);
                r1 = _mm512_mask_add_ps(r1, ku, r1, pu);
            }
        }
    }
    if (open >= 0) {
        _mm512_storeu_ps(bp, r0);
        _mm512_storeu_ps(bp + row, r1);
        if (three)
            _mm512_storeu_ps(bp + 2 * row, r2);
    }
}

/* One half (8 lanes, h = 0 or 1) of lane_lo / lane_up with the lanes outside the mask zeroed. */
__attribute__((target("avx2"), always_inline)) static inline __m256
half_row(__m256 w, const int32_t *lane, unsigned mask, int h)
{
    const __m256i k = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    __m256i keep = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(mask >> 8 * h)), k), k);
    __m256 v = _mm256_permutevar8x32_ps(w, _mm256_loadu_si256((const __m256i *)(lane + 8 * h)));
    return _mm256_and_ps(v, _mm256_castsi256_ps(keep));
}

/* The rows of a block as two 8-lane halves (nodes 0-1, 2-3). */
typedef struct {
    __m256 a, b;
} row2;

__attribute__((target("avx2"), always_inline)) static inline row2 row_load(const float *p)
{
    return (row2){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
}

__attribute__((target("avx2"), always_inline)) static inline void row_store(float *p, row2 v)
{
    _mm256_storeu_ps(p, v.a);
    _mm256_storeu_ps(p + 8, v.b);
}

/* v + the lanes of w selected by lane / mask (+0 elsewhere) */
__attribute__((target("avx2"), always_inline)) static inline row2
row_add(row2 v, __m256 w, const int32_t *lane, unsigned mask)
{
    return (row2){_mm256_add_ps(v.a, half_row(w, lane, mask, 0)),
                  _mm256_add_ps(v.b, half_row(w, lane, mask, 1))};
}

__attribute__((target("avx2"))) static void scatter_avx2(const chunk_work *cw, int n, float *nt,
                                                         int tw)
{
    const int row = 4 * tw;
    row2 r0 = {_mm256_setzero_ps(), _mm256_setzero_ps()}, r1 = r0, r2 = r0;
    float *bp = nt;
    int open = -1, three = 0;
    for (int r = 0; r < n; r++) {
        const unsigned c = cw->pm[r];
        const int key = 2 * cw->blk[r] + (int)(c >> 9);
        if (key != open) {
            if (open >= 0) {
                row_store(bp, r0);
                row_store(bp + row, r1);
                if (three)
                    row_store(bp + 2 * row, r2);
            }
            open = key;
            three = (int)(c >> 9);
            bp = nt + cw->blk[r];
            r0 = row_load(bp);
            r1 = row_load(bp + row);
            if (three)
                r2 = row_load(bp + 2 * row);
        }
        for (unsigned left = c & 0x49u; left; left &= left - 1) {
            const int m = __builtin_ctz(left) / 3;
            const unsigned b = c >> (3 * m), dx = b >> 1 & 1u, dy = b >> 2 & 1u;
            const __m256 w = _mm256_load_ps(cw->wt[r][m]);
            const unsigned kl = MASK_LO << 4 * dx, ku = MASK_UP << 4 * dx;
            if (dy) {
                r1 = row_add(r1, w, lane_lo[dx], kl);
                r2 = row_add(r2, w, lane_up[dx], ku);
            } else {
                r0 = row_add(r0, w, lane_lo[dx], kl);
                r1 = row_add(r1, w, lane_up[dx], ku);
            }
        }
    }
    if (open >= 0) {
        row_store(bp, r0);
        row_store(bp + row, r1);
        if (three)
            row_store(bp + 2 * row, r2);
    }
}
#endif

static int isa_now = -1;

static int isa_supported(int isa)
{
#if DEPOSIT_X86
    __builtin_cpu_init();
    if (isa == DEPOSIT_AVX512)
        return __builtin_cpu_supports("avx512f");
    if (isa == DEPOSIT_AVX2)
        return __builtin_cpu_supports("avx2");
#endif
    return isa == DEPOSIT_SCALAR;
}

const char *deposit_isa_name(int isa)
{
    return isa == DEPOSIT_AVX512 ? "avx512" : (isa == DEPOSIT_AVX2 ? "avx2" : "scalar");
}

int deposit_select(int isa)
{
    while (isa > DEPOSIT_SCALAR && !isa_supported(isa))
        isa--;
#pragma omp atomic write
    isa_now = isa;
    return isa;
}

int deposit_isa(void)
{
    int isa;
#pragma omp atomic read
    isa = isa_now;
    if (isa >= 0)
        return isa;
    isa = DEPOSIT_AVX512;
    const char *env = getenv("EMPIC_CPU_DEPOSIT");
    for (int k = DEPOSIT_SCALAR; env && k <= DEPOSIT_AVX512; k++)
        if (!strcmp(env, deposit_isa_name(k)))
            isa = k;
    return deposit_select(isa);
}

void deposit_cluster(species *s, int start, int end, const deposit_frame *fr, float *jx,
                     float *jy, float *jz, int hist[9])
{
    const int isa = deposit_isa(), tw = fr->T.w;
    const size_t nodes = (size_t)tw * fr->T.h;
    float *nt = NULL;
    if (isa != DEPOSIT_SCALAR) /* + one row of four nodes: a block may reach past the end */
        nt = empic_calloc(4 * nodes + 16, sizeof(float), "node tile");
    chunk_work *cw = aligned_alloc(64, sizeof(chunk_work));
    if (!cw)
        EMPIC_DIE("out of host memory allocating the deposit's chunk buffers");
    memset(hist, 0, 9 * sizeof(int));
    for (int base = start; base < end; base += DCHUNK) {
        const int n = end - base < DCHUNK ? end - base : DCHUNK;
        move_chunk(s, base, n, fr, cw, hist);
#if DEPOSIT_X86
        if (isa != DEPOSIT_SCALAR && coherent(cw, n)) {
            weights_per_particle(cw, n);
            if (isa == DEPOSIT_AVX512)
                scatter_avx512(cw, n, nt, tw);
            else
                scatter_avx2(cw, n, nt, tw);
            continue;
        }
#endif
        if (nt)
            scatter_nodes(cw, n, tw, nt);
        else
            scatter_scalar(cw, n, tw, jx, jy, jz);
    }
    if (nt)
        for (size_t k = 0; k < nodes; k++) {
            jx[k] = nt[4 * k];
            jy[k] = nt[4 * k + 1];
            jz[k] = nt[4 * k + 2];
        }
    free(nt);
    free(cw);
}
