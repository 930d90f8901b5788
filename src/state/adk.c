/* adk.c - the ADK level table of an ionizing species (include/ionize.h), from the element's
 * NIST ionization energies (elements.c) and the deck's units. */
#include "adk.h"
#include "elements.h"

#include <math.h>
#include <string.h>

/* SI constants (CODATA 2018) */
#define QE_SI 1.602176634e-19
#define ME_SI 9.1093837015e-31
#define C_LIGHT 299792458.0
#define EPS0 8.8541878128e-12

static double omega_p(double n0) { return sqrt(n0 * 1e6 * QE_SI * QE_SI / (EPS0 * ME_SI)); }

double adk_field_unit(double n0) { return ME_SI * C_LIGHT * omega_p(n0) / QE_SI; }

double adk_time_unit(double n0) { return 1.0 / omega_p(n0); }

/* ln of the rate in atomic units, w = exp(lnc - p ln E - b / E) at E in atomic units, of the
 * level of ionization energy ip (atomic units) that leaves charge z. */
static void adk_level_au(double ip, int z, double *lnc, double *p, double *b)
{
    const double ns = z / sqrt(2.0 * ip), k3 = pow(2.0 * ip, 1.5);
    *p = 2.0 * ns - 1.0;
    /* C^2 = 2^(2n*) / (n* Gamma(n* + l* + 1) Gamma(n* - l*)), l* = n* - 1 */
    *lnc = 2.0 * ns * log(2.0) - log(ns) - lgamma(2.0 * ns) + log(ip) + *p * log(2.0 * k3);
    *b = 2.0 * k3 / 3.0;
}

double adk_rate_si(double ip_ev, int z, double e_si)
{
    double lnc, p, b;
    adk_level_au(ip_ev / ADK_HARTREE_EV, z, &lnc, &p, &b);
    const double e = e_si / ADK_FIELD_AU;
    return exp(lnc - p * log(e) - b / e) / ADK_TIME_AU;
}

/* The field below which exp(lna - p ln E - b / E) < IONIZE_WMIN: ln W grows with E up to
 * E = b / p; the root of ln W = ln IONIZE_WMIN there by bisection, less a margin (1e-6 of it:
 * ln W then lies 1e-5 or more below, far beyond the rounding of the rate) so that every
 * field below it gives a rate ionize_ion would discard anyway. */
static double adk_emin(double lna, double p, double b)
{
    const double lw = log(IONIZE_WMIN), top = p > 0.0 ? b / p : 1e30;
    if (lna - p * log(top) - b / top < lw)
        return top; /* never above IONIZE_WMIN while growing: the rate sets in above top */
    double lo = 0.0, hi = top;
    for (int it = 0; it < 200; it++) {
        const double mid = 0.5 * (lo + hi);
        if (mid > 0.0 && lna - p * log(mid) - b / mid >= lw)
            hi = mid;
        else
            lo = mid;
    }
    return lo * (1.0 - 1e-6);
}

void adk_table(const deck *d, int index, ionize_table *t)
{
    const deck_species *sp = &d->species[index];
    memset(t, 0, sizeof *t);
    t->zmax = sp->max_charge;
    /* E_au = f E and dt_au = d->dt tu in code units: W = w(f E) dt_au per step */
    const double f = adk_field_unit(d->n0) / ADK_FIELD_AU;
    const double ldt = log(d->dt * adk_time_unit(d->n0) / ADK_TIME_AU);
    for (int k = 0; k < sp->max_charge; k++) {
        double lnc, p, b;
        adk_level_au(elements_ip(sp->element, k) / ADK_HARTREE_EV, k + 1, &lnc, &p, &b);
        t->p[k] = p;
        t->b[k] = b / f;
        t->lna[k] = lnc - p * log(f) + ldt;
        t->emin[k] = adk_emin(t->lna[k], t->p[k], t->b[k]);
    }
    t->quiet[t->zmax] = INFINITY;
    for (int k = t->zmax - 1; k >= 0; k--)
        t->quiet[k] = fmin(t->emin[k], t->quiet[k + 1]);
}
