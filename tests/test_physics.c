/* test_physics.c - the CPU backend against physics: charge conservation, Langmuir
 * oscillation, Yee vacuum dispersion, two-stream growth, energy conservation, the sort under
 * a drifting non-uniform plasma, thread-independent loads. */
#include "emf.h"
#include "cpu_particles.h"
#include "cpu_sort.h"
#include "testutil.h"

#include <omp.h>
#include <stdlib.h>

static double max_abs_rho(const sim *S, const float *rho)
{
    double m = 0.0;
    for (int j = 0; j < S->f.ny; j++)
        for (int i = 0; i < S->f.nx; i++)
            m = fmax(m, fabs(rho[emf_idx(&S->f, i, j)]));
    return m;
}

/* Warm electrons on immobile ions: per-step discrete continuity and Gauss's law. */
static void test_charge_conservation(void)
{
    deck d;
    tu_deck(&d, 48, 40, 0.1, 0.06, 300);
    tu_species(&d, "electrons", -1, 1, 3, 0.15);
    tu_species(&d, "ions", 1, 1836, 3, 0)->immobile = 1;
    d.energy_every = 0;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    emf *f = &S.f;
    float *r0 = malloc(f->size * sizeof(float));
    double worst_cont = 0.0, worst_gauss = 0.0, rho_e = 0.0;
    for (int n = 0; n < 300; n++) {
        S.be->rho(S.be_ctx, &S.st, NULL);
        memcpy(r0, f->rho, f->size * sizeof(float));
        sim_step(&S);
        S.be->rho(S.be_ctx, &S.st, NULL);
        emf_guard_fill(f, f->j[0]);
        emf_guard_fill(f, f->j[1]);
        if (n == 0) {
            float *per = calloc(2 * f->size, sizeof(float));
            S.be->rho(S.be_ctx, &S.st, per);
            rho_e = max_abs_rho(&S, per);
            free(per);
            S.be->rho(S.be_ctx, &S.st, NULL);
        }
        for (int j = 0; j < f->ny; j++)
            for (int i = 0; i < f->nx; i++) {
                int k = emf_idx(f, i, j);
                double c = (f->rho[k] - r0[k]) / f->dt + (f->j[0][k] - f->j[0][k - 1]) / f->dx +
                           (f->j[1][k] - f->j[1][k - f->stride]) / f->dy;
                worst_cont = fmax(worst_cont, fabs(c * f->dt));
            }
        worst_gauss = fmax(worst_gauss, emf_gauss_max(f, f->rho));
    }
    printf(" [continuity %.2e, gauss %.2e of max|rho_e| %.3f] ", worst_cont / rho_e,
           worst_gauss / rho_e, rho_e);
    CU_ASSERT(worst_cont < 1e-5 * rho_e);
    CU_ASSERT(worst_gauss < 1e-5 * rho_e);
    CU_ASSERT(species_misplaced(&S.sp[0], &S.cl) == 0);
    free(r0);
    sim_free(&S);
}

/* Amplitude of the sin(k x) Fourier mode of Ex averaged over y (a velocity perturbation
 * sin(k x) makes rho ~ cos(k x) and Ex ~ sin(k x)). */
static double mode_ex(const sim *S, double k)
{
    double a = 0.0;
    for (int j = 0; j < S->f.ny; j++)
        for (int i = 0; i < S->f.nx; i++)
            a += S->f.e[0][emf_idx(&S->f, i, j)] * sin(k * (i + 0.5) * S->f.dx);
    return a / (S->f.nx * S->f.ny);
}

static void test_langmuir(void)
{
    deck d;
    const int nx = 64;
    const double dx = 0.2, L = nx * dx, k = 2 * M_PI / L, dt = 0.05;
    const int n = 1000;
    tu_deck(&d, nx, 8, dx, dt, n);
    deck_species *e = tu_species(&d, "electrons", -1, 1, 2, 0);
    snprintf(e->drift[0], sizeof e->drift[0], "0.001*sin(2*pi*x/%.17g)", L);
    tu_species(&d, "ions", 1, 1836, 2, 0)->immobile = 1;
    d.energy_every = 0;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    double *a = malloc(n * sizeof(double));
    for (int s = 0; s < n; s++) {
        sim_step(&S);
        a[s] = mode_ex(&S, k);
    }
    double w = tu_peak_frequency(a, n, dt, 0.5, 1.5);
    /* cold plasma leapfrog: sin(w dt / 2) = wp dt / 2 */
    double want = 2.0 / dt * asin(dt / 2.0);
    printf(" [omega = %.5f, theory %.5f] ", w, want);
    CU_ASSERT(fabs(w - 1.0) < 0.01);
    CU_ASSERT(fabs(w / want - 1.0) < 0.002);
    free(a);
    sim_free(&S);
}

/* A standing wave Ez = sin(kx x + ky y) in vacuum oscillates at the Yee frequency
 * sin^2(w dt/2)/dt^2 = sin^2(kx dx/2)/dx^2 + sin^2(ky dy/2)/dy^2. */
