/* deck.c - the input deck (design.md §8): libconfig reading, validation with located messages
 * (file, line, key path, what was expected) and defaults; deck_write.c writes it back. */
#include "deck.h"
#include "deck_read.h"
#include "elements.h"
#include "empic.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const ROOT_KEYS[] = {"constants", "simulation", "grid", "time", "fields",
                                        "lasers", "species", "collisions", "diagnostics",
                                        "parallel", NULL};
static const char *const SIM_KEYS[] = {"name", "backend", "seed", "n0", "wall_time", NULL};
static const char *const GRID_KEYS[] = {"cells", "dx", "dx_um", "cluster", "slack", NULL};
static const char *const PARALLEL_KEYS[] = {"ranks", "balance", NULL};
static const char *const BALANCE_KEYS[] = {"every", "threshold", NULL};
static const char *const TIME_KEYS[] = {"dt", "dt_fs", "steps", "tmax", "tmax_fs", NULL};
static const char *const FIELD_KEYS[] = {"boundary", "pml", "filter", "external",
                                         "moving_window", NULL};
static const char *const PML_KEYS[] = {"cells", NULL};
static const char *const FILTER_KEYS[] = {"passes", "compensate", NULL};
static const char *const EXT_KEYS[] = {"E", "B", "E_Vm", "B_T", NULL};
static const char *const WIN_KEYS[] = {"enabled", "t_start", "t_start_fs", NULL};
static const char *const LASER_KEYS[] = {"a0", "intensity", "omega0", "lambda0", "polarization",
                                         "w0", "w0_um", "focus", "focus_um", "center",
                                         "center_um", "duration", "duration_fs", "envelope",
                                         "ramp", "ramp_fs", "boundary", "phase", "profile",
                                         "order", "edge", "edge_um", "angle", NULL};
static const char *const SPECIES_KEYS[] = {"name", "charge", "mass", "ppc", "immobile",
                                           "density", "momentum", "boundary", "element",
                                           "ionization", NULL};
static const char *const ION_KEYS[] = {"model", "electrons", "max_charge", NULL};
static const char *const ION_MODELS[] = {"adk", NULL};
static const char *const DENS_KEYS[] = {"profile", "n", "n_cm3", "n_nc", "x", "fx", "y", "fy",
                                        "x_um", "y_um", "expr", NULL};
static const char *const MOM_KEYS[] = {"thermal", "temperature_eV", "temperature_keV", "drift",
                                       NULL};
static const char *const DIAG_KEYS[] = {"output", "energy", "fields", "fields_avg", "particles",
                                        "checkpoint", "phasespace", "tracks", "probes", NULL};
static const char *const EVERY_KEYS[] = {"every", NULL};
static const char *const ENERGY_KEYS[] = {"every", "growth_limit", NULL};
static const char *const FDIAG_KEYS[] = {"every", "quantities", NULL};
static const char *const FAVG_KEYS[] = {"every", "steps", "quantities", NULL};
static const char *const PDIAG_KEYS[] = {"every", "fraction", "species", "region", "energy",
                                         NULL};

/* ---------------------------------------------------------------- sections */

/* A formula in x and y (and t when time) that parses. */
static void check_formula(dk_ctx *c, const cs *s, const char *expr, int time)
{
    char err[256];
    formula *f = formula_new(expr, time, err, sizeof err);
    if (!f) {
        dk_report(c, s, NULL, "cannot parse formula \"%.200s\": %s; expected an expression in %s "
                  "(constants pi, e and those of the deck's constants group; functions "
                  "sin, exp, sqrt, min, max, ...)", expr, err, time ? "x, y and t" : "x and y");
        return;
    }
    formula_free(f); /* its values are checked where the run evaluates them: deck_run.c */
}

/* Member key of g, 3 components each a number or a formula string in x, y (and t when
 * time), into out[] as formula texts (numbers as "%.17g"), each value times scale (a lab
 * twin's conversion: a formula f becomes "(f)*scale"). */
static void parse_formula_vec(dk_ctx *c, const cs *g, const char *key,
                              char (*out)[DECK_EXPR_MAX], int time, double scale)
{
    const cs *s = dk_seq(c, g, key, 3, time ? "components, each a number or a formula string "
                         "in x, y, t" : "components, each a number or a formula string in x, y",
                         0);
    for (int i = 0; s && i < 3; i++) {
        const cs *e = config_setting_get_elem(s, (unsigned)i);
        char expr[DECK_EXPR_MAX];
        double v;
        if (config_setting_type(e) == CONFIG_TYPE_STRING) {
            if (dk_str_of(c, e, expr, sizeof expr))
                continue;
            dk_expand(c, e, expr, sizeof expr);
            if (dk_numeric_text(expr, &v)) {
                snprintf(out[i], DECK_EXPR_MAX, "%.17g", v * scale);
                continue;
            }
            check_formula(c, e, expr, time);
            if (scale == 1.0)
                memcpy(out[i], expr, sizeof expr);
            else if (snprintf(out[i], DECK_EXPR_MAX, "(%s)*%.17g", expr, scale) >= DECK_EXPR_MAX)
                dk_report(c, e, NULL, "formula \"%.200s\" is longer than %d characters once "
                          "converted to normalised units", expr, DECK_EXPR_MAX - 32);
        } else if (dk_num_of(c, e, &v) == 0) {
            snprintf(out[i], DECK_EXPR_MAX, "%.17g", v * scale);
        }
    }
}

