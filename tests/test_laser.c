/* test_laser.c - laser-plasma physics of the CPU backend: PML reflection, Gaussian beam
 * waist/focus/amplitude/polarisation, super-Gaussian and flat-top profiles, oblique
 * incidence (direction, energy, specular reflection), group velocity
 * in plasma, the moving window, particle walls and the linear wake wavelength. */
#include "emf.h"
#include "fbnd.h"
#include "pbnd.h"
#include "testutil.h"

#include <stdlib.h>

static void set_fbnd(deck *d, int x, int y)
{
    d->fbnd[SIDE_XMIN] = d->fbnd[SIDE_XMAX] = x;
    d->fbnd[SIDE_YMIN] = d->fbnd[SIDE_YMAX] = y;
    d->pml_cells = 16;
}

/* Piecewise profile 0 before x0, rising linearly to 1 at x1 (owned by the deck). */
static void set_ramp(deck_pwl *p, double x0, double x1)
{
    p->n = 2;
    p->s = malloc(2 * sizeof(double));
    p->f = malloc(2 * sizeof(double));
    p->s[0] = x0, p->s[1] = x1, p->f[0] = 0.0, p->f[1] = 1.0;
}

static deck_laser *add_laser(deck *d, double a0, double omega0, double w0, double focus,
                             double center, double duration, int envelope)
{
    deck_laser *L = &d->lasers[d->nlasers++];
    memset(L, 0, sizeof *L);
    L->a0 = a0;
    L->omega0 = omega0;
    L->w0 = w0;
    L->focus = focus;
    L->center = center;
    L->duration = duration;
    L->envelope = envelope;
    L->ramp = duration / 4;
    L->boundary = SIDE_XMIN;
    return L;
}

/* ---------------------------------------------------------------------------------------
 * PML reflection: a tilted plane-wave pulse (periodic in y) runs into the xmax layer; the
 * same pulse in a box twice as long is the reflection-free reference, and the difference of
 * the two E fields over the shared interior is the reflected wave. */

/* Pulse g(x - x0) cos(kx x + ky y - w t) with |k| = w = 2 pi, angle theta; TE (Ex, Ey, Bz)
 * or TM (Ez, Bx, By); E at t = 0, B at t = -dt/2. */
static void init_pulse(sim *S, double x0, double sig, double theta, int tm)
{
    emf *f = &S->f;
    const double k = 2 * M_PI, kx = k * cos(theta), ky = k * sin(theta);
    const double c = cos(theta), s = sin(theta);
    for (int j = 0; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++) {
            int q = emf_idx(f, i, j);
            double xs[2] = {i * f->dx, (i + 0.5) * f->dx}, ys[2] = {j * f->dy, (j + 0.5) * f->dy};
#define WAVE(x, y, t)                                                                          \
    (exp(-0.5 * pow(((x) - x0 - c * (t)) / sig, 2)) * cos(kx * (x) + ky * (y) - k * (t)))
            double th = -0.5 * f->dt;
            if (tm) {
                f->e[2][q] = (float)WAVE(xs[0], ys[0], 0.0);
                f->b[0][q] = (float)(s * WAVE(xs[0], ys[1], th));
                f->b[1][q] = (float)(-c * WAVE(xs[1], ys[0], th));
            } else {
                f->e[0][q] = (float)(-s * WAVE(xs[1], ys[0], 0.0));
                f->e[1][q] = (float)(c * WAVE(xs[0], ys[1], 0.0));
                f->b[2][q] = (float)WAVE(xs[1], ys[1], th);
            }
#undef WAVE
        }
    for (int a = 0; a < 3; a++) {
        emf_guard_fill(f, f->e[a]);
        emf_guard_fill(f, f->b[a]);
    }
}

/* Reflected amplitude / incident amplitude for angle theta off an x side of type `type`. */
static double reflection(double theta, int tm, int type)
{
    const double dx = 1.0 / 32, lam = 1.0, sig = 1.0;
    const int np = 16, ahead = 8 * 32, behind = 5 * 32;
    int ny = 4;
    double dy = dx;
    if (theta > 0) {
        double ly = lam / sin(theta);
        ny = (int)lround(ly / dx);
        ny += ny & 1;
        dy = ly / ny;
    }
    const double dt = 0.02, T = 12.0;
    const int steps = (int)lround(T / dt);
    float *ref = NULL;
    double refl = 0.0, inc = 0.0;
    for (int run = 0; run < 2; run++) {
        deck d;
        int nx = np + behind + ahead + np + (run == 0 ? 16 * 32 : 0);
        tu_deck(&d, nx, ny, dx, dt, steps);
        d.dy = dy;
        d.cluster[1] = ny / 2 < 16 ? ny / 2 : 16;
        d.energy_every = 0;
        set_fbnd(&d, type, FBND_PERIODIC);
        sim S;
        CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
        init_pulse(&S, (np + behind) * dx, sig, theta, tm);
        if (run == 1)
            for (int j = 0; j < ny; j++)
                for (int i = 0; i < nx; i++)
                    for (int a = 0; a < 3; a++)
                        inc = fmax(inc, fabs(S.f.e[a][emf_idx(&S.f, i, j)]));
        for (int n = 0; n < steps; n++)
            sim_step(&S);
        /* the shared interior, from the left layer to the right layer of the short box */
        const int i0 = np, i1 = np + behind + ahead, w = i1 - i0;
        if (run == 0) {
            ref = malloc((size_t)3 * w * ny * sizeof(float));
            for (int a = 0; a < 3; a++)
                for (int j = 0; j < ny; j++)
                    for (int i = i0; i < i1; i++)
                        ref[(a * ny + j) * w + i - i0] = S.f.e[a][emf_idx(&S.f, i, j)];
        } else {
            for (int j = 0; j < ny; j++)
                for (int i = i0; i < i1; i++) {
                    double e2 = 0;
                    for (int a = 0; a < 3; a++) {
                        double df = S.f.e[a][emf_idx(&S.f, i, j)] - ref[(a * ny + j) * w + i - i0];
                        e2 += df * df;
                    }
                    refl = fmax(refl, sqrt(e2));
                }
        }
        sim_free(&S);
    }
    free(ref);
    return refl / inc;
}

