/* test_particle.c - unit physics of include/particle.h and cluster.h: Kong's split for every
 * crossing case, exact discrete continuity of the production move and deposit (the pieces it
 * leaves out carry no current), the cell wrap and migration codes of the move, the sort's
 * room and leaver counts against a simulated sort, the window shift of a particle, Boris
 * gyration, uniform-E acceleration, E x B. */
#include "particle.h"
#include "testutil.h"

#include <stdlib.h>

#define G 7 /* 7x7 test mesh, particle cell at (3,3) */
#define K0 (3 + 3 * G)

/* The whole 7x7 test mesh as one cluster tile (no ghosts: i0 = j0 = 0, row stride G). */
static const cluster_tile MESH = {0, G, 0, G, 0, 0, G, G};

/* rho before/after and J of one move from (x0,y0) to (x1,y1) in cell (3,3), unit cells,
 * dt = 1, q w = 1, moved and deposited as both backends do (move_to, deposit_pieces: only
 * the pieces the rule selects); returns max |rho1 - rho0 + div J| over the mesh and sets
 * *skipped_w to the largest |weight| of the pieces left out. */
static double continuity(float x0, float y0, float x1, float y1, float *jzsum, float *skipped_w)
{
    float jx[G * G] = {0}, jy[G * G] = {0}, jz[G * G] = {0}, r0[G * G] = {0}, r1[G * G] = {0};
    uint32_t cell = cell_pack(3, 3);
    float x = x0, y = y0, w[24];
    int o[3], dcx, dcy;
    unsigned mask = move_to(&MESH, G, G, G, x1, y1, 1.0f, 1.0f, 1.0f, &cell, &x, &y, &dcx, &dcy,
                            o, w, 1);
    deposit_pieces(jx, jy, jz, K0, G, mask, o, w, 1);
    *skipped_w = 0.0f;
    for (int m = 0; m < 3; m++)
        for (int e = 0; e < 8 && !(mask & (1u << m)); e++)
            *skipped_w = fabsf(w[8 * m + e]) > *skipped_w ? fabsf(w[8 * m + e]) : *skipped_w;
    deposit_charge(r0, K0, G, x0, y0, 1.0f);
    deposit_charge(r1, cluster_tile_k(&MESH, cell), G, x, y, 1.0f);
    double worst = 0.0;
    *jzsum = 0.0f;
    for (int j = 1; j < G; j++)
        for (int i = 1; i < G; i++) {
            int k = i + j * G;
            double res = (r1[k] - r0[k]) + (jx[k] - jx[k - 1]) + (jy[k] - jy[k - G]);
            worst = fabs(res) > worst ? fabs(res) : worst;
        }
    for (int k = 0; k < G * G; k++)
        *jzsum += jz[k];
    return worst;
}

/* Each piece of the split lies in one cell: both ends within the closed cell of its midpoint. */
static int pieces_in_cells(float x0, float y0, float x1, float y1, int *middle)
{
    kong_split p;
    kong_split3(x0, y0, x1, y1, &p);
    *middle = p.t[2] != p.t[1];
    for (int m = 0; m < 3; m++) {
        float mx = 0.5f * (p.x[m] + p.x[m + 1]), my = 0.5f * (p.y[m] + p.y[m + 1]);
        float fx = floorf(mx), fy = floorf(my);
        for (int e = m; e <= m + 1; e++)
            if (p.x[e] < fx - 1e-6f || p.x[e] > fx + 1 + 1e-6f || p.y[e] < fy - 1e-6f ||
                p.y[e] > fy + 1 + 1e-6f)
                return 0;
        if (!(p.t[m + 1] >= p.t[m]))
            return 0;
    }
    return 1;
}

static void check_case(float x0, float y0, float x1, float y1, int want_middle)
{
    int middle;
    float jz, skipped;
    CU_ASSERT(pieces_in_cells(x0, y0, x1, y1, &middle));
    if (want_middle >= 0) /* -1: a corner hit up to float rounding */
        CU_ASSERT_EQUAL(middle, want_middle);
    CU_ASSERT(continuity(x0, y0, x1, y1, &jz, &skipped) < 2e-7);
    CU_ASSERT_DOUBLE_EQUAL(jz, 1.0, 1e-6);
    CU_ASSERT_EQUAL(skipped, 0.0f);
}