/* Side keys xmin..ymax with names[] (index 0 = "periodic"), then the periodic-pair rule. */
static void parse_sides(dk_ctx *c, const cs *g, const char *const names[], int out[4])
{
    dk_keys(c, g, DK_SIDES);
    for (int i = 0; i < 4; i++)
        dk_enum(c, g, DK_SIDES[i], names, &out[i]);
    for (int a = 0; a < 2; a++)
        if ((out[2 * a] == 0) != (out[2 * a + 1] == 0))
            dk_report(c, g, NULL, "%s is \"%s\" but %s is \"%s\"; expected both \"periodic\" or "
                      "neither", DK_SIDES[2 * a], names[out[2 * a]], DK_SIDES[2 * a + 1],
                      names[out[2 * a + 1]]);
}

static void parse_simulation(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const char *base = strrchr(c->file, '/');
    base = base ? base + 1 : c->file;
    snprintf(d->name, sizeof d->name, "%.*s", (int)strcspn(base, "."), base);
    if (!d->name[0])
        snprintf(d->name, sizeof d->name, "empic");
    d->backend = BACKEND_AUTO;
    d->seed = 1;
    d->n0 = 1.0e18;
    const cs *g = dk_group(c, root, "simulation", 0);
    if (!g)
        return;
    dk_keys(c, g, SIM_KEYS);
    dk_str(c, g, "name", d->name, sizeof d->name, 0);
    dk_enum(c, g, "backend", DK_BACKENDS, &d->backend);
    long long seed = 1;
    if (dk_int(c, g, "seed", &seed, 0, LLONG_MAX, 0) > 0)
        d->seed = (unsigned long long)seed;
    d->n0_given = dk_num(c, g, "n0", &d->n0, DK_POS, 0) > 0;
    dk_num(c, g, "wall_time", &d->wall_time, DK_NONNEG, 0);
}

static void parse_grid(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    int cells[2] = {0, 0};
    double dx[2] = {0, 0};
    d->cluster[0] = d->cluster[1] = 16;
    d->slack = 0.3;
    const cs *g = dk_group(c, root, "grid", 1);
    if (!g)
        return;
    dk_keys(c, g, GRID_KEYS);
    int okc = dk_ivec(c, g, "cells", cells, 2, 1, 32767, 1) > 0;
    const dk_alt dxa[] = {{"dx", "c/omega_p", 1, NULL}, {"dx_um", "um", dk_lab_um(c), NULL}};
    int okd = dk_vec_alt(c, g, dxa, 2, dx, 2, DK_POS, 1) > 0;
    dk_ivec(c, g, "cluster", d->cluster, 2, 3, 32767, 0);
    if (dk_num(c, g, "slack", &d->slack, DK_NONNEG, 0) > 0 && !(d->slack < 1))
        dk_report(c, dk_member(g, "slack"), NULL, "got %g; expected a free fraction in [0, 1)",
                  d->slack);
    d->nx = cells[0];
    d->ny = cells[1];
    d->dx = dx[0];
    d->dy = dx[1];
    if (okd) /* before the Courant limit is computed from them */
        okd = !dk_float_range(c, dk_given(g, "dx", "dx_um"), "dx", dx[0], 0) &
              !dk_float_range(c, dk_given(g, "dx", "dx_um"), "dy", dx[1], 0);
    c->box_ok = okc && okd;
}

/* parallel.ranks = [px, py]: the MPI rank array (checked against the run's ranks when it
 * starts: clusters_decompose); parallel.balance = { every; threshold; }: dynamic load
 * balancing (rebalance.h). */
static void parse_parallel(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const cs *g = dk_group(c, root, "parallel", 0);
    if (!g)
        return;
    dk_keys(c, g, PARALLEL_KEYS);
    dk_ivec(c, g, "ranks", d->ranks, 2, 1, 32767, 0);
    const cs *b = dk_group(c, g, "balance", 0);
    if (!b)
        return;
    dk_keys(c, b, BALANCE_KEYS);
    long long every = 0;
    const cs *e = dk_member(b, "every");
    if (!e)
        dk_report(c, b, "every", "missing; expected the steps between two load checks, an "
                  "integer >= 1 (leave parallel.balance out for no balancing)");
    else if (dk_int_of(c, e, &every, LLONG_MIN, LLONG_MAX) == 0 && every < 1)
        dk_report(c, e, NULL, "got %lld; expected the steps between two load checks, an "
                  "integer >= 1 (leave parallel.balance out for no balancing)", every);
    else if (every >= 1)
        d->balance_every = (long)every;
    double t = 0.1;
    const cs *th = dk_member(b, "threshold");
    if (th && dk_num_of(c, th, &t) == 0 && !(t > 0.0))
        dk_report(c, th, NULL, "got %g; expected the imbalance allowed, a number > 0 (0.1: "
                  "the busiest rank may hold 10 %% more particles than the mean)", t);
    d->balance_threshold = t;
}