static void test_pml_reflection(void)
{
    double r0 = reflection(0.0, 0, FBND_PML), r0m = reflection(0.0, 1, FBND_PML);
    double r30 = reflection(M_PI / 6, 0, FBND_PML), r45 = reflection(M_PI / 4, 0, FBND_PML);
    double r60 = reflection(M_PI / 3, 1, FBND_PML);
    double m0 = reflection(0.0, 0, FBND_MUR), m30 = reflection(M_PI / 6, 0, FBND_MUR);
    printf(" [16-cell PML, lambda = 32 cells: normal %.2e (TE) %.2e (TM); 30 deg %.2e, 45 deg "
           "%.2e, 60 deg %.2e (TM). Mur: normal %.2e, 30 deg %.2e] ",
           r0, r0m, r30, r45, r60, m0, m30);
    CU_ASSERT(r0 < 1e-3);
    CU_ASSERT(r0m < 1e-3);
    CU_ASSERT(r30 < 1e-3 && r45 < 1e-3 && r60 < 1e-3);
    CU_ASSERT(m0 < 1e-2);
    CU_ASSERT(m30 < 0.1); /* first order: (1 - cos)/(1 + cos) = 0.072 at 30 degrees */
}

/* A plane-wave-like beam from each side: amplitude a0 omega0 and the direction from the sign
 * of E1 Bz (+ along +x or -y, - along -x or +y); PML boundaries, Mur for ymax. */
static void test_laser_sides(void)
{
    const double w = 2 * M_PI, dx = 1.0 / 24, a0 = 0.5;
    const int sides[3] = {SIDE_XMAX, SIDE_YMIN, SIDE_YMAX};
    const double want[3] = {-1, -1, 1};
    for (int k = 0; k < 3; k++) {
        const int ax = sides[k] >= SIDE_YMIN;
        deck d;
        tu_deck(&d, ax ? 4 : 300, ax ? 300 : 4, dx, dx / 2, 0);
        d.cluster[ax ? 0 : 1] = 2;
        d.energy_every = 0;
        int open = k == 2 ? FBND_MUR : FBND_PML; /* ymax: the source plane beside a Mur edge */
        set_fbnd(&d, ax ? FBND_PERIODIC : open, ax ? open : FBND_PERIODIC);
        deck_laser *L = add_laser(&d, a0, w, 1e5, 6.0, 0.0, 1000.0, ENV_FLATTOP);
        L->ramp = 3.0;
        L->boundary = sides[k];
        sim S;
        CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
        const int n0 = (int)lround(13.0 / d.dt), n = (int)lround(2.0 / d.dt);
        double emax = 0, eb = 0, ee = 0, bb = 0;
        for (int m = 0; m < n0 + n; m++) {
            sim_step(&S);
            if (m < n0)
                continue;
            int q = ax ? emf_idx(&S.f, 1, 150) : emf_idx(&S.f, 150, 1);
            double e1 = ax ? S.f.e[0][q] : S.f.e[1][q], bz = S.f.b[2][q];
            emax = fmax(emax, fabs(e1));
            eb += e1 * bz, ee += e1 * e1, bb += bz * bz;
        }
        printf(" [%s: peak %.4f (a0 w0 %.4f), E1 Bz correlation %+.3f] ",
               k == 0 ? "xmax" : k == 1 ? "ymin" : "ymax", emax, a0 * w, eb / sqrt(ee * bb));
        CU_ASSERT(fabs(emax / (a0 * w) - 1) < 0.02);
        CU_ASSERT(eb / sqrt(ee * bb) * want[k] > 0.9);
        sim_free(&S);
    }
}

/* ---------------------------------------------------------------------------------------
 * Gaussian beam in vacuum: time-averaged E^2 of a long flat-top beam at steady state. */

typedef struct {
    int nx, ny;
    double *eyy, *ezz, *eyz; /* time averages at the Ez nodes (Ey interpolated) */
} beam_avg;

static void avg_accumulate(beam_avg *a, const sim *S, double wgt)
{
    const emf *f = &S->f;
    for (int j = 1; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++) {
            int k = emf_idx(f, i, j);
            double ey = 0.5 * (f->e[1][k] + f->e[1][k - f->stride]), ez = f->e[2][k];
            size_t q = (size_t)j * f->nx + i;
            a->eyy[q] += wgt * ey * ey;
            a->ezz[q] += wgt * ez * ez;
            a->eyz[q] += wgt * ey * ez;
        }
}

/* Run a flat-top beam until steady state over the box and average E^2 over 4 periods. */
static void beam_run(deck *d, beam_avg *a, double t_front)
{
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, d, 1) == 0);
    const double period = 2 * M_PI / d->lasers[0].omega0;
    const int nav = (int)lround(4 * period / d->dt);
    const long start = (long)ceil(t_front / d->dt);
    a->nx = d->nx;
    a->ny = d->ny;
    a->eyy = calloc((size_t)d->nx * d->ny, sizeof(double));
    a->ezz = calloc((size_t)d->nx * d->ny, sizeof(double));
    a->eyz = calloc((size_t)d->nx * d->ny, sizeof(double));
    for (long n = 0; n < start + nav; n++) {
        sim_step(&S);
        if (n >= start)
            avg_accumulate(a, &S, 1.0 / nav);
    }
    sim_free(&S);
}

static void avg_free(beam_avg *a)
{
    free(a->eyy);
    free(a->ezz);
    free(a->eyz);
}

