/* testutil.h - helpers shared by the CUnit tests: a default deck built in C, so physics tests
 * do not depend on the parser, and small numerical helpers. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include "collide.h"
#include "deck.h"
#include "sim.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A periodic box of nx x ny cells of size dx, no species, no diagnostics but energy. */
static inline void tu_deck(deck *d, int nx, int ny, double dx, double dt, long steps)
{
    memset(d, 0, sizeof *d);
    snprintf(d->file, sizeof d->file, "test");
    snprintf(d->name, sizeof d->name, "test");
    d->backend = BACKEND_CPU;
    d->seed = 7;
    d->n0 = 1e18;
    d->nx = nx;
    d->ny = ny;
    d->dx = d->dy = dx;
    d->cluster[0] = d->cluster[1] = 8;
    d->slack = 0.3;
    d->dt = dt;
    d->steps = steps;
    d->particles_fraction = 0.01;
    d->fields_quantities = FQ_E | FQ_B | FQ_J | FQ_RHO;
    d->avg_quantities = FQ_E | FQ_B | FQ_E2 | FQ_B2;
    d->particles_species_mask = ~0;
    for (int m = 0; m < 6; m++)
        snprintf(d->ext[m], sizeof d->ext[m], "0");
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-%d", (int)getpid());
}

/* Add a uniform species; returns it for further settings. */
static inline deck_species *tu_species(deck *d, const char *name, double q, double m, int ppc,
                                       double uth)
{
    deck_species *s = &d->species[d->nspecies++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->charge = q;
    s->mass = m;
    s->ppc[0] = s->ppc[1] = ppc;
    s->profile = PROFILE_UNIFORM;
    s->n = 1.0;
    for (int a = 0; a < 3; a++) {
        s->uth[a] = uth;
        snprintf(s->drift[a], sizeof s->drift[a], "0");
    }
    return s;
}

/* Species s's density along x: piecewise linear through the n points (x[k], f[k]). */
static inline void tu_profile_x(deck_species *s, int n, const double *x, const double *f)
{
    s->profile = PROFILE_PIECEWISE;
    s->pwl_x.n = n;
    s->pwl_x.s = malloc((size_t)n * sizeof(double));
    s->pwl_x.f = malloc((size_t)n * sizeof(double));
    memcpy(s->pwl_x.s, x, (size_t)n * sizeof(double));
    memcpy(s->pwl_x.f, f, (size_t)n * sizeof(double));
}

/* A dense blob drifting across clusters (segments get re-laid), a warm background and
 * immobile ions: every part of the state that a checkpoint must carry changes in a run. */
static inline void tu_blob_species(deck *d)
{
    deck_species *b = tu_species(d, "blob", -1, 1, 3, 0.05);
    b->profile = PROFILE_EXPR;
    snprintf(b->density_expr, sizeof b->density_expr,
             "0.02 + 3*exp(-((x-3)^2 + (y-3.2)^2)/0.5)");
    snprintf(b->drift[0], sizeof b->drift[0], "0.9");
    snprintf(b->drift[1], sizeof b->drift[1], "0.3*sin(2*pi*x/9.6)");
    tu_species(d, "warm", -1, 1, 2, 0.1);
    tu_species(d, "ions", 1, 1836, 2, 0)->immobile = 1;
}

/* deck_load of the file at path with its stderr captured into err (n bytes; the capture
 * goes through dir/stderr.txt); -2 when stderr could not be redirected. */
static inline int tu_deck_load_path(const char *dir, const char *path, deck *d, char *err,
                                    size_t n)
{
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *ef = fopen(errpath, "w+");
    if (!ef || saved < 0) {
        if (ef)
            fclose(ef);
        if (saved >= 0)
            close(saved);
        return -2;
    }
    dup2(fileno(ef), 2);
    int rc = deck_load(path, d);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(ef);
    size_t got = fread(err, 1, n - 1, ef);
    err[got] = '\0';
    fclose(ef);
    return rc;
}

/* The same on text, written to dir/deck.cfg first. */
static inline int tu_deck_load_text(const char *dir, const char *text, deck *d, char *err,
                                    size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/deck.cfg", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    return tu_deck_load_path(dir, path, d, err, n);
}

/* A deck that must be refused with messages holding want1 (and want2 when given); what was
 * printed is shown when not. */
static inline void tu_deck_refused(const char *dir, const char *text, const char *want1,
                                   const char *want2, char *err, size_t n)
{
    deck d;
    int rc = tu_deck_load_text(dir, text, &d, err, n);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want1));
    if (want2)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want2));
    if (rc != -1 || !strstr(err, want1) || (want2 && !strstr(err, want2)))
        fprintf(stdout, "\n  expected '%s'%s%s in:\n%s", want1, want2 ? " and " : "",
                want2 ? want2 : "", err);
    if (rc == 0)
        deck_free(&d);
}

/* Run the registered suites verbosely and free the registry; returns the failures. */
static inline unsigned tu_run_tests(void)
{
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failed;
}

