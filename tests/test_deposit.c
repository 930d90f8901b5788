/* test_deposit.c - the CPU move + deposit (src/cpu/cpu_deposit.c) against particle.h: bitwise
 * the current, positions, cells, codes and histogram of particle_move + deposit_pieces applied
 * particle by particle, on every crossing case of Kong's split, through each of the CPU's
 * ways: moves in one piece among few crossing ones, chunks of crossing moves, hot chunks with
 * every piece in the move loop, particles sharing cells (runs in registers) and scattered over
 * the cluster; and move_one_piece's claim against move_pieces. */
#include "cpu_deposit.h"
#include "particle.h"
#include "testutil.h"

#define NX 24
#define NY 20
#define XLO 6
#define XHI 14
#define YLO 5
#define YHI 11
#define TW (XHI - XLO + 3)
#define TH (YHI - YLO + 3)
#define NP 1536

/* dt/dx = dt/dy = 0.7, charge -1; the cluster [XLO, XHI) x [YLO, YHI) and its tile */
static const deposit_frame frame = {.ms = {0.7f, 0.7f, 1.0f / 0.7f, 1.0f / 0.7f, -1.0f},
                                    .T = {XLO, XHI, YLO, YHI, XLO - 1, YLO - 1, TW, TH},
                                    .nx = NX, .ny = NY};

typedef struct {
    uint32_t cell[NP];
    float x[NP], y[NP], ux[NP], uy[NP], uz[NP], w[NP];
    uint8_t code[NP];
} parts;

static species view(parts *p)
{
    species s;
    memset(&s, 0, sizeof s);
    s.q = -1.0f;
    s.cell = p->cell, s.x = p->x, s.y = p->y, s.ux = p->ux, s.uy = p->uy, s.uz = p->uz;
    s.w = p->w, s.code = p->code;
    return s;
}

/* Start offsets and momenta (u = gamma v; a move is 0.7 v cells) covering the cases:
 * at rest, no crossing, x only, y only, both (x first, y first), an exact corner, each
 * direction, offsets at 0 and just below 1. */
