/* profile.c - the plasma a deck describes, before it is loaded (profile.h): density and drift
 * profiles, the load positions in a cell, the scan of every load position, and the columns a
 * moving window brings in. The deck's checks (deck_run.c) and the load (species.c) both use
 * it, so that --check refuses exactly what the load would meet. */
#include "profile.h"
#include "empic.h"

#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

double profile_pwl(const deck_pwl *p, double s)
{
    if (!p || p->n <= 0 || !p->s || !p->f)
        return 1.0;
    int n = p->n;
    if (n == 1 || s <= p->s[0])
        return p->f[0];
    if (s >= p->s[n - 1])
        return p->f[n - 1];
    int lo = 0, hi = n - 1;                 /* invariant: s[lo] < s < s[hi] ... or equal lo */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (p->s[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    double t = (s - p->s[lo]) / (p->s[hi] - p->s[lo]);
    return p->f[lo] + t * (p->f[hi] - p->f[lo]);
}

long profile_window_moves(const deck *d)
{
    if (!d->window_enabled)
        return 0;
    /* dt < dx (Courant): the window, moving at c, never falls behind by a whole cell, so it
     * moves once at each step n with n dt - t_start >= (moves + 1) dx */
    double m = floor((d->steps * d->dt - d->window_t_start) / (d->dx * (1.0 - 1e-12)));
    return m > 0 ? (m < 1e12 ? (long)m : 1000000000000L) : 0;
}

void profile_open(profile_eval *p, const deck_species *c)
{
    char err[256];
    memset(p, 0, sizeof *p);
    if (c->profile == PROFILE_EXPR &&
        !(p->dens = formula_new(c->density_expr, 0, err, sizeof err)))
        EMPIC_DIE("species %s: density formula: %s", c->name, err);
    for (int a = 0; a < 3; a++) {
        if (formula_number(c->drift[a], &p->drift_const[a]))
            continue;
        if (!(p->drift[a] = formula_new(c->drift[a], 0, err, sizeof err)))
            EMPIC_DIE("species %s: drift formula: %s", c->name, err);
    }
}

void profile_close(profile_eval *p)
{
    if (p->dens)
        formula_free(p->dens);
    for (int a = 0; a < 3; a++)
        if (p->drift[a])
            formula_free(p->drift[a]);
}

double profile_density(const deck_species *c, profile_eval *p, double x, double y)
{
    switch (c->profile) {
    case PROFILE_PIECEWISE:
        return c->n * profile_pwl(&c->pwl_x, x) * profile_pwl(&c->pwl_y, y);
    case PROFILE_EXPR:
        return c->n * formula_eval(p->dens, x, y);
    default:
        return c->n;
    }
}

float profile_offset(int a, int n) { return ((float)a + 0.5f) / (float)n; }

/* Whether density v at (x, y) goes before the peak kept in f: larger, or as large and first
 * in x, then y (so that the thread count does not choose among equal peaks). */
static int peak_before(double v, double x, double y, const profile_fault *f)
{
    return v > f->peak || (v == f->peak && (x < f->peak_x || (x == f->peak_x && y < f->peak_y)));
}

/* The profile of cell (ig, j) at its load positions, as load_cell evaluates it: adds the
 * particles to *count; on the first position whose density is not finite or negative, whose
 * weight overflows single precision, or whose drift is not finite, fills *bad and returns 1. */
static int scan_cell(const deck *d, const deck_species *c, profile_eval *p, long ig, int j,
                     long long *count, profile_fault *bad)
{
    for (int b = 0; b < c->ppc[1]; b++)
        for (int a = 0; a < c->ppc[0]; a++) {
            double xp = (ig + (double)profile_offset(a, c->ppc[0])) * d->dx;
            double yp = (j + (double)profile_offset(b, c->ppc[1])) * d->dy;
            double v = profile_density(c, p, xp, yp);
            const char *what = NULL;
            if (!isfinite(v) || v < 0)
                what = "density";
            else if (v / (c->ppc[0] * c->ppc[1]) > SPECIES_FLOAT_MAX)
                what = "density (the weight overflows single precision)";
            for (int k = 0; v > 0 && !what && k < 3; k++) {
                double u = p->drift[k] ? formula_eval(p->drift[k], xp, yp) : p->drift_const[k];
                if (!isfinite(u) || fabs(u) > SPECIES_FLOAT_MAX) {
                    what = k == 0 ? "drift[0]" : k == 1 ? "drift[1]" : "drift[2]";
                    v = u;
                }
            }
            if (what) {
                bad->found = 1;
                bad->what = what;
                bad->x = xp;
                bad->y = yp;
                bad->value = v;
                return 1;
            }
            *count += v > 0;
            if (peak_before(v, xp, yp, bad)) {
                bad->peak = v;
                bad->peak_x = xp;
                bad->peak_y = yp;
            }
        }
    return 0;
}

void profile_scan(const deck *d, int s, long ig0, long ig1, long long stride,
                  long long *per_column, profile_fault *bad)
{
    const deck_species *c = &d->species[s];
    const long long cells = (long long)(ig1 - ig0) * d->ny, visits = (cells + stride - 1) / stride;
    long long first = LLONG_MAX; /* first bad visit, in column then row order */
    memset(bad, 0, sizeof *bad);
    memset(per_column, 0, (size_t)(ig1 - ig0) * sizeof *per_column);
#pragma omp parallel
    {
        profile_eval p;
        profile_open(&p, c);
        profile_fault mine = {0};
        long long at = LLONG_MAX;
#pragma omp for schedule(dynamic, 64)
        for (long long m = 0; m < visits; m++) {
            long long n = 0, k = m * stride / d->ny;
            if (m < at && scan_cell(d, c, &p, ig0 + (long)k, (int)(m * stride % d->ny), &n, &mine))
                at = m;
#pragma omp atomic
            per_column[k] += n;
        }
        profile_close(&p);
#pragma omp critical
        {
            const profile_fault *top = peak_before(mine.peak, mine.peak_x, mine.peak_y, bad)
                                           ? &mine
                                           : bad;
            const double peak = top->peak, px = top->peak_x, py = top->peak_y;
            if (at < first) {
                first = at;
                *bad = mine;
            }
            bad->peak = peak;
            bad->peak_x = px;
            bad->peak_y = py;
        }
    }
}

int profile_find(const deck *d, int s, long i0, long i1, int j0, int j1, long long budget,
                 profile_hit *hit)
{
    const deck_species *c = &d->species[s];
    const int ppc = c->ppc[0] * c->ppc[1], rows = j1 - j0;
    const long long cells = (long long)(i1 - i0) * rows;
    long long stride = budget > 0 ? (cells * ppc + budget - 1) / budget : 1;
    stride = stride < 1 ? 1 : stride;
    profile_eval p;
    profile_open(&p, c);
    int found = 0;
    for (long long m = 0; m < cells && !found; m += stride) {
        const long i = i0 + (long)(m / rows);
        const int j = j0 + (int)(m % rows);
        for (int q = 0; q < ppc && !found; q++) {
            double x = (i + (double)profile_offset(q % c->ppc[0], c->ppc[0])) * d->dx;
            double y = (j + (double)profile_offset(q / c->ppc[0], c->ppc[1])) * d->dy;
            double v = profile_density(c, &p, x, y);
            if (v > 0) {
                *hit = (profile_hit){.i = i, .j = j, .x = x, .y = y, .n = v};
                found = 1;
            }
        }
    }
    profile_close(&p);
    return found;
}