static void test_vacuum_dispersion(void)
{
    const int nx = 32, ny = 32, n = 800;
    const double dx = 0.2, dt = 0.1;
    int modes[][2] = {{8, 0}, {4, 4}, {6, 2}};
    for (int m = 0; m < 3; m++) {
        deck d;
        tu_deck(&d, nx, ny, dx, dt, n);
        d.energy_every = 0;
        sim S;
        CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
        double kx = 2 * M_PI * modes[m][0] / (nx * dx), ky = 2 * M_PI * modes[m][1] / (ny * dx);
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++)
                S.f.e[2][emf_idx(&S.f, i, j)] = (float)sin(kx * i * dx + ky * j * dx + 0.3);
        emf_guard_fill(&S.f, S.f.e[2]);
        double *a = malloc(n * sizeof(double));
        for (int s = 0; s < n; s++) {
            sim_step(&S);
            a[s] = S.f.e[2][emf_idx(&S.f, 3, 5)];
        }
        double sx = sin(kx * dx / 2) / dx, sy = sin(ky * dx / 2) / dx;
        double want = 2.0 / dt * asin(dt * sqrt(sx * sx + sy * sy));
        double c_k = sqrt(kx * kx + ky * ky);
        double w = tu_peak_frequency(a, n, dt, 0.5 * want, 1.5 * want);
        printf(" [(%d,%d): omega %.4f, Yee %.4f, ck %.4f] ", modes[m][0], modes[m][1], w, want,
               c_k);
        CU_ASSERT(fabs(w / want - 1.0) < 2e-3);
        CU_ASSERT(fabs(w / c_k - 1.0) > 0.01); /* the grid dispersion is really measured */
        free(a);
        sim_free(&S);
    }
}

/* Two cold counter-streaming beams: growth rate of the seeded mode vs linear theory. */
static void test_two_stream(void)
{
    const double u0 = 0.2, g0 = sqrt(1 + u0 * u0), v0 = u0 / g0;
    const double wb = sqrt(0.5 / (g0 * g0 * g0)); /* per beam, longitudinal mass g^3 m */
    const double kopt = sqrt(3.0) / 2.0 * wb / v0, L = 2 * 2 * M_PI / kopt;
    const int nx = 64, n = 700;
    const double dx = L / nx, dt = 0.6 * dx;
    deck d;
    tu_deck(&d, nx, 4, dx, dt, n);
    d.cluster[1] = 4;
    for (int b = 0; b < 2; b++) {
        deck_species *s = tu_species(&d, b ? "beam2" : "beam1", -1, 1, 8, 0);
        s->n = 0.5;
        s->ppc[1] = 2;
        snprintf(s->drift[0], sizeof s->drift[0], "%s%.17g + 1e-4*sin(2*pi*x/%.17g)",
                 b ? "-" : "", u0, L / 2);
    }
    deck_species *ion = tu_species(&d, "ions", 1, 1836, 8, 0);
    ion->ppc[1] = 2;
    ion->immobile = 1;
    d.energy_every = 0;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    double *a = malloc(n * sizeof(double));
    for (int s = 0; s < n; s++) {
        sim_step(&S);
        double c = 0, si = 0;
        for (int i = 0; i < nx; i++) {
            double ex = 0;
            for (int j = 0; j < 4; j++)
                ex += S.f.e[0][emf_idx(&S.f, i, j)];
            c += ex * cos(kopt * (i + 0.5) * dx);
            si += ex * sin(kopt * (i + 0.5) * dx);
        }
        a[s] = log(sqrt(c * c + si * si));
    }
    /* fit the slope where the mode is between 30x its start and 1/30 of its peak */
    double peak = a[0];
    int ip = 0;
    for (int s = 0; s < n; s++)
        if (a[s] > peak)
            peak = a[ip = s];
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int s = 0; s < ip; s++)
        if (a[s] > a[20] + log(30.0) && a[s] < peak - log(30.0)) {
            double t = s * dt;
            sx += t;
            sy += a[s];
            sxx += t * t;
            sxy += t * a[s];
            m++;
        }
    double rate = (m * sxy - sx * sy) / (m * sxx - sx * sx), want = wb / 2.0;
    printf(" [growth %.4f over %d steps, theory %.4f] ", rate, m, want);
    CU_ASSERT(m > 20);
    CU_ASSERT(fabs(rate / want - 1.0) < 0.1);
    free(a);
    sim_free(&S);
}

static double total_energy(const sim *S)
{
    double t = S->en_e + S->en_b;
    for (int s = 0; s < S->nsp; s++)
        t += S->en_kin[s];
    return t;
}