static void test_split_cases(void)
{
    check_case(0.3f, 0.4f, 0.6f, 0.7f, 0);   /* no crossing */
    check_case(0.3f, 0.4f, 0.3f, 0.4f, 0);   /* at rest */
    check_case(0.8f, 0.4f, 1.3f, 0.5f, 0);   /* +x */
    check_case(0.2f, 0.4f, -0.3f, 0.6f, 0);  /* -x */
    check_case(0.5f, 0.9f, 0.4f, 1.2f, 0);   /* +y */
    check_case(0.5f, 0.1f, 0.7f, -0.2f, 0);  /* -y */
    check_case(0.9f, 0.5f, 1.2f, 1.3f, 1);   /* x then y */
    check_case(0.5f, 0.9f, 1.3f, 1.2f, 1);   /* y then x */
    check_case(0.1f, 0.2f, -0.5f, -0.6f, 1); /* -x -y */
    check_case(0.8f, 0.8f, 1.2f, 1.2f, 0);   /* through the corner */
    check_case(0.2f, 0.8f, -0.2f, 1.2f, -1); /* through the other corner */
    check_case(0.5f, 0.5f, 1.0f, 0.7f, 0);   /* lands on the x edge */
    check_case(0.5f, 0.5f, 0.7f, 0.0f, 0);   /* lands on the y edge */
    check_case(0.0f, 0.5f, -0.4f, 0.5f, 0);  /* starts on the edge, moves out */
    check_case(0.0f, 0.0f, 0.5f, 0.5f, 0);   /* starts on a corner */
    check_case(0.6f, 0.0f, 1.4f, 0.0f, 0);   /* along an edge */
}

static void test_split_random(void)
{
    srand(3);
    double worst = 0.0;
    int ok = 1;
    for (int n = 0; n < 200000; n++) {
        float x0 = (float)rand() / RAND_MAX * 0.999999f, y0 = (float)rand() / RAND_MAX * 0.999999f;
        float dx = ((float)rand() / RAND_MAX * 2 - 1) * 0.99f, dy = ((float)rand() / RAND_MAX * 2 - 1) * 0.99f;
        int middle;
        float jz, skipped;
        ok &= pieces_in_cells(x0, y0, x0 + dx, y0 + dy, &middle);
        double c = continuity(x0, y0, x0 + dx, y0 + dy, &jz, &skipped);
        worst = c > worst ? c : worst;
        ok &= fabsf(jz - 1.0f) < 1e-6f && skipped == 0.0f;
    }
    CU_ASSERT(ok);
    CU_ASSERT(worst < 5e-7);
    printf(" [max continuity residual %.2e over 2e5 random moves] ", worst);
}

/* particle_move in a 4x4 grid of 2x2-cell clusters (x0 = y0 = 0, 2, 4, 6; 8x8 cells):
 * position from v = u / gamma, periodic cell wrap, move between clusters and its code. */
static void test_move_wrap_migration(void)
{
    static const int x0[5] = {0, 2, 4, 6, 8};
    const move_step ms = move_step_of(0.5, 1.0, 1.0, -1.0f);
    struct {
        int c, i, j;           /* cluster, start cell */
        float x, y, ux, uy;    /* start offset, momentum (uz = 0) */
        int i1, j1, dcx, dcy;  /* end cell (wrapped) and move between clusters */
    } cases[] = {
        {5, 2, 2, 0.5f, 0.5f, 0.3f, -0.2f, 2, 2, 0, 0},    /* stays in its cell */
        {5, 3, 3, 0.9f, 0.2f, 0.6f, 0.0f, 4, 3, 1, 0},     /* +x into the next cluster */
        {5, 2, 2, 0.1f, 0.1f, -0.6f, -0.6f, 1, 1, -1, -1}, /* diagonal, -x -y */
        {0, 0, 0, 0.1f, 0.5f, -0.6f, 0.0f, 7, 0, -1, 0},   /* wraps around x = 0 */
        {15, 7, 7, 0.5f, 0.9f, 0.0f, 0.6f, 7, 0, 0, 1},    /* wraps around y = 8 */
    };
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        const cluster_tile T = cluster_tile_of(x0, x0, 4, cases[n].c);
        uint32_t cell = cell_pack(cases[n].i, cases[n].j);
        float x = cases[n].x, y = cases[n].y, w[24], ux = cases[n].ux, uy = cases[n].uy;
        int o[3], dcx, dcy;
        particle_move(&ms, &T, 8, 8, T.w, ux, uy, 0.0f, 1.0f, &cell, &x, &y, &dcx, &dcy, o, w, 1);
        float ig = 1.0f / lorentz_gamma(ux, uy, 0.0f);
        float xe = cases[n].x + ux * ig * 0.5f, ye = cases[n].y + uy * ig * 0.5f;
        CU_ASSERT_DOUBLE_EQUAL(x, xe - floorf(xe), 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(y, ye - floorf(ye), 1e-6);
        CU_ASSERT_EQUAL(cell_i(cell), cases[n].i1);
        CU_ASSERT_EQUAL(cell_j(cell), cases[n].j1);
        CU_ASSERT_EQUAL(dcx, cases[n].dcx);
        CU_ASSERT_EQUAL(dcy, cases[n].dcy);
        unsigned code = mig_code(dcx, dcy);
        CU_ASSERT_EQUAL(mig_dx(code), dcx);
        CU_ASSERT_EQUAL(mig_dy(code), dcy);
        CU_ASSERT_EQUAL(mig_code_of_bin(mig_bin(dcx, dcy)), code);
        CU_ASSERT_EQUAL(mig_bin_of_code(code), mig_bin(dcx, dcy));
    }
    CU_ASSERT_EQUAL(mig_bin_of_code(PBND_DROP), 4);
}

