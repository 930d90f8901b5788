/* cpu_deposit.c - move and current deposit of one cluster (cpu_deposit.h).
 *
 * Chunks of DCHUNK particles, in three steps:
 * - a vectorised loop moves every particle by particle.h's rule (move_end, move_cell:
 *   positions, cells, migration codes) and computes the piece of a move that stays in its
 *   cell (move_one_piece: Kong's split is then that one piece, piece_weights of the whole
 *   move). Most particles of a cold or warm plasma are done (fast);
 * - the others (a cell edge crossed: slow) get all three pieces from move_pieces, as the rule
 *   gives them, in one vectorised loop over their moves gathered in order, or over the whole
 *   chunk when many cross. After a chunk where most crossed (hot plasma), the next chunk
 *   computes every piece in its move loop (move_to: general);
 * - the pieces are added to the tile in particle order, piece order, each piece's eight words
 *   in deposit_add's order. While consecutive particles mostly share a cell (a cold or warm
 *   plasma still near its load order) the open cell's eight words stay in registers: their
 *   adds form a chain of register adds, not of stores and reloads of the same words; else
 *   each piece's words are added in place.
 * Every tile word thus receives the rule's additions in the rule's order: bitwise the current
 * of particle_move + deposit_pieces added particle by particle (tests/test_deposit.c). */
#include "cpu_deposit.h"
#include "empic.h"
#include "particle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DCHUNK 64
#define FAST 8u /* used[r]: the move is the one piece fw, in the start cell */
/* inlined into deposit_range's instances (deposit_range: one per instruction set) */
#define HOT static inline __attribute__((always_inline))

/* One chunk's moves. Particle r starts in cell k[r] of the tile; used[r]: the pieces it adds
 * (move_to's mask), or FAST. Slow particles (not FAST) keep their move in in[] and get their
 * pieces' cell shifts and weights in so[] and sw[] at slot r (dense) or at their rank among
 * the chunk's slow particles (sparse). */
typedef struct {
    _Alignas(64) float fw[8][DCHUNK];    /* the first piece's weights */
    _Alignas(64) float in[7][DCHUNK];    /* x0, y0, x1, y1, cx, cy, cz */
    _Alignas(64) float gin[7][DCHUNK];   /* those of the slow particles, in order (sparse) */
    _Alignas(64) float sw[3][8][DCHUNK]; /* move_pieces' weights */
    int so[3][DCHUNK];                   /* move_pieces' cell shifts */
    int k[DCHUNK], slot[DCHUNK];
    unsigned char used[DCHUNK];
} chunk_work;

/* Move particles [base, base + n): positions, cells, migration codes, the fast piece (or,
 * general, every piece). charged (an ionizing species: its charge states scale the current) is a constant in each
 * instance: a test of it inside the loop keeps gcc from vectorising the loop for AVX2, which
 * has no masked byte loads. No reductions in the loop: gcc keeps each in a stack array. */
HOT void
move_range(species *s, int base, int n, const deposit_frame *fr, chunk_work *cw,
           const int charged, const int general)
{
    const move_step *ms = &fr->ms;
    const cluster_tile *T = &fr->T;
    const int nx = fr->nx, ny = fr->ny, i0 = T->i0, j0 = T->j0, tw = T->w;
    uint32_t *restrict cell = s->cell;
    float *restrict xs = s->x, *restrict ys = s->y;
    const float *restrict pux = s->ux, *restrict puy = s->uy, *restrict puz = s->uz,
                          *restrict pw = s->w;
    uint8_t *restrict code = s->code;
    const uint8_t *restrict pz = s->z;
#pragma omp simd
    for (int r = 0; r < n; r++) {
        const int p = base + r;
        const float x0 = xs[p], y0 = ys[p];
        const float qw = charged ? pw[p] * (float)pz[p] : pw[p];
        const move_endpoint e = move_end(ms, pux[p], puy[p], puz[p], qw, x0, y0);
        const uint32_t c0 = cell[p];
        uint32_t c1 = c0;
        float x = x0, y = y0;
        int dcx, dcy;
        cw->k[r] = (cell_i(c0) - i0) + (cell_j(c0) - j0) * tw;
        if (general) {
            cw->used[r] = (unsigned char)move_to(T, nx, ny, tw, e.x1, e.y1, e.cx, e.cy, e.cz,
                                                 &c1, &x, &y, &dcx, &dcy, &cw->so[0][r],
                                                 &cw->sw[0][0][r], DCHUNK);
        } else {
            /* move_pieces only for the slow particles (slow_pieces, which adds the middle
             * piece's bit to used) */
            const unsigned used = move_cell(T, nx, ny, e.x1, e.y1, &c1, &x, &y, &dcx, &dcy, 0);
            const int fast = move_one_piece(x0, y0, e.x1, e.y1) && used == 1u;
            piece_weights(x0, y0, e.x1, e.y1, e.cx, e.cy, e.cz, &cw->fw[0][r], DCHUNK);
            cw->used[r] = (unsigned char)(fast ? FAST : used);
            cw->in[0][r] = x0;
            cw->in[1][r] = y0;
            cw->in[2][r] = e.x1;
            cw->in[3][r] = e.y1;
            cw->in[4][r] = e.cx;
            cw->in[5][r] = e.cy;
            cw->in[6][r] = e.cz;
        }
        cell[p] = c1;
        xs[p] = x;
        ys[p] = y;
        code[p] = (uint8_t)mig_code(dcx, dcy);
    }
}