static void parse_time(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const cs *g = dk_group(c, root, "time", 1);
    if (!g)
        return;
    dk_keys(c, g, TIME_KEYS);
    const double fs = dk_lab_fs(c);
    const dk_alt dta[] = {{"dt", "1/omega_p", 1, NULL}, {"dt_fs", "fs", fs, NULL}};
    const dk_alt tma[] = {{"tmax", "1/omega_p", 1, NULL}, {"tmax_fs", "fs", fs, NULL}};
    int okdt = dk_num_alt(c, g, dta, 2, &d->dt, DK_POS, 1) > 0;
    const cs *ss = dk_member(g, "steps"), *st = dk_member(g, "tmax");
    st = st ? st : dk_member(g, "tmax_fs");
    double tmax = 0;
    if (ss && st) {
        dk_report(c, st, NULL, "given together with steps; expected exactly one of steps, tmax "
                  "(or tmax_fs)");
    } else if (!ss && !st) {
        dk_report(c, g, NULL, "neither steps nor tmax given; expected exactly one of them");
    } else if (ss) {
        DK_INT(g, "steps", d->steps, 0, LONG_MAX, 1);
    } else if (dk_num_alt(c, g, tma, 2, &tmax, DK_NONNEG, 1) > 0 && okdt) {
        double n = ceil(tmax / d->dt - 1e-9);
        if (n > 1e15)
            dk_report(c, st, NULL, "tmax/dt = %g steps; expected fewer than 1e15", n);
        else
            d->steps = n > 0 ? (long)n : 0;
    }
    if (okdt && c->box_ok) {
        /* at the limit (within rounding of it) the Yee scheme's grid-scale modes grow */
        double lim = deck_courant_dt(d->dx, d->dy);
        if (!(d->dt < DECK_COURANT_MARGIN * lim))
            dk_report(c, dk_given(g, "dt", "dt_fs"), NULL, "%.12g is %s the Courant limit %.9g = "
                      "1/sqrt(1/dx^2 + 1/dy^2) for dx = %g, dy = %g (dt/limit = %.7g); the "
                      "fields are unstable there; expected dt < %.9g (0.1 %% below the limit; "
                      "e.g. %.6g)", d->dt, d->dt < lim ? "within 0.1 % of" : "not below", lim,
                      d->dx, d->dy, d->dt / lim, DECK_COURANT_MARGIN * lim, 0.99 * lim);
    }
}

static void parse_fields(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    d->pml_cells = 16;
    for (int m = 0; m < 6; m++)
        snprintf(d->ext[m], DECK_EXPR_MAX, "0");
    const cs *g = dk_group(c, root, "fields", 0), *s;
    if (!g)
        return;
    dk_keys(c, g, FIELD_KEYS);
    const cs *b = dk_group(c, g, "boundary", 0);
    if (b)
        parse_sides(c, b, DK_FBND, d->fbnd);
    if ((s = dk_group(c, g, "pml", 0))) {
        dk_keys(c, s, PML_KEYS);
        DK_INT(s, "cells", d->pml_cells, 1, 32767, 0);
    }
    for (int a = 0; a < 2 && c->box_ok; a++) {
        int n = a ? d->ny : d->nx;
        int np = (d->fbnd[2 * a] == FBND_PML) + (d->fbnd[2 * a + 1] == FBND_PML);
        if (np && np * d->pml_cells >= n)
            dk_report(c, s ? s : b, s ? "cells" : NULL, "%d PML cells on %d %c side(s) leave no "
                      "interior in %d cells; expected fewer PML cells or a larger grid",
                      d->pml_cells, np, a ? 'y' : 'x', n);
    }
    if ((s = dk_group(c, g, "filter", 0))) {
        dk_keys(c, s, FILTER_KEYS);
        DK_INT(s, "passes", d->filter_passes, 0, 16, 0);
        dk_bool(c, s, "compensate", &d->filter_compensate);
    }
    if ((s = dk_group(c, g, "external", 0))) {
        dk_keys(c, s, EXT_KEYS);
        const dk_alt ea[] = {{"E", "m_e c omega_p/e", 1, NULL},
                             {"E_Vm", "V/m", dk_lab_vm(c), NULL}};
        const dk_alt ba[] = {{"B", "m_e omega_p/e", 1, NULL},
                             {"B_T", "T", dk_lab_tesla(c), NULL}};
        int k = dk_alt_which(c, s, ea, 2, 0);
        if (k >= 0)
            parse_formula_vec(c, s, ea[k].key, d->ext, 1, ea[k].scale);
        if ((k = dk_alt_which(c, s, ba, 2, 0)) >= 0)
            parse_formula_vec(c, s, ba[k].key, d->ext + 3, 1, ba[k].scale);
    }
    if ((s = dk_group(c, g, "moving_window", 0))) {
        dk_keys(c, s, WIN_KEYS);
        dk_bool(c, s, "enabled", &d->window_enabled);
        const dk_alt ts[] = {{"t_start", "1/omega_p", 1, NULL},
                             {"t_start_fs", "fs", dk_lab_fs(c), NULL}};
        dk_num_alt(c, s, ts, 2, &d->window_t_start, DK_NONNEG, 0);
        if (d->window_enabled && d->fbnd[SIDE_XMIN] == FBND_PERIODIC)
            dk_report(c, s, "enabled", "the window moves along x but fields.boundary.xmin/xmax "
                      "are \"periodic\"; expected \"pml\" or \"mur\" in x");
    }
}