static const float cases[][5] = {
    /* x0, y0, ux, uy, uz */
    {0.5f, 0.5f, 0.0f, 0.0f, 0.0f},      {0.0f, 0.0f, 0.0f, 0.0f, 0.3f},
    {0.5f, 0.5f, 0.2f, -0.1f, 0.1f},     {0.9f, 0.5f, 0.5f, 0.0f, 0.0f},
    {0.1f, 0.5f, -0.5f, 0.1f, -0.2f},    {0.5f, 0.9f, 0.0f, 0.6f, 0.0f},
    {0.5f, 0.1f, 0.1f, -0.6f, 0.4f},     {0.9f, 0.8f, 0.6f, 0.6f, 0.0f},
    {0.95f, 0.6f, 0.6f, 0.8f, 1.0f},     {0.6f, 0.95f, 0.8f, 0.6f, -1.0f},
    {0.1f, 0.2f, -0.7f, -0.6f, 0.0f},    {0.2f, 0.1f, -0.6f, -0.7f, 0.5f},
    {0.9f, 0.1f, 0.9f, -0.9f, 0.0f},     {0.1f, 0.9f, -0.9f, 0.9f, 2.0f},
    {0.5f, 0.5f, 3.0f, 3.0f, 0.0f},      {0.5f, 0.5f, -3.0f, -3.0f, 0.0f},
    {0.5f, 0.5f, 3.0f, -3.0f, 1.0f},     {0.0f, 0.5f, -1.0f, 0.0f, 0.0f},
    {0.99999994f, 0.5f, 0.2f, 0.0f, 0.0f}, {0.5f, 0.99999994f, 0.0f, 0.2f, 0.0f},
    {0.0f, 0.0f, -2.0f, -2.0f, 0.0f},    {0.3f, 0.7f, 8.0f, -5.0f, 2.0f},
    /* within a rounding of an edge: crossing by float rounding only, or not */
    {0.99999994f, 0.5f, 1e-7f, 0.0f, 0.0f}, {0.0f, 0.5f, -1e-8f, 0.0f, 0.1f},
    {0.5f, 0.0f, 0.0f, -3e-8f, 0.0f},    {0.5f, 0.99999994f, 0.0f, 3e-8f, -0.1f},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Six blocks of 256 particles: runs of 36 per cell (a cluster loaded cell by cell) with the
 * cases in turn; runs at rest with every 16th particle taking a case (few crossing moves
 * among one-piece ones); runs all crossing (dense chunks, then hot chunks); then random
 * cells with random momenta up to 3 (mostly crossing), up to 0.05 (mostly in one cell), and
 * the cases. */
static void fill(parts *p)
{
    uint64_t r = 12345;
#define RND() ((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 40) / 16777216.0f
    for (int k = 0; k < NP; k++) {
        const int block = k / 256, run = block < 3;
        const float *c = cases[(run ? k / 36 : k) % NCASES];
        int ci = XLO + (run ? (k / 36) % (XHI - XLO) : (int)(RND() * (XHI - XLO)));
        int cj = YLO + (run ? (k / 36 / (XHI - XLO)) % (YHI - YLO) : (int)(RND() * (YHI - YLO)));
        p->cell[k] = cell_pack(ci, cj);
        p->x[k] = c[0], p->y[k] = c[1], p->ux[k] = c[2], p->uy[k] = c[3], p->uz[k] = c[4];
        p->w[k] = 0.25f + 0.001f * (float)(k % 7);
        if (block == 1 && k % 16) {
            p->x[k] = RND(), p->y[k] = RND();
            p->ux[k] = p->uy[k] = 0.0f, p->uz[k] = RND();
        }
        if (block == 2) {
            p->x[k] = RND(), p->y[k] = RND();
            p->ux[k] = RND() < 0.5f ? -3.0f : 3.0f, p->uy[k] = 6.0f * RND() - 3.0f;
        }
        if (block == 3 || block == 4) {
            const float u = block == 3 ? 3.0f : 0.05f;
            p->x[k] = RND(), p->y[k] = RND();
            p->ux[k] = u * (2.0f * RND() - 1.0f), p->uy[k] = u * (2.0f * RND() - 1.0f);
            p->uz[k] = 2.0f * RND() - 1.0f;
        }
    }
#undef RND
}

/* particle.h's production rule, particle by particle in order (particle_move, then
 * deposit_pieces), into a planar tile. */
static void reference(const parts *p, float *jx, float *jy, float *jz)
{
    for (int k = 0; k < NP; k++) {
        uint32_t c = p->cell[k];
        float x = p->x[k], y = p->y[k], w[24];
        int dcx, dcy, o[3], t = cluster_tile_k(&frame.T, c);
        unsigned used = particle_move(&frame.ms, &frame.T, NX, NY, TW, p->ux[k], p->uy[k],
                                      p->uz[k], p->w[k], &c, &x, &y, &dcx, &dcy, o, w, 1);
        deposit_pieces(jx, jy, jz, t, TW, used, o, w, 1);
    }
}

/* Each crossing case occurs among the cases: at rest, no crossing, x only, y only, x then y,
 * y then x, an exact corner, and the two-crossing moves in both directions of each axis. */
static void test_cases_covered(void)
{
    enum { REST, NONE, XONLY, YONLY, XY, YX, CORNER, NEGX, NEGY, KINDS };
    int kinds[KINDS] = {0};
    for (int k = 0; k < NCASES; k++) {
        const float *c = cases[k];
        float ig = 1.0f / lorentz_gamma(c[2], c[3], c[4]);
        float x1 = c[0] + c[2] * ig * 0.7f, y1 = c[1] + c[3] * ig * 0.7f;
        kong_split sp;
        kong_split3(c[0], c[1], x1, y1, &sp);
        float ex = x1 > c[0] ? 1.0f : 0.0f, ey = y1 > c[1] ? 1.0f : 0.0f;
        int xa = sp.t[1] < 1.0f && sp.x[1] == ex, ya = sp.t[1] < 1.0f && sp.y[1] == ey;
        int two = sp.t[2] > sp.t[1];
        if (c[2] == 0.0f && c[3] == 0.0f)
            kinds[REST]++;
        else if (sp.t[1] == 1.0f)
            kinds[NONE]++;
        else if (xa && ya)
            kinds[CORNER]++;
        else if (!two)
            kinds[xa ? XONLY : YONLY]++;
        else {
            kinds[xa ? XY : YX]++;
            kinds[NEGX] += x1 < c[0];
            kinds[NEGY] += y1 < c[1];
        }
    }
    for (int k = 0; k < KINDS; k++)
        CU_ASSERT(kinds[k] >= 1);
}

/* piece_entry (the GPU tile's entries) lists deposit_add's eight weights in its order. */
static void test_piece_entry(void)
{
    enum { S = 7, TP = 64, K = 9 };
    float j[3 * TP] = {0}, w[8];
    for (int e = 0; e < 8; e++)
        w[e] = (float)(e + 1);
    deposit_add(j, j + TP, j + 2 * TP, K, S, w, 1);
    int bad = 0;
    for (int e = 0; e < 8; e++)
        bad += j[piece_entry(e, K, S, TP)] != w[e];
    CU_ASSERT(bad == 0);
}

/* move_one_piece: then move_pieces' first piece is piece_weights of the whole move, in the
 * start cell, and there is no middle piece; random moves, small ones near the edges. */
static void test_one_piece(void)
{
    uint64_t r = 99;
#define RND() ((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 40) / 16777216.0f
    int one = 0, bad = 0;
    for (int k = 0; k < 200000; k++) {
        float x0 = RND(), y0 = RND(), dx = 0.2f * RND() - 0.1f, dy = 0.2f * RND() - 0.1f;
        if (k % 4 == 1) /* near an edge, moves of a few ulps */
            x0 = k % 8 == 1 ? 0.99999994f - 1e-7f * RND() : 1e-7f * RND(), dx *= 1e-5f;
        if (k % 4 == 2)
            y0 = k % 8 == 2 ? 0.99999994f - 1e-7f * RND() : 1e-7f * RND(), dy *= 1e-5f;
        const float x1 = x0 + dx, y1 = y0 + dy, cx = 1.5f, cy = -0.7f, cz = 0.3f;
        if (!move_one_piece(x0, y0, x1, y1))
            continue;
        one++;
        int o[3];
        float w[24], v[8];
        const int mid = move_pieces(x0, y0, x1, y1, cx, cy, cz, 10, o, w, 1);
        piece_weights(x0, y0, x1, y1, cx, cy, cz, v, 1);
        bad += mid || o[0] != 0 || memcmp(w, v, sizeof v) != 0;
    }
#undef RND
    CU_ASSERT(one > 100000);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_deposit_bitwise(void)
{
    static parts p0, p;
    static float rx[TW * TH], ry[TW * TH], rz[TW * TH], jx[TW * TH], jy[TW * TH], jz[TW * TH];
    fill(&p0);
    memset(rx, 0, sizeof rx), memset(ry, 0, sizeof ry), memset(rz, 0, sizeof rz);
    reference(&p0, rx, ry, rz);
    /* the reference's positions, cells, codes and histogram */
    parts q = p0;
    int href[9] = {0};
    for (int k = 0; k < NP; k++) {
        float w[24];
        int dcx, dcy, o[3];
        particle_move(&frame.ms, &frame.T, NX, NY, TW, q.ux[k], q.uy[k], q.uz[k], q.w[k],
                      &q.cell[k], &q.x[k], &q.y[k], &dcx, &dcy, o, w, 1);
        q.code[k] = (uint8_t)mig_code(dcx, dcy);
        href[mig_bin(dcx, dcy)]++;
    }
    p = p0;
    memset(jx, 0, sizeof jx), memset(jy, 0, sizeof jy), memset(jz, 0, sizeof jz);
    species s = view(&p);
    int hist[9];
    deposit_cluster(&s, 0, NP, &frame, jx, jy, jz, hist);
    CU_ASSERT(!memcmp(jx, rx, sizeof jx));
    CU_ASSERT(!memcmp(jy, ry, sizeof jy));
    CU_ASSERT(!memcmp(jz, rz, sizeof jz));
    CU_ASSERT(!memcmp(&p, &q, sizeof p));
    CU_ASSERT(!memcmp(hist, href, sizeof hist));
    CU_ASSERT(hist[4] < NP); /* some particles leave the cluster */
}

int main(void)
{
    CU_initialize_registry();
    CU_pSuite s = CU_add_suite("deposit", NULL, NULL);
    CU_add_test(s, "every crossing case is covered", test_cases_covered);
    CU_add_test(s, "piece_entry follows deposit_add", test_piece_entry);
    CU_add_test(s, "move_one_piece: the first piece is the move", test_one_piece);
    CU_add_test(s, "deposit_cluster = particle_move + deposit_pieces, bitwise", test_deposit_bitwise);
    return tu_run_tests() ? 1 : 0;
}