static void test_energy_conservation(void)
{
    deck d;
    tu_deck(&d, 64, 64, 0.1, 0.05, 401);
    tu_species(&d, "electrons", -1, 1, 4, 0.1);
    tu_species(&d, "ions", 1, 1836, 4, 0)->immobile = 1;
    d.energy_every = 400;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    sim_step(&S);
    double e0 = total_energy(&S);
    for (int s = 1; s <= 400; s++)
        sim_step(&S);
    double e1 = total_energy(&S);
    CU_ASSERT_EQUAL(S.en_step, 400);
    printf(" [total energy %.6g -> %.6g over 400 steps: %+.3f%%] ", e0, e1, 100 * (e1 / e0 - 1));
    CU_ASSERT(fabs(e1 / e0 - 1.0) < 0.01);
    sim_free(&S);
}

/* A dense drifting blob in a near-empty box: clusters overflow and are re-laid; every
 * particle must survive and sit in its own cluster's segment. */
static void test_sort_nonuniform(void)
{
    deck d;
    tu_deck(&d, 64, 48, 0.2, 0.1, 300);
    deck_species *e = tu_species(&d, "electrons", -1, 1, 4, 0.05);
    e->profile = PROFILE_EXPR;
    snprintf(e->density_expr, sizeof e->density_expr,
             "0.01 + 4*exp(-((x-3)^2 + (y-4.8)^2)/0.5)");
    snprintf(e->drift[0], sizeof e->drift[0], "0.9");
    snprintf(e->drift[1], sizeof e->drift[1], "0.5*sin(2*pi*x/12.8)");
    d.energy_every = 0;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    long long np = S.sp[0].np;
    double wsum0 = 0;
    for (int c = 0; c < S.cl.n; c++)
        for (int p = S.sp[0].start[c]; p < S.sp[0].start[c] + S.sp[0].count[c]; p++)
            wsum0 += S.sp[0].w[p];
    for (int s = 0; s < 300; s++) {
        sim_step(&S);
        CU_ASSERT_FATAL(species_misplaced(&S.sp[0], &S.cl) == 0);
    }
    long long n = 0;
    double wsum = 0;
    for (int c = 0; c < S.cl.n; c++) {
        n += S.sp[0].count[c];
        for (int p = S.sp[0].start[c]; p < S.sp[0].start[c] + S.sp[0].count[c]; p++)
            wsum += S.sp[0].w[p];
    }
    printf(" [%lld particles kept, %lld rearrangements] ", n, S.sp[0].rearrangements);
    CU_ASSERT_EQUAL(n, np);
    CU_ASSERT_DOUBLE_EQUAL(wsum, wsum0, 1e-9 * wsum0);
    CU_ASSERT(S.sp[0].rearrangements > 0);
    sim_free(&S);
}

static void test_load_threads(void)
{
    species a, b;
    deck d;
    tu_deck(&d, 40, 24, 0.1, 0.05, 1);
    deck_species *e = tu_species(&d, "electrons", -1, 1, 3, 0.7);
    snprintf(e->drift[2], sizeof e->drift[2], "0.1*cos(x)");
    e->profile = PROFILE_EXPR;
    snprintf(e->density_expr, sizeof e->density_expr, "1 + 0.5*sin(y)");
    clusters cl;
    clusters_init(&cl, &d);
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    species_init(&a, &d, 0, &cl, NULL);
    omp_set_num_threads(2);
    species_init(&b, &d, 0, &cl, NULL);
    omp_set_num_threads(nt);
    CU_ASSERT_EQUAL(a.np, b.np);
    CU_ASSERT(a.alloc == b.alloc);
    int same = 1;
    for (int c = 0; c < cl.n; c++) {
        size_t o = (size_t)a.start[c], n = (size_t)a.count[c] * 4;
        same &= a.start[c] == b.start[c] && a.count[c] == b.count[c];
        same &= !memcmp(a.ux + o, b.ux + o, n) && !memcmp(a.uy + o, b.uy + o, n) &&
                !memcmp(a.uz + o, b.uz + o, n) && !memcmp(a.w + o, b.w + o, n) &&
                !memcmp(a.x + o, b.x + o, n) && !memcmp(a.y + o, b.y + o, n) &&
                !memcmp(a.cell + o, b.cell + o, n);
    }
    CU_ASSERT(same);
    species_free(&a);
    species_free(&b);
    clusters_free(&cl);
}

int main(void)
{
    CU_initialize_registry();
    CU_pSuite s = CU_add_suite("physics", NULL, NULL);
    CU_add_test(s, "charge conservation, warm plasma, 300 steps", test_charge_conservation);
    CU_add_test(s, "Langmuir oscillation at omega_p", test_langmuir);
    CU_add_test(s, "vacuum Yee dispersion", test_vacuum_dispersion);
    CU_add_test(s, "two-stream growth rate", test_two_stream);
    CU_add_test(s, "energy conservation, warm plasma", test_energy_conservation);
    CU_add_test(s, "sort keeps every particle, drifting blob", test_sort_nonuniform);
    CU_add_test(s, "loads identical for 1 and 2 threads", test_load_threads);
    unsigned fails = tu_run_tests();
    return fails ? 1 : 0;
}