/* The transverse profile: "gaussian", "supergaussian" with its order, "flattop" with its edge. */
static void parse_laser_profile(dk_ctx *c, const cs *g, deck_laser *L)
{
    const dk_alt e[] = {{"edge", "c/omega_p", 1, NULL}, {"edge_um", "um", dk_lab_um(c), NULL}};
    const char *key[3] = {"order", "edge", "edge_um"};
    const int want[3] = {LPROF_SUPERGAUSSIAN, LPROF_FLATTOP, LPROF_FLATTOP};
    L->profile = LPROF_GAUSSIAN;
    L->order = 4;
    dk_enum(c, g, "profile", DK_LPROFILES, &L->profile);
    for (int i = 0; i < 3; i++)
        if (dk_member(g, key[i]) && L->profile != want[i])
            dk_report(c, dk_member(g, key[i]), NULL, "applies only to profile = \"%s\"; this "
                      "laser's profile is \"%s\"", DK_LPROFILES[want[i]],
                      DK_LPROFILES[L->profile]);
    if (dk_num(c, g, "order", &L->order, DK_POS, 0) > 0 && !(L->order >= 2 && L->order <= 100))
        dk_report(c, dk_member(g, "order"), NULL, "got %g; expected an order from 2 (a "
                  "Gaussian) to 100 (4 to 10 for the usual super-Gaussian)", L->order);
    if (L->profile == LPROF_FLATTOP)
        dk_num_alt(c, g, e, 2, &L->edge, DK_NONNEG, 0);
}

/* The angle of incidence in degrees: |angle| < 90, and the phase along the source plane,
 * of wavelength lambda0/|sin angle|, resolved by at least 4 cells of the plane. */
static void parse_laser_angle(dk_ctx *c, const cs *g, deck_laser *L)
{
    const deck *d = c->d;
    const cs *a = dk_member(g, "angle");
    if (dk_num(c, g, "angle", &L->angle, DK_ANY, 0) <= 0)
        return;
    if (!(fabs(L->angle) < 90.0)) {
        dk_report(c, a, NULL, "got %g; expected an angle of incidence in degrees from the "
                  "side's normal, -90 < angle < 90 (toward +%c when positive)", L->angle,
                  L->boundary >= SIDE_YMIN ? 'x' : 'y');
        L->angle = 0;
        return;
    }
    const int yside = L->boundary >= SIDE_YMIN;
    const double s = fabs(sin(L->angle * (3.14159265358979323846 / 180.0)));
    if (!c->box_ok || !(L->omega0 > 0) || s == 0.0)
        return;
    const double h = yside ? d->dx : d->dy, lam = 2 * 3.14159265358979323846 / L->omega0;
    if (lam / s < 4 * h)
        dk_report(c, a, NULL, "%g degrees: the phase along the source plane has the "
                  "wavelength lambda0/|sin angle| = %.4g = %.3g cells of %s = %g; expected at "
                  "least 4 cells: %s <= %.4g (normalised), or |angle| <= %.3g degrees",
                  L->angle, lam / s, lam / s / h, yside ? "dx" : "dy", h, yside ? "dx" : "dy",
                  lam / s / 4, asin(fmin(1.0, lam / (4 * h))) * (180.0 / 3.14159265358979323846));
}

static void parse_laser(dk_ctx *c, const cs *g, deck_laser *L)
{
    const deck *d = c->d;
    dk_keys(c, g, LASER_KEYS);
    L->envelope = ENV_SIN2;
    L->boundary = SIDE_XMIN;
    dk_laser_omega(c, g, L);
    dk_num(c, g, "phase", &L->phase, DK_ANY, 0);
    dk_enum(c, g, "envelope", DK_ENVELOPES, &L->envelope);
    dk_enum(c, g, "boundary", DK_SIDES, &L->boundary);
    const cs *p = dk_member(g, "polarization");
    if (p && config_setting_type(p) == CONFIG_TYPE_STRING) {
        const char *v = config_setting_get_string(p);
        if (v && !strcmp(v, "circular"))
            L->circular = 1;
        else
            dk_report(c, p, NULL, "got \"%.64s\"; expected an angle in radians or \"circular\"",
                      v ? v : "");
    } else if (p && dk_num_of(c, p, &L->polarization) == 0) {
        L->circular = 0;
    }
    dk_laser_lab(c, g, L);
    parse_laser_profile(c, g, L);
    const cs *r = dk_member(g, "ramp") ? dk_member(g, "ramp") : dk_member(g, "ramp_fs");
    if (L->envelope == ENV_FLATTOP) {
        L->ramp = L->duration / 4;
        if (dk_laser_ramp(c, g, L) > 0 && L->duration > 0 && L->ramp > L->duration)
            dk_report(c, r, NULL, "got %g (normalised); expected 0 < ramp <= duration = %g",
                      L->ramp, L->duration);
    } else if (r) {
        dk_report(c, r, NULL, "applies only to envelope = \"flattop\"; remove it or change the "
                  "envelope");
    }
    int yside = L->boundary >= SIDE_YMIN;
    double lx = d->nx * d->dx, ly = d->ny * d->dy;
    L->focus = !c->box_ok ? 0 : yside ? (L->boundary == SIDE_YMAX ? ly : 0)
                                      : (L->boundary == SIDE_XMAX ? lx : 0);
    L->center = !c->box_ok ? 0 : yside ? lx / 2 : ly / 2;
    dk_laser_place(c, g, L);
    parse_laser_angle(c, g, L);
}