static void test_gaussian_beam(void)
{
    /* 24 cells per wavelength: the Yee grid diffracts faster than vacuum by about
     * 0.135 (k dx)^2 = 0.9% (20 cells: 1.3%) */
    const double lam = 1.0, w = 2 * M_PI / lam, dx = lam / 24, w0 = 2.5, xf = 13.0;
    const double a0 = 0.5, theta = 0.3, xr = 0.5 * w * w0 * w0;
    const int nx = 28 * 24, ny = 20 * 24;
    deck d;
    tu_deck(&d, nx, ny, dx, lam / 48, 0);
    d.cluster[0] = d.cluster[1] = 32;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PML);
    deck_laser *L = add_laser(&d, a0, w, w0, xf, 0.5 * ny * dx, 1000.0, ENV_FLATTOP);
    L->ramp = 4.0;
    L->polarization = theta;
    beam_avg a;
    beam_run(&d, &a, nx * dx + L->ramp + 2.0);
    /* w(x) from the second moment of <E^2> across y, on columns clear of the layers */
    const int jc = ny / 2;
    double worst_w = 0, sx = 0, sx2 = 0, sx3 = 0, sx4 = 0, sy = 0, sxy = 0, sx2y = 0;
    int m = 0, ifocus = 0;
    double peak = 0, pyy = 0, pzz = 0, pyz = 0;
    for (int i = 40; i < nx - 24; i += 6) {
        double s0 = 0, s1 = 0, s2 = 0, x = i * dx;
        for (int j = 20; j < ny - 20; j++) {
            size_t q = (size_t)j * nx + i;
            double e2 = a.eyy[q] + a.ezz[q], y = j * dx;
            s0 += e2;
            s1 += e2 * y;
            s2 += e2 * y * y;
        }
        double mean = s1 / s0, wm = 2 * sqrt(s2 / s0 - mean * mean);
        double wt = w0 * sqrt(1 + pow((x - xf) / xr, 2));
        worst_w = fmax(worst_w, fabs(wm / wt - 1));
        double X = x - xf, Y = wm * wm; /* fit w^2 = A + B x + C x^2 */
        sx += X, sx2 += X * X, sx3 += X * X * X, sx4 += X * X * X * X;
        sy += Y, sxy += X * Y, sx2y += X * X * Y;
        m++;
    }
    for (int i = 40; i < nx - 24; i++) {
        size_t q = (size_t)jc * nx + i;
        double amp = sqrt(2 * (a.eyy[q] + a.ezz[q]));
        if (amp > peak)
            peak = amp, ifocus = i;
    }
    for (size_t q = 0; q < (size_t)nx * ny; q++)
        pyy += a.eyy[q], pzz += a.ezz[q], pyz += a.eyz[q];
    /* least squares for the parabola */
    double M[3][4] = {{m, sx, sx2, sy}, {sx, sx2, sx3, sxy}, {sx2, sx3, sx4, sx2y}};
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            if (r != c) {
                double g = M[r][c] / M[c][c];
                for (int k = 0; k < 4; k++)
                    M[r][k] -= g * M[c][k];
            }
    double A = M[0][3] / M[0][0], B = M[1][3] / M[1][1], C = M[2][3] / M[2][2];
    double xfit = xf - B / (2 * C), w0fit = sqrt(A - B * B / (4 * C)), xrfit = w0fit / sqrt(C);
    double ratio = sqrt(pzz / pyy), corr = pyz / sqrt(pyy * pzz);
    printf(" [w(x) within %.2f%% of w0 sqrt(1+(x-xf)^2/xR^2); fit: focus %.3f (%.3f), w0 %.4f "
           "(%.4f), xR %.3f (%.3f); peak |E| %.4f at x = %.2f, a0 w0 = %.4f; Ez/Ey %.4f, tan "
           "%.4f, correlation %.5f] ",
           100 * worst_w, xfit, xf, w0fit, w0, xrfit, xr, peak, ifocus * dx, a0 * w, ratio,
           tan(theta), corr);
    CU_ASSERT(worst_w < 0.02);
    CU_ASSERT(fabs(xfit - xf) < 0.02 * xr);
    CU_ASSERT(fabs(w0fit / w0 - 1) < 0.02);
    CU_ASSERT(fabs(peak / (a0 * w) - 1) < 0.02);
    CU_ASSERT(fabs(ratio / tan(theta) - 1) < 0.01);
    CU_ASSERT(corr > 0.999);
    avg_free(&a);
}

/* ---------------------------------------------------------------------------------------
 * Transverse profiles at the source plane: sqrt(2 <Ey^2>) two cells past the plane of a long
 * beam focused on the plane against a0 omega0 f(|y - yc|/w0), f computed here:
 * super-Gaussian exp(-a^N), flat-top 1 inside w0 with a cos^2 edge of width e beyond. The
 * grid smooths what varies within a wavelength (near-field diffraction: 3.5 % off at an edge
 * of one wavelength), so the edges here are smooth; the hard edge is checked on laser_field. */
static double profile_formula(int profile, double order, double edge, double a, double w0)
{
    if (profile == LPROF_SUPERGAUSSIAN)
        return exp(-pow(a, order));
    if (profile == LPROF_FLATTOP) {
        double r = a * w0 - w0; /* beyond the flat part */
        return r <= 0 ? 1.0 : r >= edge ? 0.0 : pow(cos(M_PI / 2 * r / edge), 2);
    }
    return exp(-a * a);
}

static void test_transverse_profiles(void)
{
    const double w = 2 * M_PI, dx = 1.0 / 24, a0 = 0.5, w0 = 2.5;
    const int nx = 120, ny = 240, plane = 16 + 2, probe = plane + 2;
    const int prof[3] = {LPROF_SUPERGAUSSIAN, LPROF_FLATTOP, LPROF_SUPERGAUSSIAN};
    const double order[3] = {4, 0, 6}, edge[3] = {0, 2.0, 0};
    for (int k = 0; k < 3; k++) {
        deck d;
        tu_deck(&d, nx, ny, dx, dx / 2, 0);
        d.cluster[0] = d.cluster[1] = 24;
        d.energy_every = 0;
        set_fbnd(&d, FBND_PML, FBND_PML);
        deck_laser *L = add_laser(&d, a0, w, w0, plane * dx, 0.5 * ny * dx, 1000.0,
                                  ENV_FLATTOP);
        L->ramp = 2.0;
        L->profile = prof[k];
        L->order = order[k];
        L->edge = edge[k];
        beam_avg a;
        beam_run(&d, &a, probe * dx + L->ramp + 1.0);
        double worst = 0, inside = 0;
        for (int j = 20; j < ny - 20; j++) {
            double y = j * dx, r = fabs(y - 0.5 * ny * dx) / w0;
            double amp = sqrt(2 * a.eyy[(size_t)j * nx + probe]) / (a0 * w);
            double want = profile_formula(prof[k], order[k], edge[k], r, w0);
            worst = fmax(worst, fabs(amp - want));
            if (prof[k] == LPROF_FLATTOP && r < 0.9)
                inside = fmax(inside, fabs(amp - 1));
        }
        printf(" [%s order %g edge %g: |amplitude/(a0 w0) - f| <= %.4f, on the flat %.4f] ",
               prof[k] == LPROF_FLATTOP ? "flattop" : "supergaussian", order[k], edge[k],
               worst, inside);
        CU_ASSERT(worst < 0.015);
        CU_ASSERT(inside < 0.005);
        avg_free(&a);
    }
    /* laser_field at the focal plane against the formulas, the hard flat-top edge included */
    laser_beam b = {.amp = 2.0, .omega0 = w, .w0 = w0, .xr = 0.5 * w * w0 * w0, .xi_focus = 1.0,
                    .center = 5.0, .c1 = 1.0, .envelope = LASER_FLATTOP, .duration = 100,
                    .ramp = 1.0, .profile = LASER_FLATTOP_BEAM, .edge = 0.0};
    double e1, e2;
    const double t = 1.0 + 10.0; /* tau = 10: on the flat top, omega0 tau = 20 pi */
    laser_field(&b, 1.0, 5.0 + 0.999 * w0, t, &e1, &e2);
    CU_ASSERT(fabs(e1 - 2.0) < 1e-9);
    laser_field(&b, 1.0, 5.0 - 1.001 * w0, t, &e1, &e2);
    CU_ASSERT(e1 == 0.0 && e2 == 0.0);
    b.profile = LASER_SUPERGAUSSIAN;
    b.order = 6;
    for (double r = 0; r < 2 * w0; r += 0.37) {
        laser_field(&b, 1.0, 5.0 + r, t + 0.01, &e1, &e2);
        CU_ASSERT(fabs(e1 - 2.0 * exp(-pow(r / w0, 6)) * cos(w * 10.01)) < 1e-9);
    }
}

