/* test_particle.c - unit physics of include/particle.h: Kong's split for every crossing case,
 * exact discrete continuity of the deposit, Boris gyration, uniform-E acceleration, E x B. */
#include "particle.h"
#include "testutil.h"

#include <stdlib.h>

#define G 7 /* 7x7 test mesh, particle cell at (3,3) */
#define K0 (3 + 3 * G)

/* rho before/after and J of one move from (x0,y0) to (x1,y1) in cell (3,3), unit cells,
 * dt = 1, q w = 1; returns max |rho1 - rho0 + div J| over the mesh. */
static double continuity(float x0, float y0, float x1, float y1, float *jzsum)
{
    float jx[G * G] = {0}, jy[G * G] = {0}, jz[G * G] = {0}, r0[G * G] = {0}, r1[G * G] = {0};
    deposit_move(jx, jy, jz, K0, G, x0, y0, x1, y1, 1.0f, 1.0f, 1.0f);
    deposit_charge(r0, K0, G, x0, y0, 1.0f);
    float xe = x1, ye = y1;
    int di = offset_wrap(&xe), dj = offset_wrap(&ye);
    deposit_charge(r1, K0 + di + dj * G, G, xe, ye, 1.0f);
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
    float jz;
    CU_ASSERT(pieces_in_cells(x0, y0, x1, y1, &middle));
    if (want_middle >= 0) /* -1: a corner hit up to float rounding */
        CU_ASSERT_EQUAL(middle, want_middle);
    CU_ASSERT(continuity(x0, y0, x1, y1, &jz) < 2e-7);
    CU_ASSERT_DOUBLE_EQUAL(jz, 1.0, 1e-6);
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
        float jz;
        ok &= pieces_in_cells(x0, y0, x0 + dx, y0 + dy, &middle);
        double c = continuity(x0, y0, x0 + dx, y0 + dy, &jz);
        worst = c > worst ? c : worst;
        ok &= fabsf(jz - 1.0f) < 1e-6f;
    }
    CU_ASSERT(ok);
    CU_ASSERT(worst < 5e-7);
    printf(" [max continuity residual %.2e over 2e5 random moves] ", worst);
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
    CU_add_test(s, "gather exact for linear fields", test_gather_uniform);
    CU_add_test(s, "Boris gyration at omega_c/gamma", test_boris_gyration);
    CU_add_test(s, "Boris uniform E", test_boris_uniform_e);
    CU_add_test(s, "Boris E x B drift", test_boris_exb);
    unsigned fails = tu_run_tests();
    return fails ? 1 : 0;
}