/* Piecewise-linear table from the arrays skey (or its twin in um, skey_um) and fkey of g (0
 * when both are absent). */
static int get_pwl(dk_ctx *c, const cs *g, const char *axis, const char *fkey, deck_pwl *p)
{
    char lab[8];
    snprintf(lab, sizeof lab, "%s_um", axis);
    const dk_alt alt[] = {{axis, "c/omega_p", 1, NULL}, {lab, "um", dk_lab_um(c), NULL}};
    const int k = dk_alt_which(c, g, alt, 2, 0);
    if (k == -2)
        return -1;
    const char *skey = k == 1 ? lab : axis;
    const cs *s = dk_member(g, skey), *f = dk_member(g, fkey);
    if (!s && !f)
        return 0;
    if (!s || !f) {
        dk_report(c, g, s ? fkey : skey, "missing; expected %s and %s together", skey, fkey);
        return -1;
    }
    s = dk_seq(c, g, skey, -1, "numbers", 1);
    f = dk_seq(c, g, fkey, -1, "numbers", 1);
    if (!s || !f)
        return -1;
    int n = config_setting_length(s);
    if (config_setting_length(f) != n) {
        dk_report(c, f, NULL, "has %d values but %s has %d; expected equal lengths",
                  config_setting_length(f), skey, n);
        return -1;
    }
    if (n < 2) {
        dk_report(c, s, NULL, "has %d point(s); expected at least 2", n);
        return -1;
    }
    p->s = malloc((size_t)n * sizeof(double));
    p->f = malloc((size_t)n * sizeof(double));
    if (!p->s || !p->f) {
        dk_report(c, s, NULL, "out of memory for %d points", n);
        return -1;
    }
    p->n = n;
    int ok = 1;
    for (int i = 0; i < n; i++) {
        const cs *es = config_setting_get_elem(s, (unsigned)i);
        const cs *ef = config_setting_get_elem(f, (unsigned)i);
        if (dk_num_of(c, es, &p->s[i]) || dk_num_of(c, ef, &p->f[i]) ||
            !dk_range_ok(c, ef, p->f[i], DK_NONNEG))
            ok = 0;
        else if (i > 0 && ok && !(p->s[i] > p->s[i - 1])) {
            dk_report(c, es, NULL, "%.12g does not exceed the previous point %.12g; expected "
                      "strictly increasing %s", p->s[i], p->s[i - 1], skey);
            ok = 0;
        }
    }
    for (int i = 0; k == 1 && i < n; i++) /* in um: checked as given, then converted */
        p->s[i] *= alt[1].scale;
    return ok ? 1 : -1;
}

static void parse_density(dk_ctx *c, const cs *g, deck_species *sp)
{
    dk_keys(c, g, DENS_KEYS);
    dk_enum(c, g, "profile", DK_PROFILES, &sp->profile);
    dk_density_lab(c, g, sp);
    for (int i = 4; DENS_KEYS[i]; i++) { /* x, fx, y, fy, x_um, y_um: piecewise; expr */
        const cs *s = dk_member(g, DENS_KEYS[i]);
        int want = DENS_KEYS[i + 1] ? PROFILE_PIECEWISE : PROFILE_EXPR;
        if (s && sp->profile != want)
            dk_report(c, s, NULL, "applies only to profile = \"%s\"; this density is \"%s\"",
                      DK_PROFILES[want], DK_PROFILES[sp->profile]);
    }
    if (sp->profile == PROFILE_PIECEWISE) {
        int hx = get_pwl(c, g, "x", "fx", &sp->pwl_x), hy = get_pwl(c, g, "y", "fy", &sp->pwl_y);
        if (!hx && !hy)
            dk_report(c, g, NULL, "profile \"piecewise\" without points; expected x = [...] and "
                      "fx = [...] and/or y = [...] and fy = [...]");
    } else if (sp->profile == PROFILE_EXPR) {
        if (dk_str(c, g, "expr", sp->density_expr, sizeof sp->density_expr, 1) > 0) {
            dk_expand(c, dk_member(g, "expr"), sp->density_expr, sizeof sp->density_expr);
            check_formula(c, dk_member(g, "expr"), sp->density_expr, 0);
        }
    }
}

