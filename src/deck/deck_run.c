/* deck_run.c - checks of a parsed deck against what the run will do with it, so that
 * `--check` refuses what the run would refuse or compute wrongly: the cluster split, values
 * that under- or overflow single precision, lasers on open sides only and in before the
 * window moves, distinct names in the output files, and every density and drift value that
 * the load and the moving window's injection will evaluate (deck_read.h). */
#include "deck_read.h"
#include "empic.h"
#include "lasers.h"
#include "profile.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Profile values evaluated by the checks of one deck (about 3 s at most, typically well under
 * 0.1 s): beyond it, they visit an even subset of the cells. */
static long long scan_budget = 1LL << 26;

void deck_set_scan_budget(long long points) { scan_budget = points > 0 ? points : 1; }

/* Columns the moving window may inject: the checks keep a count per column, and the load's
 * random keys carry the box lengths moved in 16 bits (species.c). */
#define WINDOW_COLUMNS_MAX (1L << 24)

/* Positive quantities stored in single precision: this range leaves room for products. */
#define FLOAT_LO 1e-30
#define FLOAT_HI SPECIES_FLOAT_MAX

/* omega_p dt: the leapfrog is unstable at 2 (an error from 1.9), inaccurate beyond 0.5
 * (a warning) */
#define STABLE_WPDT_MAX 1.9
#define STABLE_WPDT_WARN 0.5

static const char *const SIDE_NAME[4] = {"xmin", "xmax", "ymin", "ymax"};

/* Setting key of element i of list `list` under root (i < 0: root.list itself). */
static const cs *elem(const cs *root, const char *list, int i, const char *key)
{
    const cs *l = dk_member(root, list);
    if (l && i >= 0)
        l = config_setting_get_elem(l, (unsigned)i);
    return l && key ? dk_member(l, key) : l;
}