/* The chunk's moves between clusters into the histogram (most chunks have none). */
HOT void count_moves(const uint8_t *code, int n, int hist[9])
{
    unsigned any = 0;
    for (int r = 0; r < n; r++)
        any |= code[r];
    hist[4] += n;
    if (any)
        for (int r = 0; r < n; r++)
            if (code[r]) {
                hist[4]--;
                hist[mig_bin_of_code(code[r])]++;
            }
}

/* Move particles [base, base + n) (move_range), general: with every piece (the chunk is
 * then dense); returns how many are slow (general: add more than the first piece). */
HOT int move_chunk(species *s, int base, int n, const deposit_frame *fr, chunk_work *cw,
                   int hist[9], int general)
{
    if (general) {
        if (s->z)
            move_range(s, base, n, fr, cw, 1, 1);
        else
            move_range(s, base, n, fr, cw, 0, 1);
    } else {
        if (s->z)
            move_range(s, base, n, fr, cw, 1, 0);
        else
            move_range(s, base, n, fr, cw, 0, 0);
    }
    count_moves(s->code + base, n, hist);
    int one = 0;
    for (int r = 0; r < n; r++)
        one += cw->used[r] == (general ? 1u : FAST);
    return n - one;
}

/* The slow particles' pieces: with many of them a vectorised loop over the whole chunk (slot
 * r), else the same loop over their moves gathered in order (slot: the particle's rank among
 * the slow ones). Returns whether dense. */
HOT int slow_pieces(chunk_work *cw, int n, int slow, int tw)
{
    const int dense = 8 * slow > n;
    if (dense) {
#pragma omp simd
        for (int r = 0; r < n; r++) {
            const int mid = move_pieces(cw->in[0][r], cw->in[1][r], cw->in[2][r], cw->in[3][r],
                                        cw->in[4][r], cw->in[5][r], cw->in[6][r], tw,
                                        &cw->so[0][r], &cw->sw[0][0][r], DCHUNK);
            cw->used[r] |= (unsigned char)(mid && cw->used[r] != FAST ? 2u : 0u);
        }
        return 1;
    }
    /* the slow particles: used[] without the FAST bit, eight at a time (FAST is 8, a slow
     * particle's mask below it), 64 to a word */
    for (int b = 0, j = 0; b < n; b += 64) {
        const int m = n - b < 64 ? n - b : 64;
        uint64_t left = 0;
        for (int r = 0; r < m; r += 8) {
            uint64_t v = 0;
            memcpy(&v, cw->used + b + r, sizeof v);
            v = ~v >> 3 & 0x0101010101010101ull;
            left |= (v * 0x0102040810204080ull >> 56) << r; /* byte i's bit to bit i */
        }
        if (m < 64)
            left &= (1ull << m) - 1;
        for (; left; left &= left - 1, j++) {
            const int r = b + __builtin_ctzll(left);
            cw->slot[j] = r;
            for (int e = 0; e < 7; e++)
                cw->gin[e][j] = cw->in[e][r];
        }
    }
    /* whole vectors (16 lanes, AVX-512's), so that the loop never takes its scalar
     * remainder: the lanes past the slow ones move stale values, unused */
    const int lanes = (slow + 15) & ~15;
    int mid[DCHUNK];
#pragma omp simd
    for (int j = 0; j < lanes; j++)
        mid[j] = move_pieces(cw->gin[0][j], cw->gin[1][j], cw->gin[2][j], cw->gin[3][j],
                             cw->gin[4][j], cw->gin[5][j], cw->gin[6][j], tw, &cw->so[0][j],
                             &cw->sw[0][0][j], DCHUNK);
    for (int j = 0; j < slow; j++)
        cw->used[cw->slot[j]] |= (unsigned char)(mid[j] ? 2u : 0u);
    return 0;
}

