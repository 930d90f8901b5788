/* test_collide.c - binary Coulomb collisions (include/collide.h) on the CPU against theory:
 * the NRL formulary's anisotropy relaxation, electron-ion temperature equilibration and
 * fast-electron slowing down, the pitch-angle scattering of relativistic electrons on heavy
 * ions; conservation per pair and per step; bitwise repeatability for 1 and 2 threads.
 * The collisions run alone (tu_collide: no push, no fields), so that nothing but the
 * collision operator changes the momenta. Rates: the time the simulation takes to reach a
 * set point of the relaxation against the time the theory's equation takes, from the
 * measured initial state; each within 10 %. EMPIC_TEST_BACKEND=cuda (tools/gpu-test) runs
 * the rate and conservation tests with the CUDA backend. */
#include "testutil.h"
#include "phasespace.h"

#include <omp.h>

#define N0 1e21      /* cm^-3: r_e k_p = 1.68e-8 */
#define LNL 10.0     /* the Coulomb logarithm of the rate tests (the theory's too) */
#define KEV (1.0 / 511.0)

static int test_backend = BACKEND_CPU; /* of the tests that run sims */

/* A periodic 8 x 8 box, no diagnostics. */
static void box(deck *d)
{
    tu_deck(d, 8, 8, 0.5, 0.1, 0);
    d->cluster[0] = d->cluster[1] = 8;
    d->backend = test_backend;
}

/* The moments of species s, the device's particles fetched first. */
static tu_moments moments(sim *S, int s)
{
    S->be->fetch_particles(S->be_ctx, &S->st);
    return tu_species_moments(&S->sp[s], &S->cl);
}

/* Linear interpolation of the time at which f (n samples every dt) first crosses level. */
static double crossing(const double *f, int n, double dt, double level)
{
    for (int k = 1; k < n; k++)
        if ((f[k - 1] - level) * (f[k] - level) <= 0.0 && f[k - 1] != f[k])
            return dt * (k - 1 + (f[k - 1] - level) / (f[k - 1] - f[k]));
    return -1.0;
}

static double r_e_kp(void)
{
    double r, l;
    collide_scale(N0, &r, &l);
    return r;
}

/* NRL anisotropy relaxation (like particles): nu_T = 2 sqrt(pi) e^4 n lnL / (m^1/2 T_par^3/2)
 * A^-2 [-3 + (A + 3) atan(A^1/2) / A^1/2], A = T_perp / T_par - 1; in code units
 * nu_T = r_e k_p n lnL F(A) / (2 sqrt(pi) T_par^3/2). */
static double nu_aniso(double tperp, double tpar)
{
    double a = tperp / tpar - 1.0, f;
    f = fabs(a) < 1e-3 ? 4.0 / 15.0
        : a > 0 ? (-3.0 + (a + 3.0) * atan(sqrt(a)) / sqrt(a)) / (a * a)
                : (-3.0 + (a + 3.0) * atanh(sqrt(-a)) / sqrt(-a)) / (a * a);
    return r_e_kp() * LNL * f / (2.0 * sqrt(M_PI) * pow(tpar, 1.5));
}

/* 1. Electrons with T_perp = 2 T_par: the time for T_perp - T_par to halve. */
static void test_isotropization(void)
{
    deck d;
    sim S;
    box(&d);
    deck_species *e = tu_species(&d, "electrons", -1, 1, 16, 0);
    e->uth[0] = e->uth[1] = sqrt(2.0 * KEV);
    e->uth[2] = sqrt(KEV);
    tu_collisions(&d, 0, 0, LNL, N0);
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    enum { NS = 450 };
    const double dt = 10.0;
    double delta[NS + 1];
    tu_moments m = moments(&S, 0);
    double tperp = 0.5 * (m.t[0] + m.t[1]) / m.n, tpar = m.t[2] / m.n, d0 = tperp - tpar;
    delta[0] = d0;
    for (int k = 1; k <= NS; k++) {
        tu_collide(&S, dt, k);
        m = moments(&S, 0);
        delta[k] = 0.5 * (m.t[0] + m.t[1]) / m.n - m.t[2] / m.n;
    }
    double t_sim = crossing(delta, NS + 1, dt, 0.5 * d0), t = 0.0, h = dt / 20.0;
    while (tperp - tpar > 0.5 * d0) { /* dT_perp/dt = -nu (T_perp - T_par), T_par twice */
        double nu = nu_aniso(tperp, tpar), dd = nu * (tperp - tpar) * h;
        tperp -= dd;
        tpar += 2.0 * dd;
        t += h;
    }
    printf(" [T_perp - T_par halves at t = %.4g, NRL %.4g: %+.1f %%] ", t_sim, t,
           100.0 * (t_sim / t - 1.0));
    CU_ASSERT(t_sim > 0 && fabs(t_sim / t - 1.0) < 0.10);
    sim_free(&S);
}