static void parse_momentum(dk_ctx *c, const cs *g, deck_species *sp)
{
    dk_keys(c, g, MOM_KEYS);
    dk_temperature(c, g, sp);
    parse_formula_vec(c, g, "drift", sp->drift, 0, 1.0);
}

static void parse_one_species(dk_ctx *c, const cs *g, deck_species *sp)
{
    const deck *d = c->d;
    dk_keys(c, g, SPECIES_KEYS);
    sp->mass = 1;
    sp->n = 1;
    for (int k = 0; k < 3; k++)
        snprintf(sp->drift[k], DECK_EXPR_MAX, "0");
    for (int k = 0; k < 4; k++)
        sp->bnd[k] = d->fbnd[k] == FBND_PERIODIC ? PBND_PERIODIC : PBND_ABSORBING;
    if (dk_str(c, g, "name", sp->name, sizeof sp->name, 1) > 0 &&
        sp->name[strspn(sp->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                  "0123456789_-+.")])
        dk_report(c, dk_member(g, "name"), NULL, "\"%s\" has characters other than letters, digits "
                  "and _-+.; expected a name usable in output dataset names", sp->name);
    dk_num(c, g, "charge", &sp->charge, DK_ANY, 1);
    dk_num(c, g, "mass", &sp->mass, DK_POS, 0);
    const int ppc_ok = dk_ivec(c, g, "ppc", sp->ppc, 2, 0, 4096, 1) > 0;
    if (ppc_ok && sp->ppc[0] * sp->ppc[1] > 65536)
        dk_report(c, dk_member(g, "ppc"), NULL, "%d x %d particles per cell; expected at most "
                  "65536", sp->ppc[0], sp->ppc[1]);
    else if (ppc_ok && (sp->ppc[0] == 0) != (sp->ppc[1] == 0))
        dk_report(c, dk_member(g, "ppc"), NULL, "[%d, %d]; expected both > 0, or [0, 0] for a "
                  "species with no initial load (filled by ionization)", sp->ppc[0], sp->ppc[1]);
    dk_bool(c, g, "immobile", &sp->immobile);
    const cs *s;
    if ((s = dk_group(c, g, "density", 0)))
        parse_density(c, s, sp);
    if ((s = dk_group(c, g, "momentum", 0)))
        parse_momentum(c, s, sp);
    if ((s = dk_group(c, g, "boundary", 0))) {
        parse_sides(c, s, DK_PBND, sp->bnd);
        for (int k = 0; k < 4; k++)
            if (sp->bnd[k] == PBND_PERIODIC && d->fbnd[k] != FBND_PERIODIC)
                dk_report(c, s, DK_SIDES[k], "\"periodic\" with fields.boundary.%s = \"%s\"; "
                          "expected \"absorbing\", \"reflecting\" or \"thermal\" where the "
                          "fields are not periodic", DK_SIDES[k], DK_FBND[d->fbnd[k]]);
    }
}

/* element and ionization of an ion species (design.md §14): the element's symbol, charge =
 * its initial charge state, max_charge up to Z (the electron species: check_electrons). */
static void parse_element(dk_ctx *c, const cs *g, deck_species *sp)
{
    char sym[8] = "";
    if (dk_str(c, g, "element", sym, sizeof sym, 0) > 0 && !(sp->element = elements_z(sym)))
        dk_report(c, dk_member(g, "element"), NULL, "\"%s\" is not an element from H to %s; "
                  "expected a symbol such as \"H\", \"He\", \"N\", \"Ar\"", sym,
                  elements_symbol(ELEMENTS_ZMAX));
    const cs *ion = dk_group(c, g, "ionization", 0);
    if (!ion)
        return;
    dk_keys(c, ion, ION_KEYS);
    int model = 0;
    dk_enum(c, ion, "model", ION_MODELS, &model);
    sp->ionize = 1;
    if (!sp->element) {
        dk_report(c, ion, NULL, "needs the species' element (element = \"N\"; ...)");
        return;
    }
    const int z = sp->element;
    if (sp->charge != floor(sp->charge) || sp->charge < 0 || sp->charge > z)
        dk_report(c, dk_member(g, "charge"), NULL, "%g for an ionizing %s ion; expected its "
                  "initial charge state, an integer from 0 to %d", sp->charge,
                  elements_symbol(z), z);
    long long mc = z;
    dk_int(c, ion, "max_charge", &mc, 1, z, 0);
    sp->max_charge = (int)mc;
    if (mc < sp->charge)
        dk_report(c, dk_member(ion, "max_charge"), NULL, "%lld is below the initial charge "
                  "state %g", mc, sp->charge);
}

/* The electron species that ionization of species i feeds: another species of charge -1,
 * mobile and not ionizing itself. */