void deck_output_name(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", *src ? src : "species");
    for (char *p = dst; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
}

int dk_float_range(dk_ctx *c, const cs *s, const char *what, double v, int zero_ok)
{
    double a = fabs(v);
    if ((zero_ok && v == 0) || (a >= FLOAT_LO && a <= FLOAT_HI))
        return 0;
    dk_report(c, s, NULL, "%s = %g %s single precision, in which the run computes; expected "
              "a magnitude in [%g, %g]%s", what, v, a < FLOAT_LO ? "underflows" : "overflows",
              FLOAT_LO, FLOAT_HI, zero_ok ? " or 0" : "");
    return -1;
}

/* Clusters: split_axis makes an even number k >= 2 of near-equal clusters no wider than
 * asked; each must hold a cell, and with more than two along an axis, three (a cluster's
 * deposit reaches one cell into each neighbour, and same-colour clusters must not touch). */
static void check_clusters(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    for (int a = 0; a < 2; a++) {
        int n = a ? d->ny : d->nx, want = d->cluster[a];
        int k = (n + want - 1) / want;
        k += k & 1;
        k = k < 2 ? 2 : k;
        int narrow = n / k, need = k > 2 ? 3 : 1;
        if (narrow >= need)
            continue;
        const cs *g = elem(root, "grid", -1, NULL);
        if (n < 2)
            dk_report(c, dk_member(g, "cells"), NULL, "%d cell along %c: the cluster split "
                      "needs at least 2 cells along each axis (for a quasi-1D run use 2)", n,
                      a ? 'y' : 'x');
        else
            dk_report(c, dk_member(g, dk_member(g, "cluster") ? "cluster" : "cells"), NULL,
                      "%d cells along %c split into %d clusters of at most %d cells leave "
                      "clusters of %d; expected at least 3 (two clusters may be narrower: "
                      "cluster[%d] >= %d)", n, a ? 'y' : 'x', k, want, narrow, a, (n + 1) / 2);
    }
}

static void check_ranges(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    /* dx, dy themselves: parse_grid */
    const cs *dx = dk_given(elem(root, "grid", -1, NULL), "dx", "dx_um");
    dk_float_range(c, dx, "box length nx dx", d->nx * d->dx, 0);
    dk_float_range(c, dx, "box length ny dy", d->ny * d->dy, 0);
    dk_float_range(c, dk_given(elem(root, "time", -1, NULL), "dt", "dt_fs"), "dt", d->dt, 0);
    for (int s = 0; s < d->nspecies; s++) {
        const deck_species *sp = &d->species[s];
        const cs *g = elem(root, "species", s, NULL);
        const cs *m = dk_member(g, "mass");
        dk_float_range(c, m ? m : g, "mass", sp->mass, 0);
        dk_float_range(c, dk_member(g, "charge"), "charge", sp->charge, 1);
        if (sp->charge != 0)
            dk_float_range(c, m ? m : dk_member(g, "charge"), "charge/mass", sp->charge / sp->mass,
                        0);
        dk_float_range(c, g, "density n", sp->n, 1);
        for (int k = 0; k < 3; k++)
            dk_float_range(c, g, "thermal momentum", sp->uth[k], 1);
    }
    for (int l = 0; l < d->nlasers; l++) {
        const deck_laser *L = &d->lasers[l];
        const cs *g = elem(root, "lasers", l, NULL);
        dk_float_range(c, dk_given(g, "a0", "intensity"), "a0", L->a0, 0);
        dk_float_range(c, dk_given(g, "omega0", "lambda0"), "omega0", L->omega0, 0);
        dk_float_range(c, dk_given(g, "omega0", "lambda0"), "peak field a0 omega0",
                       L->a0 * L->omega0, 0);
        dk_float_range(c, dk_given(g, "w0", "w0_um"), "w0", L->w0, 0);
        dk_float_range(c, dk_given(g, "w0", "w0_um"), "Rayleigh length omega0 w0^2 / 2",
                    0.5 * L->omega0 * L->w0 * L->w0, 0);
        dk_float_range(c, dk_given(g, "duration", "duration_fs"), "duration", L->duration, 0);
    }
}

/* A tilted laser's footprint on its source plane (laser_footprint: 2 w each side of its
 * axis) within the part of the plane the beam can use: clear of the PMLs of the sides across
 * it, and of the box's edges (a periodic pair of sides would join the tilted phase fronts
 * with a jump). Warned, not refused: a beam cut there is still launched, clipped. */
static void check_footprint(dk_ctx *c, const cs *g, int l, const laser_src *src)
{
    const deck *d = c->d;
    const int ax = src->axis, k0 = ax ? SIDE_XMIN : SIDE_YMIN, k1 = ax ? SIDE_XMAX : SIDE_YMAX;
    const double h = ax ? d->dx : d->dy, len = (ax ? d->nx : d->ny) * h;
    const double lo = d->fbnd[k0] == FBND_PML ? d->pml_cells * h : 0.0;
    const double hi = len - (d->fbnd[k1] == FBND_PML ? d->pml_cells * h : 0.0);
    double a, b;
    laser_footprint(src, d, &a, &b);
    if (a >= lo && b <= hi)
        return;
    const char r = ax ? 'x' : 'y';
    dk_warn(c, dk_member(g, "angle") ? dk_member(g, "angle") : g, NULL, "laser %d at %g "
            "degrees: its footprint on the source plane (2 w each side of the axis, where the "
            "axis crosses it) spans %c = %.4g to %.4g, beyond the %s %.4g to %.4g; the beam is "
            "cut there: widen the box along %c, move center (%.4g) or the focus, or take a "
            "smaller angle", l, d->lasers[l].angle, r, a, b,
            d->fbnd[k0] == FBND_PML || d->fbnd[k1] == FBND_PML ? "plane clear of the PMLs,"
                                                                  : "box,", lo, hi, r,
            d->lasers[l].center);
}

/* Lasers enter through an open side, and those along x are in before the window moves
 * (their source plane is fixed in the lab). */
static void check_lasers(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    for (int l = 0; l < d->nlasers; l++) {
        const deck_laser *L = &d->lasers[l];
        const cs *g = elem(root, "lasers", l, NULL);
        if (d->fbnd[L->boundary] == FBND_PERIODIC) {
            dk_report(c, g, "boundary", "\"%s\" is a periodic side (fields.boundary.%s); "
                      "expected a laser to enter through a \"pml\" or \"mur\" side",
                      SIDE_NAME[L->boundary], SIDE_NAME[L->boundary]);
            continue;
        }
        laser_src src;
        laser_setup(&src, L, d, d->fbnd[L->boundary] == FBND_PML ? d->pml_cells : 0);
        double end = laser_end_time(&src, d);
        if (d->window_enabled && src.axis == 0 && end > d->window_t_start)
            dk_report(c, elem(root, "fields", -1, "moving_window"), "t_start", "%g: laser %d "
                      "is still being launched from its x boundary until t = %.6g; expected "
                      "t_start >= %.6g", d->window_t_start, l, end, end);
        if (L->angle != 0.0)
            check_footprint(c, g, l, &src);
    }
}

/* Species names become dataset and file names with [^A-Za-z0-9] replaced by '_'. */
static void check_names(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    char a[DECK_NAME_MAX], b[DECK_NAME_MAX];
    for (int i = 0; i < d->nspecies; i++)
        for (int j = 0; j < i; j++) {
            deck_output_name(a, sizeof a, d->species[i].name);
            deck_output_name(b, sizeof b, d->species[j].name);
            if (!strcmp(a, b) && strcmp(d->species[i].name, d->species[j].name))
                dk_report(c, elem(root, "species", i, "name"), NULL, "\"%s\" and species[%d]'s "
                          "\"%s\" are both \"%s\" in the output files (only letters and digits "
                          "are kept); expected names that differ there", d->species[i].name, j,
                          d->species[j].name, a);
        }
}

/* The particle slots of one species are indexed by int (species.c). */
static void check_slots(dk_ctx *c, const cs *root, int s)
{
    const deck *d = c->d;
    double ncl = ((d->nx + d->cluster[0] - 1) / d->cluster[0] + 1.0) *
                 ((d->ny + d->cluster[1] - 1) / d->cluster[1] + 1.0);
    double slots = d->load_particles[s] * (1.0 + d->slack) + 64.0 * ncl;
    if (slots > 2147483647.0)
        dk_report(c, elem(root, "species", s, "ppc"), NULL, "about %.3g particles of this "
                  "species need %.3g particle slots with the slack, above the limit of 2^31 "
                  "per species; expected fewer particles per cell or cells (or split the "
                  "species in two)", d->load_particles[s], slots);
}

/* Every position the load and the injection evaluate species s's profile at (a subset beyond
 * the budget): the first bad value with its position, and the particle count of the fullest
 * window into d->load_particles[s]; the largest density met and its (x, y) into peak[] (for
 * a uniform profile, n at x = y = NaN). */
static void check_profile(dk_ctx *c, const cs *root, int s, double peak[3])
{
    deck *d = c->d;
    const deck_species *sp = &d->species[s];
    const long moves = profile_window_moves(d), ncol = d->nx + moves;
    const long limit = WINDOW_COLUMNS_MAX < 65535L * d->nx ? WINDOW_COLUMNS_MAX : 65535L * d->nx;
    if (ncol > limit) {
        if (s == 0)
            dk_report(c, elem(root, "time", -1, NULL), NULL, "the moving window would move %ld "
                      "cells in %ld steps; expected at most %ld (fewer steps, or a larger dx)",
                      moves, d->steps, limit - d->nx);
        return;
    }
    const long long ppc = (long long)sp->ppc[0] * sp->ppc[1];
    const double cells = (double)ncol * d->ny;
    const double budget = (double)scan_budget / (d->nspecies > 0 ? d->nspecies : 1);
    long long stride = (long long)ceil(cells * ppc / budget);
    stride = stride < 1 ? 1 : stride;
    if (stride > 1 && stride % d->ny == 0) /* visit every row over the columns */
        stride++;
    int plain = sp->profile == PROFILE_UNIFORM;
    for (int k = 0; k < 3; k++) {
        double v;
        plain &= formula_number(sp->drift[k], &v);
    }
    peak[0] = sp->n;
    peak[1] = peak[2] = NAN;
    if (plain) { /* the same value everywhere, checked by check_ranges */
        d->load_particles[s] = sp->n > 0 ? (double)d->nx * d->ny * ppc : 0.0;
        check_slots(c, root, s);
        return;
    }
    long long *col = calloc((size_t)ncol, sizeof *col);
    if (!col) {
        dk_report(c, elem(root, "species", s, NULL), NULL, "out of memory checking the "
                  "profile over %ld columns", ncol);
        return;
    }
    profile_fault bad;
    profile_scan(d, s, 0, ncol, stride, col, &bad);
    peak[0] = bad.peak;
    peak[1] = bad.peak_x;
    peak[2] = bad.peak_y;
    if (bad.found) {
        const cs *g = elem(root, "species", s, NULL), *at = dk_member(g, "density");
        if (at && dk_member(at, sp->profile == PROFILE_EXPR ? "expr" : "n"))
            at = dk_member(at, sp->profile == PROFILE_EXPR ? "expr" : "n");
        if (!strncmp(bad.what, "drift", 5)) {
            const cs *dr = dk_member(dk_member(g, "momentum"), "drift");
            at = dr ? config_setting_get_elem(dr, (unsigned)(bad.what[6] - '0')) : g;
        }
        dk_report(c, at ? at : g, NULL, "%s = %g at (x, y) = (%.9g, %.9g)%s, a position where "
                  "the %s evaluates it; expected a finite value%s there (the first such "
                  "position%s)", bad.what, bad.value, bad.x, bad.y,
                  bad.x >= d->nx * d->dx ? " (lab frame)" : "",
                  bad.x >= d->nx * d->dx ? "moving window's injection" : "initial load",
                  bad.what[0] == 'd' && bad.what[1] == 'e' ? " >= 0" : "",
                  stride > 1 ? " among the positions checked" : "");
    }
    /* the fullest box-wide window of columns (the moving window holds nx columns) */
    long long sum = 0, fullest = 0;
    for (long k = 0; k < ncol; k++) {
        sum += col[k] - (k >= d->nx ? col[k - d->nx] : 0);
        fullest = sum > fullest ? sum : fullest;
    }
    free(col);
    d->load_particles[s] = (double)fullest * (double)stride;
    check_slots(c, root, s);
}

/* " at (x, y) = (..)" for a profile's densest position, "" for a uniform one. */
static const char *where(char *buf, size_t len, const double at[3])
{
    if (isnan(at[1]))
        snprintf(buf, len, " (uniform)");
    else
        snprintf(buf, len, " at (x, y) = (%.6g, %.6g)", at[1], at[2]);
    return buf;
}

/* Stability of the explicit scheme beyond the vacuum Courant limit (parse_time): the plasma
 * frequency at the densest load position, omega_p^2 = sum over the mobile species of
 * n q^2 / m with each species at its own peak (an upper bound where the peaks lie apart;
 * species_wp2: field ionization complete),
 * and the grid-heating regime dx > pi lambda_D of each species with a thermal spread. */
/* n q^2 / m of species s at its peak, for the plasma it can become: an ionizing species at
 * its max_charge, an electron species that ionization fills (ppc [0, 0]) with an electron
 * for each level its ion species can lose. */
static double species_wp2(const deck *d, int s, double peak[][3])
{
    const deck_species *sp = &d->species[s];
    if (sp->immobile)
        return 0.0;
    if (sp->ppc[0] == 0) {
        double n = 0.0;
        for (int k = 0; k < d->nspecies; k++)
            if (d->species[k].ionize && d->species[k].ion_electrons == s)
                n += peak[k][0] * (d->species[k].max_charge - d->species[k].charge);
        return n * sp->charge * sp->charge / sp->mass;
    }
    const double q = sp->ionize ? sp->max_charge : sp->charge;
    return peak[s][0] * q * q / sp->mass;
}

static void check_stability(dk_ctx *c, const cs *root, double peak[][3])
{
    const deck *d = c->d;
    const cs *dt = dk_given(elem(root, "time", -1, NULL), "dt", "dt_fs");
    double wp2 = 0.0, top = 0.0;
    int ts = -1;
    char at[96];
    for (int s = 0; s < d->nspecies; s++) {
        const deck_species *sp = &d->species[s];
        const double w2 = species_wp2(d, s, peak);
        wp2 += w2;
        if (w2 > top) {
            top = w2;
            ts = s;
        }
        double uth = fmax(sp->uth[0], fmax(sp->uth[1], sp->uth[2]));
        const double h = fmax(d->dx, d->dy);
        if (w2 > 0 && uth > 0 && h > M_PI * uth / sqrt(w2))
            dk_warn(c, elem(root, "species", s, NULL), NULL, "the cell size %g is %.3g Debye "
                    "lengths (lambda_D = u_th / omega_p = %.4g with u_th = %g and n = %g%s): "
                    "above pi, numerical (grid) heating raises the temperature of this "
                    "species; expected dx <= %.4g, or more thermal spread", h,
                    h * sqrt(w2) / uth, uth / sqrt(w2), uth, peak[s][0],
                    where(at, sizeof at, peak[s]), M_PI * uth / sqrt(w2));
    }
    const double wpdt = sqrt(wp2) * d->dt;
    if (ts < 0 || wpdt <= STABLE_WPDT_WARN)
        return;
    const char *fmt = "omega_p dt = %.4g (omega_p = %.4g: sum of n q^2/m over the mobile "
                      "species, the largest species %s with n = %g%s); %s; expected dt < %.4g "
                      "(omega_p dt < %g)%s";
    if (wpdt >= STABLE_WPDT_MAX)
        dk_report(c, dt, NULL, fmt, wpdt, sqrt(wp2), d->species[ts].name, peak[ts][0],
                  where(at, sizeof at, peak[ts]), "the leapfrog of the plasma oscillation is "
                  "unstable at omega_p dt >= 2 and the energy explodes",
                  STABLE_WPDT_MAX / sqrt(wp2), STABLE_WPDT_MAX,
                  ", or for accuracy dt below 0.2/omega_p");
    else
        dk_warn(c, dt, NULL, fmt, wpdt, sqrt(wp2), d->species[ts].name, peak[ts][0],
                where(at, sizeof at, peak[ts]), "stable, but the plasma oscillation's "
                "frequency and damping are off by several percent", STABLE_WPDT_WARN /
                sqrt(wp2), STABLE_WPDT_WARN, " for accuracy");
}

/* Plasma in the layer at side k (the PML's pml cells and, for laser l >= 0 launched there,
 * the cells up to its source plane: depth cells in all) of mobile species s: a warning with
 * the first such load position and where the plasma should start instead. */
static void check_edge(dk_ctx *c, const cs *root, int k, int s, int depth, int pml, int l)
{
    const deck *d = c->d;
    const int axis = k >= SIDE_YMIN, hi = k == SIDE_XMAX || k == SIDE_YMAX;
    const int n = axis ? d->ny : d->nx;
    const long ncol = d->nx + (axis ? profile_window_moves(d) : 0);
    const long i0 = axis ? 0 : hi ? n - depth : 0, i1 = axis ? ncol : hi ? n : depth;
    const int j0 = !axis ? 0 : hi ? n - depth : 0, j1 = !axis ? d->ny : hi ? n : depth;
    profile_hit h;
    if (!profile_find(d, s, i0, i1, j0, j1, scan_budget / 16, &h))
        return;
    const long cell = axis ? h.j : h.i;
    const long first = hi ? n - depth : 0, last = hi ? n - 1 : depth - 1;
    const int in_pml = hi ? cell >= n - pml : cell < pml;
    const double h1 = axis ? d->dy : d->dx, safe = hi ? (n - depth) * h1 : depth * h1;
    char region[160], fix[48] = "";
    if (in_pml)
        snprintf(region, sizeof region, "inside the %s PML (cells %ld-%ld along %c): the layer "
                 "damps the fields of its currents", SIDE_NAME[k], hi ? (long)(n - pml) : 0L,
                 hi ? (long)n - 1 : (long)pml - 1, axis ? 'y' : 'x');
    else
        snprintf(region, sizeof region, "behind laser %d's source plane (cells %ld-%ld along "
                 "%c): the laser does not reach it and its fields leave as scattered light", l,
                 first, last, axis ? 'y' : 'x');
    if (l >= 0)
        snprintf(fix, sizeof fix, " (laser %d's source plane)", l);
    dk_warn(c, elem(root, "species", s, "density"), NULL, "species '%s' has density %g at (x, "
            "y) = (%.6g, %.6g), cell %ld %s; start the plasma at %c %s %.6g%s",
            d->species[s].name, h.n, h.x, h.y, cell, region, axis ? 'y' : 'x', hi ? "<=" : ">=",
            safe, fix);
}

/* Plasma that the open boundaries would mishandle: inside a PML, or between a side and the
 * source plane of a laser launched from it (xmax with the moving window is left out: the
 * window brings the plasma in there). */
static void check_edges(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    for (int k = 0; k < 4; k++) {
        if (d->fbnd[k] == FBND_PERIODIC || (k == SIDE_XMAX && d->window_enabled))
            continue;
        const int n = k >= SIDE_YMIN ? d->ny : d->nx;
        const int pml = d->fbnd[k] == FBND_PML ? d->pml_cells : 0;
        int depth = pml, las = -1;
        for (int l = 0; l < d->nlasers; l++) {
            laser_src src;
            if (d->lasers[l].boundary != k)
                continue;
            laser_setup(&src, &d->lasers[l], d, pml);
            const int in = src.sign > 0 ? src.plane : n - src.plane;
            if (in > depth)
                depth = in, las = l;
        }
        for (int s = 0; s < d->nspecies && depth > 0; s++)
            if (!d->species[s].immobile && d->species[s].charge != 0)
                check_edge(c, root, k, s, depth < n ? depth : n, pml, las);
    }
}

/* The external fields (fields.external): a number in single precision's range, or a formula
 * whose values there are, on a 9 x 9 lattice over the box (and the lab positions the moving
 * window reaches) at 9 times from 0 to the end of the run (the run evaluates them at the Yee
 * points at every step: extfield.h). The first bad value is reported with its place. */
static void check_external(dk_ctx *c, const cs *root)
{
    const deck *d = c->d;
    const cs *g = elem(root, "fields", -1, "external");
    const double T = d->steps * d->dt;
    const double lx = d->nx * d->dx + (d->window_enabled ? fmax(0.0, T - d->window_t_start) : 0);
    for (int m = 0; m < 6; m++) {
        const cs *v = dk_given(g, m < 3 ? "E" : "B", m < 3 ? "E_Vm" : "B_T");
        const cs *at = v ? config_setting_get_elem(v, (unsigned)(m % 3)) : g;
        char what[32];
        snprintf(what, sizeof what, "external %c%c", "EB"[m / 3], "xyz"[m % 3]);
        double num;
        if (dk_numeric_text(d->ext[m], &num)) {
            dk_float_range(c, at, what, num, 1);
            continue;
        }
        formula *f = formula_new(d->ext[m], 1, NULL, 0);
        for (int k = 0; f && k < 9 * 9 * 9; k++) {
            const double x = lx * (k % 9) / 8.0, y = d->ny * d->dy * (k / 9 % 9) / 8.0;
            const double t = T * (k / 81) / 8.0, e = formula_eval_t(f, x, y, t);
            if (fabs(e) <= FLOAT_HI && (e == 0 || fabs(e) >= FLOAT_LO))
                continue;
            snprintf(what + strlen(what), sizeof what - strlen(what), " at (x, y, t)");
            dk_report(c, at, NULL, "%s = (%.6g, %.6g, %.6g) is %g; expected a finite value of "
                      "magnitude in [%g, %g] or 0 (the run evaluates the formula at every "
                      "step)", what, x, y, t, e, FLOAT_LO, FLOAT_HI);
            break;
        }
        formula_free(f);
    }
}

void deck_check(dk_ctx *c, const cs *root)
{
    if (!c->box_ok)
        return;
    check_clusters(c, root);
    check_ranges(c, root);
    check_external(c, root);
    check_lasers(c, root);
    check_names(c, root);
    if (c->nerr) /* the profiles need parsed formulas and a sound box */
        return;
    double peak[DECK_MAX_SPECIES][3];
    for (int s = 0; s < c->d->nspecies; s++)
        check_profile(c, root, s, peak[s]);
    if (!c->nerr)
        check_stability(c, root, peak);
    if (!c->nerr)
        check_edges(c, root);
}

int deck_recheck(deck *d)
{
    dk_ctx c = {.file = d->file, .d = d, .box_ok = 1};
    double peak[3];
    for (int s = 0; s < d->nspecies; s++)
        check_profile(&c, NULL, s, peak);
    return c.nerr ? -1 : 0;
}