/* The eight words of a piece in cell k (deposit_add's order), held in registers a[] while
 * pieces fall in cell `open`. */
typedef struct {
    float *jx, *jy, *jz;
    int tw, open;
    float a[8];
} tile_cell;

HOT void cell_store(tile_cell *t)
{
    const int k = t->open, s = t->tw;
    if (k < 0)
        return;
    t->jx[k] = t->a[0];
    t->jx[k + s] = t->a[1];
    t->jy[k] = t->a[2];
    t->jy[k + 1] = t->a[3];
    t->jz[k] = t->a[4];
    t->jz[k + 1] = t->a[5];
    t->jz[k + s] = t->a[6];
    t->jz[k + s + 1] = t->a[7];
}

HOT void piece_add(tile_cell *t, int k, const float *w)
{
    if (k != t->open) {
        cell_store(t);
        const int s = t->tw;
        t->open = k;
        t->a[0] = t->jx[k];
        t->a[1] = t->jx[k + s];
        t->a[2] = t->jy[k];
        t->a[3] = t->jy[k + 1];
        t->a[4] = t->jz[k];
        t->a[5] = t->jz[k + 1];
        t->a[6] = t->jz[k + s];
        t->a[7] = t->jz[k + s + 1];
    }
    for (int e = 0; e < 8; e++)
        t->a[e] += w[e * DCHUNK];
}

/* The chunk's pieces into the tile, in particle order, piece order; runs: the pieces of
 * consecutive particles mostly share a cell (piece_add), else each piece's eight words are
 * added in place (a change of cell at nearly every piece would cost a mispredicted branch
 * each in piece_add). */
HOT void
scatter_run(const chunk_work *cw, int n, int dense, tile_cell *t, const int runs)
{
    /* deposit_add's eight words of cell k: word e at pw[e][k] (one register per word, so
     * that each add is a load, an add and a store at k, no address arithmetic) */
    const int s = t->tw;
    float *const pw[8] = {t->jx, t->jx + s, t->jy, t->jy + 1, t->jz, t->jz + 1, t->jz + s,
                          t->jz + s + 1};
#define PIECE_WORDS(k, w)                                                                      \
    do {                                                                                       \
        const int k_ = (k);                                                                    \
        const float *w_ = (w);                                                                 \
        for (int e = 0; e < 8; e++)                                                            \
            pw[e][k_] += w_[e * DCHUNK];                                                       \
    } while (0)
    for (int r = 0, j = 0; r < n; r++) {
        const unsigned u = cw->used[r];
        const int k = cw->k[r];
        if (u == FAST) {
            if (runs)
                piece_add(t, k, &cw->fw[0][r]);
            else
                PIECE_WORDS(k, &cw->fw[0][r]);
            continue;
        }
        const int q = dense ? r : j++;
        for (int m = 0; m < 3; m++)
            if (u >> m & 1u) {
                if (runs)
                    piece_add(t, k + cw->so[m][q], &cw->sw[m][0][q]);
                else
                    PIECE_WORDS(k + cw->so[m][q], &cw->sw[m][0][q]);
            }
    }
#undef PIECE_WORDS
}

HOT void scatter(const chunk_work *cw, int n, int dense, tile_cell *t)
{
    int changes = 0;
    for (int r = 1; r < n; r++)
        changes += cw->k[r] != cw->k[r - 1];
    if (4 * changes <= n)
        scatter_run(cw, n, dense, t, 1);
    else {
        cell_store(t); /* the open cell's words back in the tile */
        t->open = -1;
        scatter_run(cw, n, dense, t, 0);
    }
}