/* Circular polarisation: a plane-wave-like beam (w0 much wider than the periodic box) has
 * |E| = a0 omega0 at all times, Ey and Ez of equal power and 90 degrees apart. */
static void test_circular(void)
{
    const double w = 2 * M_PI, dx = 1.0 / 24, a0 = 0.5;
    deck d;
    tu_deck(&d, 300, 4, dx, dx / 2, 0);
    d.cluster[1] = 2;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PERIODIC);
    deck_laser *L = add_laser(&d, a0, w, 1e5, 5.0, 0.0, 1000.0, ENV_FLATTOP);
    L->ramp = 3.0;
    L->circular = 1;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    const int probe = 200, n0 = (int)lround(13.0 / d.dt), n = (int)lround(2.0 / d.dt);
    double emin = 1e30, emax = 0, syy = 0, szz = 0, syz = 0;
    for (int k = 0; k < n0 + n; k++) {
        sim_step(&S);
        if (k < n0)
            continue;
        int q = emf_idx(&S.f, probe, 1);
        double ey = S.f.e[1][q], ez = S.f.e[2][q], e = sqrt(ey * ey + ez * ez);
        emin = fmin(emin, e);
        emax = fmax(emax, e);
        syy += ey * ey, szz += ez * ez, syz += ey * ez;
    }
    printf(" [|E| in [%.4f, %.4f], a0 w0 = %.4f; <Ez^2>/<Ey^2> %.4f, correlation %.4f] ",
           emin, emax, a0 * w, szz / syy, syz / sqrt(syy * szz));
    CU_ASSERT(fabs(emin / (a0 * w) - 1) < 0.02 && fabs(emax / (a0 * w) - 1) < 0.02);
    CU_ASSERT(fabs(szz / syy - 1) < 0.02);
    CU_ASSERT(fabs(syz / sqrt(syy * szz)) < 0.02);
    sim_free(&S);
}

/* ---------------------------------------------------------------------------------------
 * Group velocity: the time centroid of Ey^2 of a short pulse at two probes. */
static double group_velocity(double omega0, int plasma, double *theory_yee)
{
    const double lam = 2 * M_PI / omega0, dx = lam / 30, dt = 0.65 * dx;
    const int nx = (int)lround(48.0 / dx), steps = (int)lround(70.0 / dt);
    const double x1 = 10.0, x2 = 40.0;
    deck d;
    tu_deck(&d, nx, 4, dx, dt, steps);
    d.cluster[0] = 16;
    d.cluster[1] = 2;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PERIODIC);
    add_laser(&d, 0.01, omega0, 1e5, 5.0, 0.0, 6.0, ENV_GAUSSIAN);
    if (plasma)
        for (int s = 0; s < 2; s++) {
            deck_species *sp = tu_species(&d, s ? "ions" : "electrons", s ? 1 : -1,
                                          s ? 1836 : 1, 2, 0);
            sp->immobile = s;
            sp->ppc[1] = 1;
            sp->profile = PROFILE_PIECEWISE;
            set_ramp(&sp->pwl_x, 3.0, 3.5);
            sp->bnd[SIDE_XMIN] = sp->bnd[SIDE_XMAX] = PBND_ABSORBING;
        }
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    const int i1 = (int)lround(x1 / dx), i2 = (int)lround(x2 / dx);
    double m[2][2] = {{0, 0}, {0, 0}};
    for (int n = 0; n < steps; n++) {
        sim_step(&S);
        for (int p = 0; p < 2; p++) {
            double e = S.f.e[1][emf_idx(&S.f, p ? i2 : i1, 1)];
            m[p][0] += e * e;
            m[p][1] += e * e * (n + 1) * dt;
        }
    }
    double v = (i2 - i1) * dx / (m[1][1] / m[1][0] - m[0][1] / m[0][0]);
    /* Yee + cold plasma: (2/dt sin(w dt/2))^2 = wp^2 + (2/dx sin(k dx/2))^2, dw/dk */
    double W = 2 / dt * sin(omega0 * dt / 2), K2 = W * W - (plasma ? 1.0 : 0.0);
    double kk = 2 / dx * asin(sqrt(K2) * dx / 2);
    *theory_yee = (sin(kk * dx) / dx) / (sin(omega0 * dt) / dt);
    sim_free(&S);
    return v;
}

static void test_group_velocity(void)
{
    const double w0 = 3.0;
    double yv, yp;
    double vv = group_velocity(w0, 0, &yv), vp = group_velocity(w0, 1, &yp);
    double want = sqrt(1 - 1 / (w0 * w0));
    printf(" [omega0 = %.1f omega_p: v_g %.5f in plasma, %.5f in vacuum (Yee %.5f, %.5f); "
           "ratio %.5f, theory sqrt(1 - wp^2/w0^2) = %.5f] ",
           w0, vp, vv, yp, yv, vp / vv, want);
    CU_ASSERT(fabs(vp / vv / want - 1) < 0.01);
}

/* ---------------------------------------------------------------------------------------
 * Moving window. */

/* E at t, B at t - dt/2: the same staggering at both ends of a comparison. */
static double field_energy(const sim *S)
{
    return emf_energy_e(&S->f, &S->cl) + emf_energy_b(&S->f, &S->cl);
}