/* sort_need against a simulated sort of a random 4x6 partition: the four passes of cluster
 * pairs moving counts along x, then y (diagonal movers in both), as the backends' passes
 * move particles. The leaver counts are exact, the room is never exceeded. */
static void test_sort_need(void)
{
    enum { NX = 4, NY = 6, NC = NX * NY };
    srand(11);
    for (int trial = 0; trial < 200; trial++) {
        int hist[9 * NC], count[NC], need[NC], lv[NC][4];
        int n[NC][9]; /* particles of cluster c still to move by bin (x part first, then y) */
        for (int c = 0; c < NC; c++) {
            count[c] = 0;
            for (int b = 0; b < 9; b++)
                count[c] += n[c][b] = hist[9 * c + b] = rand() % (b == 4 ? 20 : 4);
        }
        for (int c = 0; c < NC; c++)
            need[c] = sort_need(hist, count[c], c % NX, c / NX, NX, NY, lv[c]);
        int ok = 1, moved[NC][4] = {{0}};
        for (int pass = 0; pass < 4; pass++) {
            const int axis = pass / 2, first = pass % 2, len = axis ? NY : NX;
            for (int q = 0; q < (axis ? NX : NY) * (len / 2); q++) {
                int lo = first + 2 * (q % (len / 2)), other = q / (len / 2), hi = (lo + 1) % len;
                int a = axis ? other + lo * NX : lo + other * NX;
                int b = axis ? other + hi * NX : hi + other * NX;
                for (int dir = 0; dir < 2; dir++) { /* +1 movers a -> b, then -1 movers b -> a */
                    int from = dir ? b : a, to = dir ? a : b, d = dir ? -1 : 1;
                    for (int o = -1; o <= 1; o++) { /* their move along the other axis */
                        int bin = axis ? mig_bin(o, d) : mig_bin(d, o);
                        int k = n[from][bin];
                        n[from][bin] = 0;
                        n[to][axis ? mig_bin(o, 0) : mig_bin(0, o)] += k;
                        count[from] -= k;
                        count[to] += k;
                        moved[from][2 * axis + dir] += k;
                    }
                    ok &= count[to] <= need[to];
                }
            }
        }
        for (int c = 0; c < NC; c++)
            for (int b = 0; b < 9; b++)
                ok &= b == 4 || n[c][b] == 0;
        for (int c = 0; c < NC; c++)
            for (int k = 0; k < 4; k++)
                ok &= moved[c][k] == lv[c][k];
        CU_ASSERT(ok);
        if (!ok)
            break;
    }
}

/* The window's shift of a particle: one column back, the x part of its code for its new
 * cluster column, PBND_DROP at the first column or when already marked. Clusters of two
 * columns: x0 = {0, 2, 4, 6, 8}. */
static void test_window_shift(void)
{
    uint32_t cell = cell_pack(4, 5); /* in cluster 2 (first column 4), moved along +y */
    CU_ASSERT_EQUAL(window_shift_particle(&cell, mig_code(0, 1), 4), mig_code(-1, 1));
    CU_ASSERT(cell_i(cell) == 3 && cell_j(cell) == 5);
    /* moved on to cluster 2 from cluster 1 (first column 2): the shift takes it back */
    CU_ASSERT_EQUAL(window_shift_particle(&cell, mig_code(1, 0), 2), mig_code(0, 0));
    CU_ASSERT(cell_i(cell) == 2 && cell_j(cell) == 5);
    /* moved from cluster 2 into cluster 1's last column: the shift keeps it going there */
    cell = cell_pack(3, 5);
    CU_ASSERT_EQUAL(window_shift_particle(&cell, mig_code(-1, 0), 4), mig_code(-1, 0));
    CU_ASSERT(cell_i(cell) == 2 && cell_j(cell) == 5);
    cell = cell_pack(0, 5);
    CU_ASSERT_EQUAL(window_shift_particle(&cell, 0, 0), PBND_DROP);
    CU_ASSERT(cell_i(cell) == 0 && cell_j(cell) == 5);
    cell = cell_pack(6, 1);
    CU_ASSERT_EQUAL(window_shift_particle(&cell, PBND_DROP, 6), PBND_DROP);
}