/* A cluster's deposit in progress: the chunk buffers, the open cell, the mode of the last
 * chunk. */
struct deposit_run {
    chunk_work cw;
    deposit_frame fr;
    tile_cell t;
    int *hist, general;
};

deposit_run *deposit_run_new(void)
{
    deposit_run *d = aligned_alloc(64, sizeof(deposit_run));
    if (!d)
        EMPIC_DIE("out of host memory allocating the deposit's chunk buffers");
    memset(d, 0, sizeof *d); /* defined values in the lanes past the slow ones */
    return d;
}

void deposit_begin(deposit_run *d, const deposit_frame *fr, float *jx, float *jy, float *jz,
                   int hist[9])
{
    d->fr = *fr;
    d->hist = hist;
    d->general = 0;
    for (int b = 0; b < 9; b++)
        hist[b] = 0;
    /* cell 0 of the tile open: its words are zero, as the tile */
    d->t = (tile_cell){jx, jy, jz, fr->T.w, 0, {0}};
}

HOT void range_loop(deposit_run *d, species *s, int start, int end)
{
    chunk_work *cw = &d->cw;
    /* locals: the open cell's words stay in registers only in a local (no store to the tile
     * may change them) */
    const deposit_frame fr = d->fr;
    tile_cell t = d->t;
    int general = d->general;
    for (int base = start; base < end; base += DCHUNK) {
        const int n = end - base < DCHUNK ? end - base : DCHUNK;
        const int slow = move_chunk(s, base, n, &fr, cw, d->hist, general);
        const int dense = general || (slow && slow_pieces(cw, n, slow, fr.T.w));
        scatter(cw, n, dense, &t);
        /* hot plasma: the next chunk gets every piece in its move loop */
        general = 2 * slow > n;
    }
    d->t = t;
    d->general = general;
}

static void range_base(deposit_run *d, species *s, int start, int end)
{
    range_loop(d, s, start, end);
}

/* The AVX-512 instance (CPU_AVX512_INSTANCE) */
#ifdef CPU_AVX512_INSTANCE
__attribute__((target("arch=x86-64-v4"))) static void range_avx512(deposit_run *d, species *s,
                                                                    int start, int end)
{
    range_loop(d, s, start, end);
}
#endif

void deposit_range(deposit_run *d, species *s, int start, int end)
{
#ifdef CPU_AVX512_INSTANCE
    if (cpu_avx512()) {
        range_avx512(d, s, start, end);
        return;
    }
#endif
    range_base(d, s, start, end);
}

/* The instance the particle loops take (1: AVX-512); -1 before the first look. */
static int avx512_now = -1;
/* Whether the choice is left to a measurement (cpu_simd_measured). */
static int avx512_open = 0;

static void simd_first(void)
{
#ifdef CPU_AVX512_INSTANCE
    __builtin_cpu_init();
    const char *env = getenv("EMPIC_CPU_SIMD");
    if (env && *env && strcmp(env, "auto") && strcmp(env, "base") && strcmp(env, "avx512"))
        EMPIC_DIE("EMPIC_CPU_SIMD=%s: auto, base or avx512", env);
    const int v = __builtin_cpu_supports("x86-64-v4") && !(env && !strcmp(env, "base"));
    avx512_open = v && !(env && !strcmp(env, "avx512"));
#pragma omp atomic write
    avx512_now = v;
#else
#pragma omp atomic write
    avx512_now = 0;
#endif
}

int cpu_avx512(void)
{
    int v;
#pragma omp atomic read
    v = avx512_now;
    if (v >= 0)
        return v;
    simd_first();
    return cpu_avx512();
}

int cpu_simd_measured(void)
{
    cpu_avx512();
    return avx512_open;
}

void cpu_simd_take(int avx512)
{
    if (cpu_simd_measured())
#pragma omp atomic write
        avx512_now = avx512 != 0;
}

void deposit_end(deposit_run *d) { cell_store(&d->t); }

void deposit_run_free(deposit_run *d) { free(d); }

void deposit_cluster(species *s, int start, int end, const deposit_frame *fr, float *jx,
                     float *jy, float *jz, int hist[9])
{
    deposit_run *d = deposit_run_new();
    deposit_begin(d, fr, jx, jy, jz, hist);
    deposit_range(d, s, start, end);
    deposit_end(d);
    deposit_run_free(d);
}