/* A vacuum pulse rides the window for a whole box length with its energy kept. */
static void test_window_vacuum(void)
{
    const double dx = 1.0 / 20, dt = 0.6 * dx / sqrt(2.0);
    const int nx = 400;
    deck d;
    tu_deck(&d, nx, 4, dx, dt, 0);
    d.cluster[1] = 2;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PERIODIC);
    add_laser(&d, 0.1, 2 * M_PI, 1e5, 5.0, 0.0, 2.5, ENV_GAUSSIAN);
    d.window_enabled = 1;
    d.window_t_start = 11.5;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    while ((S.step + 1) * dt < d.window_t_start)
        sim_step(&S);
    double e0 = field_energy(&S);
    long n0 = S.step;
    while (S.win.cells < nx)
        sim_step(&S);
    double e1 = field_energy(&S);
    printf(" [window moved %ld cells in %ld steps: field energy %.6g -> %.6g (%+.3f%%)] ",
           S.win.cells, S.step - n0, e0, e1, 100 * (e1 / e0 - 1));
    CU_ASSERT(fabs(e1 / e0 - 1) < 0.01);
    sim_free(&S);
}

/* A cold uniform plasma (electrons and mobile ions) in a window moving from t = 0 stays
 * uniform: every cell keeps its particles, the charge stays zero, nothing is lost; and the
 * injection of column ig < nx reproduces the initial load of that column exactly. */
static void test_window_plasma(void)
{
    const int nx = 96, ny = 16;
    deck d;
    tu_deck(&d, nx, ny, 0.1, 0.05, 0);
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PERIODIC);
    d.window_enabled = 1;
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(&d, s ? "ions" : "electrons", s ? 1 : -1, s ? 1836 : 1,
                                      2, 0);
        sp->bnd[SIDE_XMIN] = sp->bnd[SIDE_XMAX] = PBND_ABSORBING;
    }
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    long long np0 = S.sp[0].np + S.sp[1].np;
    while (S.win.cells < 2 * nx) {
        sim_step(&S);
        CU_ASSERT_FATAL(species_misplaced(&S.sp[0], &S.cl) == 0 && species_misplaced(&S.sp[1], &S.cl) == 0);
    }
    int *per = calloc((size_t)nx * ny, sizeof(int)), bad = 0;
    for (int s = 0; s < 2; s++) {
        memset(per, 0, (size_t)nx * ny * sizeof(int));
        for (int c = 0; c < S.cl.n; c++)
            for (int p = S.sp[s].start[c]; p < S.sp[s].start[c] + S.sp[s].count[c]; p++)
                per[cell_i(S.sp[s].cell[p]) + nx * cell_j(S.sp[s].cell[p])]++;
        for (int k = 0; k < nx * ny; k++)
            bad += per[k] != 4;
    }
    S.be->rho(S.be_ctx, &S.st, NULL);
    double rmax = 0, emax = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            int k = emf_idx(&S.f, i, j);
            rmax = fmax(rmax, fabs(S.f.rho[k]));
            emax = fmax(emax, fabs(S.f.e[0][k]) + fabs(S.f.e[1][k]));
        }
    printf(" [%ld cells moved, x0 = %.2f: %lld of %lld particles, %d cells off 4 per cell, "
           "max |rho| %.1e, max |E| %.1e] ",
           S.win.cells, S.win.cells * d.dx, S.sp[0].np + S.sp[1].np, np0, bad, rmax, emax);
    CU_ASSERT_EQUAL(S.sp[0].np + S.sp[1].np, np0);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(rmax < 1e-6 && emax < 1e-6);
    free(per);
    sim_free(&S);

    /* injection keying: column 5 injected as global column 5 = the initial load */
    deck d2;
    tu_deck(&d2, 32, 16, 0.1, 0.05, 0);
    deck_species *e = tu_species(&d2, "electrons", -1, 1, 3, 0.2);
    snprintf(e->drift[2], sizeof e->drift[2], "0.1*sin(x)");
    clusters cl;
    clusters_init(&cl, &d2);
    species a, b;
    species_init(&a, &d2, 0, &cl, NULL);
    species_init(&b, &d2, 0, &cl, NULL);
    for (int c = 0; c < cl.n; c++)
        b.count[c] = 0;
    b.np = 0;
    species col;
    int add[8];
    b.np += species_column(&b, &d2, &cl, 5, 5, &col, add);
    species_inject(&b, &cl, 5, &col, add);
    species_free(&col);
    int same = 0, n = 0;
    for (int c = 0; c < cl.n; c++)
        for (int p = b.start[c]; p < b.start[c] + b.count[c]; p++, n++)
            for (int q = a.start[c]; q < a.start[c] + a.count[c]; q++)
                if (a.cell[q] == b.cell[p] && a.x[q] == b.x[p] && a.y[q] == b.y[p])
                    same += a.ux[q] == b.ux[p] && a.uy[q] == b.uy[p] && a.uz[q] == b.uz[p] &&
                            a.w[q] == b.w[p];
    CU_ASSERT(n == 16 * 9 && same == n);
    species_free(&a);
    species_free(&b);
    clusters_free(&cl);
}

/* ---------------------------------------------------------------------------------------
 * Oblique incidence (angle): the field energy of a tilted pulse and its centroid, which
 * moves along the beam's axis, at two times; and its reflection off an overdense slab. */

typedef struct {
    double w, x, y; /* field energy (1/2) sum (E^2 + B^2) dx dy, its centroid */
} emoment;

/* Over the cells whose centres lie in [x0, x1) x [y0, y1). */
static emoment energy_moment(const sim *S, double x0, double x1, double y0, double y1)
{
    const emf *f = &S->f;
    emoment m = {0, 0, 0};
    for (int j = 0; j < f->ny; j++) {
        const double y = (j + 0.5) * f->dy;
        if (y < y0 || y >= y1)
            continue;
        for (int i = 0; i < f->nx; i++) {
            const double x = (i + 0.5) * f->dx;
            if (x < x0 || x >= x1)
                continue;
            const int k = emf_idx(f, i, j);
            double u = 0;
            for (int c = 0; c < 3; c++)
                u += (double)f->e[c][k] * f->e[c][k] + (double)f->b[c][k] * f->b[c][k];
            m.w += u, m.x += u * x, m.y += u * y;
        }
    }
    if (m.w > 0)
        m.x /= m.w, m.y /= m.w;
    m.w *= 0.5 * f->dx * f->dy;
    return m;
}

/* Step S on to time t (from step *n). */
static void run_until(sim *S, long *n, double t)
{
    for (; *n < lround(t / S->d.dt); (*n)++)
        sim_step(S);
}

/* The direction of travel, in degrees from the normal of side `side` toward +y (x sides) or
 * +x (y sides), of a centroid that moved from a to b. */
static double travel_angle(int side, emoment a, emoment b)
{
    const double dx = b.x - a.x, dy = b.y - a.y;
    const double dn = side == SIDE_XMIN ? dx : side == SIDE_XMAX ? -dx
                      : side == SIDE_YMIN ? dy : -dy;
    const double dt = side >= SIDE_YMIN ? dx : dy;
    return atan2(dt, dn) * 180 / M_PI;
}