static void check_electrons(dk_ctx *c, const cs *g, int i)
{
    deck *d = c->d;
    const cs *ion = dk_member(g, "ionization");
    char name[DECK_NAME_MAX] = "";
    if (dk_str(c, ion, "electrons", name, sizeof name, 1) <= 0)
        return;
    int e = -1;
    for (int k = 0; k < d->nspecies; k++)
        if (!strcmp(d->species[k].name, name))
            e = k;
    const cs *at = dk_member(ion, "electrons");
    if (e < 0 || e == i)
        dk_report(c, at, NULL, "\"%s\" %s; expected the name of another species (the "
                  "electrons)", name, e < 0 ? "is no species of the deck" : "is this species");
    else if (d->species[e].charge != -1.0 || d->species[e].immobile || d->species[e].ionize)
        dk_report(c, at, NULL, "species \"%s\" has charge %g%s%s; expected a mobile electron "
                  "species of charge -1 that does not ionize", name, d->species[e].charge,
                  d->species[e].immobile ? ", immobile" : "",
                  d->species[e].ionize ? ", ionizes" : "");
    d->species[i].ion_electrons = e;
}

static void parse_lasers(dk_ctx *c, const cs *root)
{
    const cs *l = dk_list(c, root, "lasers", DECK_MAX_LASERS, &c->d->nlasers);
    for (int i = 0; l && i < c->d->nlasers; i++) {
        const cs *e = config_setting_get_elem(l, (unsigned)i);
        if (config_setting_is_group(e))
            parse_laser(c, e, &c->d->lasers[i]);
    }
}

static void parse_species(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const cs *l = dk_list(c, root, "species", DECK_MAX_SPECIES, &d->nspecies);
    for (int i = 0; l && i < d->nspecies; i++) {
        const cs *e = config_setting_get_elem(l, (unsigned)i);
        if (!config_setting_is_group(e))
            continue;
        parse_one_species(c, e, &d->species[i]);
        parse_element(c, e, &d->species[i]);
        for (int j = 0; j < i; j++)
            if (d->species[i].name[0] && !strcmp(d->species[i].name, d->species[j].name))
                dk_report(c, dk_member(e, "name"), NULL, "\"%s\" is already the name of "
                          "species[%d]; expected unique names", d->species[i].name, j);
    }
    for (int i = 0; l && i < d->nspecies; i++)
        if (d->species[i].ionize)
            check_electrons(c, config_setting_get_elem(l, (unsigned)i), i);
}

/* Array of strings from names[] turned into a bit mask. */
static void get_name_mask(dk_ctx *c, const cs *g, const char *key, const char *const names[],
                          int *mask)
{
    const cs *s = dk_member(g, key);
    if (!s)
        return;
    if (!(s = dk_seq(c, g, key, -1, "strings", 0)))
        return;
    *mask = 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        int k;
        if (dk_enum_of(c, config_setting_get_elem(s, (unsigned)i), names, &k) == 0)
            *mask |= 1 << k;
    }
}

static void parse_diagnostics(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const char *snames[DECK_MAX_SPECIES + 1];
    for (int i = 0; i < d->nspecies; i++)
        snames[i] = d->species[i].name;
    snames[d->nspecies] = NULL;
    snprintf(d->output, sizeof d->output, "out");
    d->energy_every = 10;
    d->energy_growth_limit = 10.0;
    d->fields_quantities = FQ_E | FQ_B | FQ_J | FQ_RHO;
    d->avg_quantities = FQ_E | FQ_B | FQ_E2 | FQ_B2;
    d->particles_fraction = 0.01;
    d->particles_species_mask = (int)((1u << d->nspecies) - 1);
    const cs *g = dk_group(c, root, "diagnostics", 0), *s;
    deck_insitu_parse(c, g, snames);
    if (!g)
        return;
    dk_keys(c, g, DIAG_KEYS);
    dk_str(c, g, "output", d->output, sizeof d->output, 0);
    if ((s = dk_group(c, g, "energy", 0))) {
        dk_keys(c, s, ENERGY_KEYS);
        DK_INT(s, "every", d->energy_every, 0, LONG_MAX, 0);
        if (dk_num(c, s, "growth_limit", &d->energy_growth_limit, DK_NONNEG, 0) > 0 &&
            d->energy_growth_limit != 0 && !(d->energy_growth_limit > 1))
            dk_report(c, dk_member(s, "growth_limit"), NULL, "got %g; expected a factor > 1, "
                      "or 0 to turn the guard off", d->energy_growth_limit);
    }
    if ((s = dk_group(c, g, "fields", 0))) {
        dk_keys(c, s, FDIAG_KEYS);
        DK_INT(s, "every", d->fields_every, 0, LONG_MAX, 0);
        get_name_mask(c, s, "quantities", DK_FQ, &d->fields_quantities);
    }
    if ((s = dk_group(c, g, "fields_avg", 0))) { /* each dump the mean of `steps` steps */
        dk_keys(c, s, FAVG_KEYS);
        DK_INT(s, "every", d->avg_every, 0, LONG_MAX, 1);
        d->avg_steps = d->avg_every;
        DK_INT(s, "steps", d->avg_steps, 1, LONG_MAX, 0);
        if (d->avg_every > 0 && d->avg_steps > d->avg_every)
            dk_report(c, dk_member(s, "steps"), NULL, "%ld steps averaged before dumps %ld "
                      "steps apart; expected at most %ld (the windows may not overlap)",
                      d->avg_steps, d->avg_every, d->avg_every);
        get_name_mask(c, s, "quantities", DK_AQ, &d->avg_quantities);
        if (!d->avg_quantities)
            dk_report(c, dk_member(s, "quantities"), NULL, "is empty; expected some of E, B, "
                      "J, rho, E2, B2");
    }
    if ((s = dk_group(c, g, "particles", 0))) {
        dk_keys(c, s, PDIAG_KEYS);
        DK_INT(s, "every", d->particles_every, 0, LONG_MAX, 0);
        if (dk_num(c, s, "fraction", &d->particles_fraction, DK_POS, 0) > 0 &&
            d->particles_fraction > 1)
            dk_report(c, dk_member(s, "fraction"), NULL, "got %g; expected a fraction in (0, 1]",
                      d->particles_fraction);
        get_name_mask(c, s, "species", snames, &d->particles_species_mask);
        deck_insitu_parse_selection(c, s);
    }
    if ((s = dk_group(c, g, "checkpoint", 0))) {
        dk_keys(c, s, EVERY_KEYS);
        DK_INT(s, "every", d->checkpoint_every, 0, LONG_MAX, 0);
    }
}