#define TU_ECOLS 48

/* The column of OUTDIR/energy.csv named `name` (its header), or -1. */
static inline int tu_energy_col(const char *outdir, const char *name)
{
    char path[DECK_PATH_MAX + 32], line[2048];
    snprintf(path, sizeof path, "%s/energy.csv", outdir);
    FILE *f = fopen(path, "r");
    int k = -1;
    if (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        int n = 0;
        for (char *p = strtok(line, ","); p; p = strtok(NULL, ","), n++)
            if (strcmp(p, name) == 0) {
                k = n;
                break;
            }
    }
    if (f)
        fclose(f);
    return k;
}

/* Rows of OUTDIR/energy.csv (step, t, field_E, field_B, kinetic..., total, gauss_max, then
 * the ionization and energy balance columns), at most TU_ECOLS columns (*ncol from the
 * header; no rows if there are more). Returns the rows read. */
static inline int tu_energy_rows(const char *outdir, double rows[][TU_ECOLS], int max, int *ncol)
{
    char path[DECK_PATH_MAX + 32], line[2048];
    snprintf(path, sizeof path, "%s/energy.csv", outdir);
    FILE *f = fopen(path, "r");
    int n = 0;
    *ncol = 0;
    if (!f)
        return 0;
    if (fgets(line, sizeof line, f)) {
        *ncol = 1;
        for (char *p = line; *p; p++)
            *ncol += *p == ',';
    }
    while (*ncol <= TU_ECOLS && n < max && fgets(line, sizeof line, f)) {
        char *p = line;
        for (int k = 0; k < *ncol; k++) {
            rows[n][k] = strtod(p, &p);
            if (*p == ',')
                p++;
        }
        n++;
    }
    fclose(f);
    return n;
}

/* Crude DFT peak search: the frequency in [w0, w1] maximising |sum f(t) e^{-i w t}|. */
static inline double tu_peak_frequency(const double *f, int n, double dt, double w0, double w1)
{
    double best = 0.0, wbest = w0, mean = 0.0;
    for (int k = 0; k < n; k++)
        mean += f[k] / n;
    for (double w = w0; w <= w1; w += (w1 - w0) / 20000.0) {
        double re = 0.0, im = 0.0;
        for (int k = 0; k < n; k++) {
            double win = 0.5 - 0.5 * cos(2.0 * M_PI * k / (n - 1)); /* Hann */
            re += win * (f[k] - mean) * cos(w * k * dt);
            im -= win * (f[k] - mean) * sin(w * k * dt);
        }
        if (re * re + im * im > best) {
            best = re * re + im * im;
            wbest = w;
        }
    }
    return wbest;
}

/* Collisions of species a with b (tu_collisions) at n0 cm^-3; Coulomb logarithm lnl (0:
 * computed). */
static inline void tu_collisions(deck *d, int a, int b, double lnl, double n0)
{
    deck_collision *e = &d->collisions[d->ncollisions++];
    e->species[0] = a;
    e->species[1] = b;
    e->coulomb_log = lnl;
    e->every = 1;
    d->n0 = n0;
    d->n0_given = 1;
}

/* The collisions of the entries of the deck due at step `step` alone (no push, no fields)
 * with time step dt (times their `every`), on S's backend. */
static inline void tu_collide(sim *S, double dt, long step)
{
    for (int i = 0; i < S->d.ncollisions; i++) {
        const deck_collision *e = &S->d.collisions[i];
        if (step % e->every)
            continue;
        collide_par p = {.a = e->species[0], .b = e->species[1], .lnl = e->coulomb_log,
                         .dt = dt * e->every, .seed = S->d.seed, .entry = (unsigned)i,
                         .step = step};
        collide_scale(S->d.n0, &p.re_kp, &p.lc_kp);
        S->be->collide(S->be_ctx, &S->st, &p);
    }
}

/* Moments of species s (host arrays): sum w, and per axis sum w m u_a v_a (T_a = t[a] / n,
 * in m_e c^2), sum w m u_a (momentum), sum w v_a; sum w m (gamma - 1) (kinetic energy). */
typedef struct {
    double n, t[3], p[3], v[3], ke;
} tu_moments;

static inline tu_moments tu_species_moments(const species *s, const clusters *cl)
{
    tu_moments m;
    memset(&m, 0, sizeof m);
    for (int c = 0; c < cl->n; c++)
        for (int k = s->start[c]; k < s->start[c] + s->count[c]; k++) {
            double u[3] = {s->ux[k], s->uy[k], s->uz[k]}, w = s->w[k];
            double g = sqrt(1.0 + u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
            m.n += w;
            m.ke += w * s->m * (g - 1.0);
            for (int a = 0; a < 3; a++) {
                m.t[a] += w * s->m * u[a] * u[a] / g;
                m.p[a] += w * s->m * u[a];
                m.v[a] += w * u[a] / g;
            }
        }
    return m;
}

#endif