static void test_gather_uniform(void)
{
    float f[G * G];
    for (int k = 0; k < G * G; k++)
        f[k] = 0.25f * (k % G) + 0.5f * (k / G); /* linear field: interpolation is exact */
    for (int hx = 0; hx < 2; hx++)
        for (int hy = 0; hy < 2; hy++) {
            float x = 0.3f, y = 0.8f;
            float want = 0.25f * (3 + x - 0.5f * hx) + 0.5f * (3 + y - 0.5f * hy);
            CU_ASSERT_DOUBLE_EQUAL(gather_component(f, K0, G, x, y, hx, hy), want, 1e-5);
        }
}

static void test_boris_gyration(void)
{
    float e[3] = {0, 0, 0}, b[3] = {0, 0, 1.0f}, u[3] = {1.0f, 0, 0};
    const float dt = 0.05f, qm = -1.0f;
    const int n = 4000;
    double g = sqrt(2.0), phase = 0.0;
    for (int k = 0; k < n; k++) {
        float old = atan2f(u[1], u[0]);
        boris_push(u, e, b, qm * dt * 0.5f);
        double d = atan2f(u[1], u[0]) - old;
        phase += d > M_PI ? d - 2 * M_PI : (d < -M_PI ? d + 2 * M_PI : d);
    }
    double umag = sqrt((double)u[0] * u[0] + (double)u[1] * u[1] + (double)u[2] * u[2]);
    CU_ASSERT_DOUBLE_EQUAL(umag, 1.0, 1e-5);
    /* Boris rotates by 2 atan(w dt / 2) per step, w = |q B / m gamma| */
    double w = 1.0 / g, want = n * 2.0 * atan(w * dt / 2.0);
    CU_ASSERT_DOUBLE_EQUAL(fabs(phase) / want, 1.0, 1e-4);
    CU_ASSERT_DOUBLE_EQUAL(fabs(phase) / (n * dt) / w, 1.0, 1e-3); /* omega_c / gamma */
    CU_ASSERT(phase > 0); /* electrons gyrate counter-clockwise about +z */
}

static void test_boris_uniform_e(void)
{
    float e[3] = {0.1f, -0.05f, 0.02f}, b[3] = {0, 0, 0}, u[3] = {0, 0, 0};
    const float dt = 0.07f;
    for (int k = 0; k < 1000; k++)
        boris_push(u, e, b, 1.0f * dt * 0.5f);
    for (int a = 0; a < 3; a++)
        CU_ASSERT_DOUBLE_EQUAL(u[a], e[a] * dt * 1000, 1e-4 * fabs(e[a] * dt * 1000));
}

static void test_boris_exb(void)
{
    float e[3] = {0, 0.01f, 0}, b[3] = {0, 0, 1.0f}, u[3] = {0, 0, 0};
    const float dt = 0.02f;
    double x = 0.0;
    const int n = 200000; /* ~640 gyrations */
    for (int k = 0; k < n; k++) {
        boris_push(u, e, b, -1.0f * dt * 0.5f);
        x += u[0] / lorentz_gamma(u[0], u[1], u[2]) * dt;
    }
    double vd = x / (n * dt); /* E x B / B^2 = +0.01 along x */
    CU_ASSERT_DOUBLE_EQUAL(vd, 0.01, 1e-4);
}

int main(void)
{
    CU_initialize_registry();
    CU_pSuite s = CU_add_suite("particle", NULL, NULL);
    CU_add_test(s, "Kong split: every crossing case", test_split_cases);
    CU_add_test(s, "Kong split: random moves conserve charge", test_split_random);
    CU_add_test(s, "move: position, cell wrap, migration code", test_move_wrap_migration);
    CU_add_test(s, "sort room and leavers match a simulated sort", test_sort_need);
    CU_add_test(s, "window shift of a particle", test_window_shift);
    CU_add_test(s, "gather exact for linear fields", test_gather_uniform);
    CU_add_test(s, "Boris gyration at omega_c/gamma", test_boris_gyration);
    CU_add_test(s, "Boris uniform E", test_boris_uniform_e);
    CU_add_test(s, "Boris E x B drift", test_boris_exb);
    unsigned fails = tu_run_tests();
    return fails ? 1 : 0;
}