/* A 2-period (FWHM) pulse, w0 = 2.5 lambda, lambda = 1, 20 cells per wavelength, tilted by
 * `angle` degrees from side `side` and focused 8 from it, 13 along it from the low edge
 * (positive angles; 11 for negative ones), in a box 18 deep and 24 across with PML all
 * round: the field energy and its centroid at t1 and t2 (the pulse wholly inside). */
static void oblique_vacuum(int side, double angle, double t1, double t2, emoment *m1,
                           emoment *m2)
{
    const double lam = 1.0, w = 2 * M_PI / lam, dx = lam / 20, deep = 18, across = 24;
    const int ax = side >= SIDE_YMIN, hi = side == SIDE_XMAX || side == SIDE_YMAX;
    deck d;
    tu_deck(&d, (int)lround((ax ? across : deep) / dx), (int)lround((ax ? deep : across) / dx),
            dx, dx / 2, 0);
    d.cluster[0] = d.cluster[1] = 20;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PML);
    const double c = angle < 0 ? across - 13 : 13;
    deck_laser *L = add_laser(&d, 0.1, w, 2.5, hi ? deep - 8 : 8, c, 2.0, ENV_SIN2);
    L->boundary = side;
    L->angle = angle;
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    const double p = 0.8; /* the PMLs: 16 cells */
    const double X = d.nx * dx, Y = d.ny * dx;
    long n = 0;
    run_until(&S, &n, t1);
    *m1 = energy_moment(&S, p, X - p, p, Y - p);
    run_until(&S, &n, t2);
    *m2 = energy_moment(&S, p, X - p, p, Y - p);
    sim_free(&S);
}

static void test_oblique_vacuum(void)
{
    const int sides[3] = {SIDE_XMIN, SIDE_YMIN, SIDE_XMAX};
    const double angles[3] = {30.0, 30.0, -25.0};
    emoment r1, r2; /* at normal incidence, the reference energy */
    oblique_vacuum(SIDE_XMIN, 0.0, 12.0, 14.0, &r1, &r2);
    for (int k = 0; k < 3; k++) {
        emoment a, b;
        oblique_vacuum(sides[k], angles[k], 14.0, 20.0, &a, &b);
        const double got = travel_angle(sides[k], a, b);
        const double v = hypot(b.x - a.x, b.y - a.y) / 6.0;
        printf(" [%s %+.0f deg: travels at %+.2f deg, %.4f c; energy %.5f (%.5f later), "
               "%.5f at normal incidence] ",
               sides[k] == SIDE_XMIN ? "xmin" : sides[k] == SIDE_YMIN ? "ymin" : "xmax",
               angles[k], got, v, a.w, b.w, r1.w);
        CU_ASSERT(fabs(got - angles[k]) < 1.0);
        CU_ASSERT(fabs(v - 1) < 0.02);
        CU_ASSERT(fabs(b.w / a.w - 1) < 1e-3);    /* all of it in, nothing lost */
        CU_ASSERT(fabs(a.w / r1.w - 1) < 0.02);   /* the beam's energy, as at normal incidence */
    }
}

/* A pulse at 30 degrees, p- (pol = 0) or s-polarised (pol = pi/2), onto a slab of 4 n_c
 * (cold electrons, immobile ions) from x = 14 to 15, focused on its front: the reflected
 * pulse's direction and its energy against the incident one's (*r). */
static double oblique_reflection(double pol, double *ai, double *ar)
{
    const double lam = 1.0, w = 2 * M_PI / lam, dx = lam / 20, xs = 14, yc = 16.5, D = 1.5;
    deck d;
    tu_deck(&d, (int)lround(17 / dx), (int)lround(29 / dx), dx, dx / 2, 0);
    d.cluster[0] = d.cluster[1] = 20;
    d.energy_every = 0;
    d.filter_passes = 1; /* the cold dense plasma's grid heating, slowed */
    set_fbnd(&d, FBND_PML, FBND_PML);
    deck_laser *L = add_laser(&d, 0.1, w, 2.5, xs, yc, D, ENV_SIN2);
    L->angle = 30.0;
    L->polarization = pol;
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(&d, s ? "ions" : "electrons", s ? 1 : -1, s ? 1836 : 1,
                                      2, s ? 0 : 0.005);
        sp->immobile = s;
        sp->n = 4 * w * w; /* n_c = omega0^2 */
        sp->profile = PROFILE_PIECEWISE;
        deck_pwl *q[2] = {&sp->pwl_x, &sp->pwl_y};
        const double v[2][4] = {{xs, xs + 1e-3, xs + 1, xs + 1 + 1e-3}, {1, 1.001, 28, 28.001}};
        const double fv[4] = {0, 1, 1, 0};
        for (int a = 0; a < 2; a++) {
            q[a]->n = 4;
            q[a]->s = malloc(sizeof v[a]);
            q[a]->f = malloc(sizeof fv);
            memcpy(q[a]->s, v[a], sizeof v[a]);
            memcpy(q[a]->f, fv, sizeof fv);
        }
        for (int k = 0; k < 4; k++)
            sp->bnd[k] = PBND_ABSORBING;
    }
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    /* the peak (tau = D) reaches the focus at tf; the pulse is wholly in the vacuum between
     * the source plane and the slab when its centroid is 5.5 to 9.5 from the focus */
    const double tf = S.f.fb->lasers[0].beam.delay + D, p = 0.8, Y = d.ny * dx;
    long n = 0;
    emoment in[2], out[2];
    run_until(&S, &n, tf - 9.5);
    in[0] = energy_moment(&S, p, xs, p, Y - p);
    run_until(&S, &n, tf - 5.5);
    in[1] = energy_moment(&S, p, xs, p, Y - p);
    run_until(&S, &n, tf + 5.5);
    out[0] = energy_moment(&S, p, xs, p, Y - p);
    run_until(&S, &n, tf + 9.5);
    out[1] = energy_moment(&S, p, xs, p, Y - p);
    sim_free(&S);
    *ai = travel_angle(SIDE_XMIN, in[0], in[1]);
    *ar = travel_angle(SIDE_XMAX, out[0], out[1]); /* back toward xmin */
    return 0.5 * (out[0].w + out[1].w) / in[1].w;
}

/* Specular reflection with the incident energy: all of it for s; for p, the field across
 * the surface drives its electrons (the step is smoothed over a cell by the particles'
 * shape: resonance and vacuum heating take some percent). */