/* NRL temperature equilibration: nu_eq = 8 sqrt(2 pi) / 3 e^4 Z_a^2 Z_b^2 n_b lnL
 * (m_a m_b)^1/2 / (m_a T_b + m_b T_a)^3/2 (NRL's 1.8e-19 is this coefficient rounded), in
 * code units with e^4 n -> r_e k_p n / (4 pi). */
static double nu_eq(double ma, double mb, double ta, double tb, double nb)
{
    return 8.0 * sqrt(2.0 * M_PI) / 3.0 * r_e_kp() * nb * LNL * sqrt(ma * mb) /
           (4.0 * M_PI * pow(ma * tb + mb * ta, 1.5));
}

/* The temperature (3 T = sum w m u.v / n) of species s. */
static double temperature(sim *S, int s)
{
    tu_moments m = moments(S, s);
    return (m.t[0] + m.t[1] + m.t[2]) / (3.0 * m.n);
}

/* 2. Electrons at 2 keV, ions (m = 100 m_e, so that the test is short) at 100 eV (cold ions:
 * their energy's random walk is small against the exchange), with e-e collisions keeping the
 * electrons Maxwellian as the theory assumes (the ions stay so over the test's short time):
 * the mean rate -ln(dT(t) / dT(0)) / t at which dT = T_e - T_i falls (by 5 %). Nanbu's scheme
 * reaches the theory's rate as the step goes to 0 (the slow pairs with s > 1 saturate): a few
 * per cent slow here, at a thermal s of 3e-3. */
static void test_equilibration(void)
{
    deck d;
    sim S;
    box(&d);
    tu_species(&d, "electrons", -1, 1, 16, sqrt(2.0 * KEV));
    tu_species(&d, "ions", 1, 100, 16, sqrt(0.1 * KEV / 100.0));
    tu_collisions(&d, 0, 1, LNL, N0);
    tu_collisions(&d, 0, 0, LNL, N0);
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    const int ns = 300;
    const double dt = 20.0, h = dt / 20.0;
    double te = temperature(&S, 0), ti = temperature(&S, 1), d0 = te - ti;
    for (int k = 1; k <= ns; k++)
        tu_collide(&S, dt, k);
    double r_sim = -log((temperature(&S, 0) - temperature(&S, 1)) / d0) / (ns * dt);
    for (int k = 0; k < ns * 20; k++) { /* equal densities: one nu for both */
        double dd = nu_eq(1.0, 100.0, te, ti, 1.0) * (te - ti) * h;
        te -= dd;
        ti += dd;
    }
    double r = -log((te - ti) / d0) / (ns * dt);
    printf(" [T_e - T_i: mean rate %.4g, NRL %.4g: %+.1f %%] ", r_sim, r, 100.0 * (r_sim / r - 1.0));
    CU_ASSERT(fabs(r_sim / r - 1.0) < 0.10);
    sim_free(&S);
}

/* 3. A 2.5 keV electron beam (density 0.01: weights 100 times lighter than the background's)
 * in 100 eV electrons: NRL's fast-particle rates on electrons (psi = 1, psi' = 0), with
 * nu_0 = r_e k_p n lnL / v^3 in code units: the mean velocity d<v_z>/dt = -nu_s <v_z>,
 * nu_s = 2 nu_0, while the speed falls by the energy loss, dE/dt = -nu_eps E, nu_eps = 2 nu_0,
 * so v^3 = v0^3 - 3 K t / 2 (K = 2 r_e k_p n lnL) and <v_z> / v0 = (1 - 3 K t / (2 v0^3))^2/3.
 * The time for <v_z> to fall to 0.85 v0. */
static void test_slowing_down(void)
{
    deck d;
    sim S;
    box(&d);
    tu_species(&d, "background", -1, 1, 16, sqrt(0.1 * KEV));
    deck_species *b = tu_species(&d, "beam", -1, 1, 8, 1e-3);
    b->n = 0.01;
    snprintf(b->drift[2], sizeof b->drift[2], "0.1");
    tu_collisions(&d, 1, 0, LNL, N0);
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    enum { NS = 120 };
    const double dt = 5.0;
    double v[NS + 1];
    for (int k = 0; k <= NS; k++) {
        if (k)
            tu_collide(&S, dt, k);
        tu_moments m = moments(&S, 1);
        v[k] = m.v[2] / m.n;
    }
    double t_sim = crossing(v, NS + 1, dt, 0.85 * v[0]);
    double t = (1.0 - pow(0.85, 1.5)) * pow(v[0], 3) / (3.0 * r_e_kp() * LNL);
    printf(" [<v_z> at 0.85 v0 at t = %.4g, NRL %.4g: %+.1f %%] ", t_sim, t,
           100.0 * (t_sim / t - 1.0));
    CU_ASSERT(t_sim > 0 && fabs(t_sim / t - 1.0) < 0.10);
    sim_free(&S);
}