/* The deck's text (malloc'd, NUL-terminated), read here rather than by libconfig, whose
 * scanner exits the process when a read fails and resolves @include against the deck's
 * folder even for absolute paths; NULL after reporting. */
#define DECK_TEXT_MAX (16 << 20)
static char *read_deck(const char *path)
{
    FILE *fp = fopen(path, "re");
    struct stat st;
    if (!fp) {
        empic_report(path, 0, "cannot open the deck: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
        empic_report(path, 0, "is %s; expected a libconfig deck file",
                     S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        fclose(fp);
        return NULL;
    }
    char *text = malloc(DECK_TEXT_MAX + 1);
    size_t n = text ? fread(text, 1, DECK_TEXT_MAX + 1, fp) : 0;
    int err = ferror(fp) ? errno : 0;
    fclose(fp);
    const char *why = !text ? "out of memory" : err ? strerror(err)
                    : n > DECK_TEXT_MAX ? "larger than 16 MiB" : NULL;
    if (why) {
        empic_report(path, 0, "cannot read the deck: %s", why);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        empic_report(path, 0, "holds NUL bytes; expected a libconfig deck (a text file)");
        free(text);
        return NULL;
    }
    int line = 1;
    for (const char *p = text; *p; line++) {
        p += strspn(p, " \t");
        if (!strncmp(p, "@include", 8)) {
            empic_report(path, line, "@include is not supported (a deck is one file, stored "
                         "whole in run.cfg and the checkpoints); copy the included settings "
                         "into the deck");
            free(text);
            return NULL;
        }
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return text;
}

int deck_load(const char *path, deck *d)
{
    if (!d)
        return -1;
    memset(d, 0, sizeof *d);
    if (!path || !path[0]) {
        empic_report(NULL, 0, "no deck file given; expected a path to a libconfig deck");
        return -1;
    }
    if (strlen(path) >= sizeof d->file) {
        empic_report(NULL, 0, "deck path of %zu characters; expected at most %zu", strlen(path),
                     sizeof d->file - 1);
        return -1;
    }
    snprintf(d->file, sizeof d->file, "%s", path);
    char *text = read_deck(path);
    if (!text)
        return -1;
    config_t cfg;
    config_init(&cfg);
    if (!config_read_string(&cfg, text)) {
        empic_report(path, config_error_line(&cfg), "cannot parse the deck: %s; expected a "
                     "libconfig deck (key = value; groups { }, arrays [ ], lists ( ))",
                     config_error_text(&cfg) ? config_error_text(&cfg) : "unknown error");
        config_destroy(&cfg);
        free(text);
        return -1;
    }
    free(text);
    dk_ctx c = {.file = d->file, .d = d};
    const cs *root = config_root_setting(&cfg);
    dk_keys(&c, root, ROOT_KEYS);
    dk_constants(&c, root);
    parse_simulation(&c, root);
    dk_lab_reference(&c, root);
    parse_grid(&c, root);
    parse_parallel(&c, root);
    parse_time(&c, root);
    parse_fields(&c, root);
    parse_lasers(&c, root);
    parse_species(&c, root);
    deck_collide_parse(&c, root);
    parse_diagnostics(&c, root);
    if (!c.nerr)
        deck_check(&c, root);
    config_destroy(&cfg);
    if (c.nerr) {
        empic_report(d->file, 0, "deck rejected: %d error%s", c.nerr, c.nerr > 1 ? "s" : "");
        deck_free(d);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- small helpers */

void deck_free(deck *d)
{
    if (!d)
        return;
    for (int i = 0; i < DECK_MAX_SPECIES; i++) {
        deck_pwl *p[2] = {&d->species[i].pwl_x, &d->species[i].pwl_y};
        for (int a = 0; a < 2; a++) {
            free(p[a]->s);
            free(p[a]->f);
            p[a]->s = p[a]->f = NULL;
            p[a]->n = 0;
        }
    }
}

double deck_courant_dt(double dx, double dy)
{
    return 1.0 / sqrt(1.0 / (dx * dx) + 1.0 / (dy * dy));
}