static void test_oblique_reflection(void)
{
    for (int k = 0; k < 2; k++) {
        double ai, ar, r = oblique_reflection(k ? M_PI / 2 : 0.0, &ai, &ar);
        printf(" [%s: incident at %+.2f deg, reflected at %+.2f deg (specular +30); "
               "reflected energy %.4f of the incident] ", k ? "s" : "p", ai, ar, r);
        CU_ASSERT(fabs(ai - 30) < 1.0);
        CU_ASSERT(fabs(ar - 30) < 2.0);
        CU_ASSERT(r > (k ? 0.95 : 0.85) && r < 1.02);
    }
}

/* ---------------------------------------------------------------------------------------
 * Particle walls. A species of charge -1e-6 makes no field to speak of: it streams
 * ballistically, so who leaves and with what energy is known from the initial load. */

typedef struct {
    long long n;
    double ke, ux, ux2, uy2, uxmax, xmin, xmax;
} pstat;

static pstat stats(const sim *S, int s)
{
    pstat r = {0, 0, 0, 0, 0, -1e30, 1e30, -1e30};
    const species *sp = &S->sp[s];
    for (int c = 0; c < S->cl.n; c++)
        for (int p = sp->start[c]; p < sp->start[c] + sp->count[c]; p++) {
            double g = sqrt(1 + sp->ux[p] * sp->ux[p] + sp->uy[p] * sp->uy[p] +
                            sp->uz[p] * sp->uz[p]);
            double x = (cell_i(sp->cell[p]) + sp->x[p]) * S->d.dx;
            r.n++;
            r.ke += sp->w[p] * (g - 1);
            r.ux += sp->ux[p];
            r.ux2 += sp->ux[p] * sp->ux[p];
            r.uy2 += sp->uy[p] * sp->uy[p];
            r.uxmax = fmax(r.uxmax, sp->ux[p]);
            r.xmin = fmin(r.xmin, x);
            r.xmax = fmax(r.xmax, x);
        }
    return r;
}

static void wall_deck(deck *d, int type, double uth, double drift, double q)
{
    tu_deck(d, 64, 16, 0.1, 0.05, 0);
    d->energy_every = 0;
    set_fbnd(d, FBND_PML, FBND_PERIODIC);
    d->pml_cells = 8;
    deck_species *e = tu_species(d, "electrons", q, 1, 4, uth);
    snprintf(e->drift[0], sizeof e->drift[0], "%.17g", drift);
    e->bnd[SIDE_XMIN] = e->bnd[SIDE_XMAX] = type;
}

static void test_wall_absorbing(void)
{
    deck d;
    wall_deck(&d, PBND_ABSORBING, 0.05, 0.0, -1e-6);
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    const int steps = 400;
    const double T = steps * d.dt, L = d.nx * d.dx, eps = 1e-3 * d.dx;
    /* ballistic prediction from u(-1/2) (the fields are ~1e-12) */
    long long sure = 0, maybe = 0;
    double ke_sure = 0, ke_maybe = 0;
    const species *sp = &S.sp[0];
    for (int c = 0; c < S.cl.n; c++)
        for (int p = sp->start[c]; p < sp->start[c] + sp->count[c]; p++) {
            double g = sqrt(1 + sp->ux[p] * sp->ux[p] + sp->uy[p] * sp->uy[p] +
                            sp->uz[p] * sp->uz[p]);
            double x = (cell_i(sp->cell[p]) + sp->x[p]) * d.dx + sp->ux[p] / g * T;
            if (x > eps && x < L - eps)
                sure++, ke_sure += sp->w[p] * (g - 1);
            else if (x > -eps && x < L + eps)
                maybe++, ke_maybe += sp->w[p] * (g - 1);
        }
    long long n0 = sp->np;
    for (int n = 0; n < steps; n++)
        sim_step(&S);
    pstat r = stats(&S, 0);
    printf(" [%lld of %lld left after t = %.0f, ballistic prediction %lld (+%lld on the edge); "
           "kinetic %.6g, predicted %.6g] ",
           r.n, n0, T, sure, maybe, r.ke, ke_sure);
    CU_ASSERT(r.n >= sure && r.n <= sure + maybe && r.n == S.sp[0].np);
    CU_ASSERT(fabs(r.ke - ke_sure) <= ke_maybe + 1e-6 * ke_sure);
    CU_ASSERT(r.n < n0 - 1000);
    CU_ASSERT(species_misplaced(&S.sp[0], &S.cl) == 0);
    sim_free(&S);
}

/* Reflecting walls: every particle stays, |u| of each is kept exactly; with a real plasma
 * the deposit stays charge-conserving up to the walls (the mirror fold of the current). */
static void test_wall_reflecting(void)
{
    deck d;
    wall_deck(&d, PBND_REFLECTING, 0.05, 0.1, -1e-6);
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    pstat r0 = stats(&S, 0);
    for (int n = 0; n < 1000; n++)
        sim_step(&S);
    pstat r1 = stats(&S, 0);
    printf(" [%lld -> %lld particles, kinetic %.8g -> %.8g, <ux> %.4f -> %.4f, x in [%.4f, "
           "%.4f]] ",
           r0.n, r1.n, r0.ke, r1.ke, r0.ux / r0.n, r1.ux / r1.n, r1.xmin, r1.xmax);
    CU_ASSERT_EQUAL(r1.n, r0.n);
    CU_ASSERT(fabs(r1.ke / r0.ke - 1) < 1e-5);
    CU_ASSERT(r1.xmin >= 0 && r1.xmax < d.nx * d.dx);
    CU_ASSERT(r1.ux / r1.n < 0.5 * r0.ux / r0.n);
    sim_free(&S);

    /* charge conservation with walls: warm electrons on immobile ions */
    wall_deck(&d, PBND_REFLECTING, 0.2, 0.0, -1.0);
    deck_species *ion = tu_species(&d, "ions", 1, 1836, 4, 0);
    ion->immobile = 1;
    ion->bnd[SIDE_XMIN] = ion->bnd[SIDE_XMAX] = PBND_REFLECTING;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    emf *f = &S.f;
    float *r = malloc(f->size * sizeof(float));
    double worst = 0;
    for (int n = 0; n < 200; n++) {
        S.be->rho(S.be_ctx, &S.st, NULL);
        memcpy(r, f->rho, f->size * sizeof(float));
        sim_step(&S);
        S.be->rho(S.be_ctx, &S.st, NULL);
        for (int j = 0; j < f->ny; j++)
            for (int i = 0; i < f->nx; i++) {
                int k = emf_idx(f, i, j), km = emf_idx(f, i, j == 0 ? f->ny - 1 : j - 1);
                double jxm = i == 0 ? 0.0 : f->j[0][k - 1];
                double c = (f->rho[k] - r[k]) / f->dt + (f->j[0][k] - jxm) / f->dx +
                           (f->j[1][k] - f->j[1][km]) / f->dy;
                worst = fmax(worst, fabs(c * f->dt));
            }
    }
    printf(" [continuity residual with walls %.2e] ", worst);
    CU_ASSERT(worst < 1e-5);
    free(r);
    sim_free(&S);
}