/* 5. Relativistic: electrons of u = 1.2 (287 keV) on cold ions of 10^4 m_e: |u| is kept and
 * <u_z> decays at the momentum-transfer rate of Rutherford scattering,
 * nu = 4 pi Z^2 e^4 n_i lnL / (p^2 v) = r_e k_p n_i lnL / (u^2 beta); the time to 1/e. */
static void test_relativistic(void)
{
    deck d;
    sim S;
    box(&d);
    deck_species *e = tu_species(&d, "electrons", -1, 1, 16, 1e-3);
    snprintf(e->drift[2], sizeof e->drift[2], "1.2");
    tu_species(&d, "ions", 1, 1e4, 16, 0);
    tu_collisions(&d, 0, 1, LNL, 1e25);
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    double re, lc;
    collide_scale(1e25, &re, &lc);
    enum { NS = 80 };
    const double dt = 1000.0, u = 1.2, beta = u / sqrt(1 + u * u);
    double uz[NS + 1], ke0 = 0;
    for (int k = 0; k <= NS; k++) {
        if (k)
            tu_collide(&S, dt, k);
        tu_moments m = moments(&S, 0);
        uz[k] = m.p[2] / m.n;
        ke0 = k ? ke0 : m.ke / m.n;
    }
    double t_sim = crossing(uz, NS + 1, dt, uz[0] / M_E), t = u * u * beta / (re * LNL);
    tu_moments m = moments(&S, 0);
    printf(" [<u_z> at 1/e at t = %.4g, theory %.4g: %+.1f %%; electron energy %+.2g] ", t_sim,
           t, 100.0 * (t_sim / t - 1.0), m.ke / m.n / ke0 - 1.0);
    CU_ASSERT(t_sim > 0 && fabs(t_sim / t - 1.0) < 0.10);
    CU_ASSERT(fabs(m.ke / m.n / ke0 - 1.0) < 0.01);
    sim_free(&S);
}

/* Kinetic energy of momentum u (per mass) of mass m. */
static double kin(const float u[3], double m) { return kinetic_energy(u[0], u[1], u[2], m); }

/* 4a. One pair at a time, the momenta in single precision as stored: momentum and kinetic
 * energy kept to the rounding of the stored momenta (a few 1e-8 of the momenta, 1e-7 of the
 * pair's kinetic energy), and the energy's change unbiased (its mean over 400 000 pairs within
 * 4 standard errors of 0); equal masses and electron-ion, 2 eV to relativistic, small and large
 * s. */
static void test_pair_conservation(void)
{
    enum { NP = 400000 };
    rng_stream r;
    collide_par p = {.a = 0, .b = 1, .lnl = 0, .dt = 1e3, .seed = 3};
    collide_scale(1e23, &p.re_kp, &p.lc_kp);
    collide_cell c = {.bmax2 = 1e-2, .nmin = 16, .cap = 1e30};
    double worst_p = 0, worst_e = 0, sum = 0, sum2 = 0;
    rng_init(&r, 11, 0, 0, 0);
    for (int k = 0; k < NP; k++) {
        const double m2 = k & 1 ? 1836.0 : 1.0, sc = (k & 6) == 0 ? 0.003 : k & 2 ? 1.0 : 0.044;
        float u1[3], u2[3];
        for (int a = 0; a < 3; a++) {
            u1[a] = (float)(sc * rng_normal(&r));
            u2[a] = (float)(sc / sqrt(m2) * rng_normal(&r));
        }
        const double e0 = kin(u1, 1.0) + kin(u2, m2);
        double p0[3], pn = 0;
        for (int a = 0; a < 3; a++) {
            p0[a] = u1[a] + m2 * u2[a];
            pn += fabs(u1[a]) + m2 * fabs(u2[a]);
        }
        rng_stream q;
        p.step = k;
        collide_rng(&q, &p, 0, 0, 0);
        collide_pair(u1, u2, 1.0f, (float)m2, -1.0f, 1.0f, 1.0f,
                     k & 8 ? 1.0f : (k & 16 ? 1e4f : 1e-3f), &p, &c, &q);
        const double de = (kin(u1, 1.0) + kin(u2, m2) - e0) / e0;
        for (int a = 0; a < 3; a++)
            worst_p = fmax(worst_p, fabs(u1[a] + m2 * u2[a] - p0[a]) / pn);
        worst_e = fmax(worst_e, fabs(de));
        sum += de;
        sum2 += de * de;
    }
    const double mean = sum / NP, se = sqrt(sum2 / NP) / sqrt((double)NP);
    printf(" [worst relative change of the momentum %.2g, of the kinetic energy %.2g; its mean "
           "%.2g +- %.2g] ", worst_p, worst_e, mean, se);
    CU_ASSERT(worst_p < 1e-7);
    CU_ASSERT(worst_e < 1e-6);
    CU_ASSERT(fabs(mean) < 4.0 * se);
}

/* The computed Coulomb logarithm, a check of the units: a cell of 1 keV electrons at 1e21
 * cm^-3 has the Debye length sqrt(T / n) (code units), and a thermal pair (relative speed
 * sqrt(6 T)) gets ln L = s(computed) / s(ln L = 1) near the NRL formulary's
 * 24 - ln(n^1/2 / T) = 6.7 (the quantum minimum impact parameter hbar / 2p* gives 7.6). */
static void test_coulomb_log(void)
{
    collide_par p = {.lnl = 0.0, .dt = 1.0}, q;
    collide_scale(N0, &p.re_kp, &p.lc_kp);
    q = p;
    q.lnl = 1.0;
    collide_moments m = {0.0, 0.0, 0};
    rng_stream r;
    rng_init(&r, 1, 0, 0, 0);
    for (int k = 0; k < 65536; k++)
        collide_moments_add(&m, 1.0, 1.0f / 65536, sqrt(KEV) * rng_normal(&r),
                            sqrt(KEV) * rng_normal(&r), sqrt(KEV) * rng_normal(&r));
    collide_cell c = collide_cell_of(&p, &m, &m, -1.0, -1.0, 1.0, 1.0, 1);
    double v = sqrt(1.5 * KEV), g = sqrt(1.0 + v * v); /* each of the pair in the COM frame */
    double lnl = collide_s(&p, &c, 1.0, 1.0, 1.0, g, g, g, g, v, 1.0) /
                 collide_s(&q, &c, 1.0, 1.0, 1.0, g, g, g, g, v, 1.0);
    double nrl = 24.0 - log(sqrt(N0) / 1000.0);
    printf(" [Debye length %.4g (sqrt(T/n) %.4g); ln L %.3g, NRL %.3g] ", sqrt(c.bmax2),
           sqrt(KEV), lnl, nrl);
    CU_ASSERT(fabs(sqrt(c.bmax2) / sqrt(KEV) - 1.0) < 0.02);
    CU_ASSERT(fabs(lnl / nrl - 1.0) < 0.2);
}

/* Total momentum and kinetic energy of all species. */
static void totals(sim *S, double p[3], double *ke, double *pn)
{
    p[0] = p[1] = p[2] = *ke = *pn = 0;
    for (int s = 0; s < S->nsp; s++) {
        tu_moments m = moments(S, s);
        for (int a = 0; a < 3; a++) {
            p[a] += m.p[a];
            *pn += sqrt(m.t[a] * m.n * S->sp[s].m); /* the momentum scale: n sqrt(m T) */
        }
        *ke += m.ke;
    }
}

/* 4b. Steps of an electron-ion plasma in single precision: the totals change by rounding
 * alone (equal weights). With the beam's weights 100 times lighter, a background particle
 * takes the scattering in 1 pair of 100 (the rejection), so each step changes the totals at
 * random: conserved on average, the mean change of 40 steps within 3 standard errors of 0. */