/* Thermal walls: a drifting beam hits xmax and comes back as the wall's flux-weighted
 * half-Maxwellian: ux < 0, <ux> = -sqrt(pi/2) u_th, <ux^2> = 2 u_th^2, <uy^2> = u_th^2. */
static void test_wall_thermal(void)
{
    const double uth = 0.02;
    deck d;
    wall_deck(&d, PBND_THERMAL, uth, 0.2, -1e-6);
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    long long n0 = S.sp[0].np;
    for (int n = 0; n < 1300; n++)
        sim_step(&S);
    pstat r = stats(&S, 0);
    double mux = r.ux / r.n / uth, mux2 = r.ux2 / r.n / (uth * uth), muy2 = r.uy2 / r.n / (uth * uth);
    printf(" [%lld of %lld particles; max ux %.4f; <ux>/uth %.4f (-%.4f), <ux^2>/uth^2 %.4f "
           "(2), <uy^2>/uth^2 %.4f (1)] ",
           r.n, n0, r.uxmax, mux, sqrt(M_PI / 2), mux2, muy2);
    CU_ASSERT_EQUAL(r.n, n0);
    CU_ASSERT(r.uxmax <= 0.0);
    CU_ASSERT(fabs(-mux / sqrt(M_PI / 2) - 1) < 0.03);
    CU_ASSERT(fabs(mux2 / 2 - 1) < 0.03);
    CU_ASSERT(fabs(muy2 - 1) < 0.03);
    sim_free(&S);
}

/* ---------------------------------------------------------------------------------------
 * Linear wake: a short, weak pulse in a uniform plasma leaves Ex oscillating at k_p: the
 * wavelength is 2 pi v_g / omega_p (= 2 pi c / omega_p to 0.5% at omega0 = 10). */
static void test_linear_wake(void)
{
    const double w0 = 10.0, dx = 2 * M_PI / w0 / 20, dt = 0.65 * dx;
    const int nx = (int)lround(30.0 / dx), steps = (int)lround(36.0 / dt);
    deck d;
    tu_deck(&d, nx, 4, dx, dt, steps);
    d.cluster[0] = 16;
    d.cluster[1] = 2;
    d.energy_every = 0;
    set_fbnd(&d, FBND_PML, FBND_PERIODIC);
    add_laser(&d, 0.2, w0, 1e5, 5.0, 0.0, 2.5, ENV_GAUSSIAN);
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(&d, s ? "ions" : "electrons", s ? 1 : -1, s ? 1836 : 1,
                                      2, 0);
        sp->immobile = s;
        sp->ppc[0] = 4;
        sp->ppc[1] = 1;
        sp->profile = PROFILE_PIECEWISE;
        set_ramp(&sp->pwl_x, 2.0, 2.5);
        sp->bnd[SIDE_XMIN] = sp->bnd[SIDE_XMAX] = PBND_ABSORBING;
    }
    sim S;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    for (int n = 0; n < steps; n++)
        sim_step(&S);
    /* zero crossings of the y-averaged Ex between x = 4 and the layer at 29.5 (the pulse has
     * left the box) */
    double prev = 0, first = -1, last = -1, amp = 0;
    int crossings = 0;
    for (int i = (int)(4.0 / dx); i < (int)(28.0 / dx); i++) {
        double ex = 0;
        for (int j = 0; j < 4; j++)
            ex += 0.25 * S.f.e[0][emf_idx(&S.f, i, j)];
        amp = fmax(amp, fabs(ex));
        if (i > (int)(4.0 / dx) && prev < 0 && ex >= 0) {
            double x = (i - 1 + prev / (prev - ex) + 0.5) * dx; /* Ex sits at i + 1/2 */
            if (first < 0)
                first = x;
            last = x;
            crossings++;
        }
        prev = ex;
    }
    double lam = (last - first) / (crossings - 1), vg = sqrt(1 - 1 / (w0 * w0));
    printf(" [wake amplitude %.4f, wavelength %.4f over %d periods: 2 pi c/wp = %.4f (%+.2f%%), "
           "2 pi v_g/wp = %.4f (%+.2f%%)] ",
           amp, lam, crossings - 1, 2 * M_PI, 100 * (lam / (2 * M_PI) - 1), 2 * M_PI * vg,
           100 * (lam / (2 * M_PI * vg) - 1));
    CU_ASSERT(crossings >= 3);
    CU_ASSERT(fabs(lam / (2 * M_PI) - 1) < 0.03);
    CU_ASSERT(fabs(lam / (2 * M_PI * vg) - 1) < 0.01);
    sim_free(&S);
}

int main(void)
{
    CU_initialize_registry();
    CU_pSuite s = CU_add_suite("laser", NULL, NULL);
    CU_add_test(s, "PML reflection, normal and oblique", test_pml_reflection);
    CU_add_test(s, "Gaussian beam in vacuum: waist, focus, peak, polarisation", test_gaussian_beam);
    CU_add_test(s, "super-Gaussian and flat-top profiles at the source plane",
                test_transverse_profiles);
    CU_add_test(s, "circular polarisation", test_circular);
    CU_add_test(s, "lasers from xmax, ymin, ymax", test_laser_sides);
    CU_add_test(s, "oblique incidence in vacuum: direction and energy", test_oblique_vacuum);
    CU_add_test(s, "oblique incidence: specular reflection off an overdense slab",
                test_oblique_reflection);
    CU_add_test(s, "laser group velocity in plasma", test_group_velocity);
    CU_add_test(s, "moving window: vacuum pulse energy over a transit", test_window_vacuum);
    CU_add_test(s, "moving window: uniform plasma stays uniform", test_window_plasma);
    CU_add_test(s, "absorbing walls: ballistic count and energy", test_wall_absorbing);
    CU_add_test(s, "reflecting walls: count, energy, continuity", test_wall_reflecting);
    CU_add_test(s, "thermal walls: re-emitted half-Maxwellian", test_wall_thermal);
    CU_add_test(s, "linear wake wavelength", test_linear_wake);
    unsigned fails = tu_run_tests();
    return fails ? 1 : 0;
}