static void conservation_case(int beam)
{
    deck d;
    sim S;
    box(&d);
    tu_species(&d, "electrons", -1, 1, 8, 0.05);
    deck_species *i = tu_species(&d, "ions", 1, 100, 8, 0.005);
    if (beam) {
        i->n = 0.01;
        i->mass = 1;
        i->charge = -1;
        snprintf(i->drift[0], sizeof i->drift[0], "0.2");
    }
    tu_collisions(&d, 0, 1, 0.0, N0 * 100);
    tu_collisions(&d, 0, 0, 0.0, N0 * 100);
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    enum { NS = 40 };
    double p0[3], e0, pn, p1[3], e1, de[NS], worst_p = 0, worst_e = 0, mean = 0, var = 0;
    totals(&S, p0, &e0, &pn);
    for (int k = 0; k < NS; k++) {
        tu_collide(&S, 20.0, k);
        totals(&S, p1, &e1, &pn);
        de[k] = e1 / e0 - 1.0;
        worst_e = fmax(worst_e, fabs(de[k]));
        for (int a = 0; a < 3; a++)
            worst_p = fmax(worst_p, fabs(p1[a] - p0[a]) / pn);
        memcpy(p0, p1, sizeof p0);
        e0 = e1;
        mean += de[k] / NS;
    }
    for (int k = 0; k < NS; k++)
        var += (de[k] - mean) * (de[k] - mean) / (NS - 1);
    printf(" [%s: largest change per step: momentum %.2g of n sqrt(m T), energy %.2g; mean "
           "energy change %.2g +- %.2g] ", beam ? "unequal weights" : "equal weights", worst_p,
           worst_e, mean, sqrt(var / NS));
    CU_ASSERT(beam ? fabs(mean) < 3.0 * sqrt(var / NS) : worst_p < 1e-7 && worst_e < 1e-7);
    sim_free(&S);
}

static void test_step_conservation(void)
{
    conservation_case(0);
    conservation_case(1);
}

/* 6. A whole run (push, fields, sort and collisions, e-e sub-cycled) on 1 and on 2 threads,
 * twice: the particles are bitwise the same. */
static void run_threads(int threads, sim *S)
{
    deck d;
    tu_deck(&d, 32, 24, 0.3, 0.15, 30);
    d.cluster[0] = d.cluster[1] = 8;
    tu_blob_species(&d);
    d.species[2].immobile = 0;
    tu_collisions(&d, 0, 1, 0.0, 1e22);
    tu_collisions(&d, 1, 1, 0.0, 1e22);
    tu_collisions(&d, 1, 2, 5.0, 1e22);
    d.collisions[1].every = 3;
    int nt = omp_get_max_threads();
    omp_set_num_threads(threads);
    CU_ASSERT_FATAL(sim_init(S, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(S) == 0);
    omp_set_num_threads(nt);
}

static int same_particles(const sim *a, const sim *b)
{
    int same = 1;
    for (int s = 0; s < a->nsp; s++) {
        const species *p = &a->sp[s], *q = &b->sp[s];
        same &= p->np == q->np;
        for (int c = 0; same && c < a->cl.n; c++) {
            size_t o = (size_t)p->start[c], n = (size_t)p->count[c] * 4;
            same &= p->start[c] == q->start[c] && p->count[c] == q->count[c] &&
                    !memcmp(p->ux + o, q->ux + o, n) && !memcmp(p->uy + o, q->uy + o, n) &&
                    !memcmp(p->uz + o, q->uz + o, n) && !memcmp(p->x + o, q->x + o, n) &&
                    !memcmp(p->cell + o, q->cell + o, n);
        }
    }
    return same;
}

static void test_threads(void)
{
    sim A, B, C, N;
    run_threads(1, &A);
    run_threads(2, &B);
    run_threads(2, &C);
    CU_ASSERT(same_particles(&A, &B));
    CU_ASSERT(same_particles(&B, &C));
    /* and the collisions did something: the same run without them differs */
    deck d = A.d;
    d.ncollisions = 0;
    CU_ASSERT_FATAL(sim_init(&N, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&N) == 0);
    CU_ASSERT(!same_particles(&A, &N));
    sim_free(&A);
    sim_free(&B);
    sim_free(&C);
    sim_free(&N);
}

int main(void)
{
    const char *b = getenv("EMPIC_TEST_BACKEND");
    test_backend = b && !strcmp(b, "cuda") ? BACKEND_CUDA : BACKEND_CPU;
    CU_initialize_registry();
    CU_pSuite s = CU_add_suite("collisions", NULL, NULL);
    CU_add_test(s, "pair: momentum and energy to rounding", test_pair_conservation);
    CU_add_test(s, "step: totals kept (equal weights), on average (unequal)",
                test_step_conservation);
    CU_add_test(s, "computed Coulomb logarithm: Debye length, NRL's value",
                test_coulomb_log);
    CU_add_test(s, "e-e isotropization at the NRL rate", test_isotropization);
    CU_add_test(s, "e-i temperature equilibration at the NRL rate", test_equilibration);
    CU_add_test(s, "fast electron slowing down at the NRL rate", test_slowing_down);
    CU_add_test(s, "relativistic electrons on ions: pitch-angle rate", test_relativistic);
    CU_add_test(s, "bitwise for 1 and 2 threads, repeatable", test_threads);
    return tu_run_tests() ? 1 : 0;
}
