/* health.c - the run's health checks (health.h): non-finite fields or particles, lost
 * particles, non-finite energies, bad injected densities. The scans read the host arrays
 * once (OpenMP), cheap next to a step, and never modify the state; when to run them is the
 * time loop's decision (sim.c). */
#include "health.h"
#include "comm.h"
#include "empic.h"
#include "particle.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const FIELD_NAME[9] = {"Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy", "Jz"};

int health_fields(const emf *f, health_hit *h)
{
    const float *a[9] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1],
                         f->b[2], f->j[0], f->j[1], f->j[2]};
    memset(h, 0, sizeof *h);
    for (int c = 0; c < 9; c++) {
        long first = LONG_MAX;
#pragma omp parallel for reduction(min : first)
        for (int j = f->j0; j < f->j1; j++)
            for (int i = f->i0; i < f->i1; i++)
                if (!isfinite(a[c][emf_idx(f, i, j)])) {
                    long k = (long)j * f->nx + i;
                    first = k < first ? k : first;
                    break;
                }
        if (first != LONG_MAX) {
            h->found = 1;
            h->species = -1;
            h->i = (int)(first % f->nx);
            h->j = (int)(first / f->nx);
            h->value = a[c][emf_idx(f, h->i, h->j)];
            snprintf(h->what, sizeof h->what, "%s", FIELD_NAME[c]);
            return 1;
        }
    }
    return 0;
}

/* First slot of cluster c whose momentum, offset or weight is not finite, or -1. */
static long first_bad(const species *s, int c)
{
    for (long p = s->start[c]; p < (long)s->start[c] + s->count[c]; p++)
        if (!isfinite(s->ux[p]) || !isfinite(s->uy[p]) || !isfinite(s->uz[p]) ||
            !isfinite(s->x[p]) || !isfinite(s->y[p]) || !isfinite(s->w[p]))
            return p;
    return -1;
}

int health_particles(const sim *S, health_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        if (sp->immobile)
            continue;
        int first = INT_MAX;
#pragma omp parallel for schedule(dynamic, 4) reduction(min : first)
        for (int c = 0; c < S->cl.n; c++)
            if (c < first && first_bad(sp, c) >= 0)
                first = c;
        if (first == INT_MAX)
            continue;
        long p = first_bad(sp, first);
        const float v[6] = {sp->ux[p], sp->uy[p], sp->uz[p], sp->x[p], sp->y[p], sp->w[p]};
        const char *name[6] = {"ux", "uy", "uz", "x offset", "y offset", "weight"};
        int q = 0;
        while (q < 5 && isfinite(v[q]))
            q++;
        h->found = 1;
        h->species = s;
        h->i = cell_i(sp->cell[p]);
        h->j = cell_j(sp->cell[p]);
        h->value = v[q];
        snprintf(h->what, sizeof h->what, "%s", name[q]);
        return 1;
    }
    return 0;
}

int health_counts(const sim *S, health_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        long long n = 0;
        int bad = 0, closed = 1;
        for (int k = 0; k < 4; k++)
            closed &= sp->bnd[k] == PBND_PERIODIC;
        for (int c = 0; c < S->cl.n; c++) {
            n += sp->count[c];
            bad |= sp->count[c] < 0 || sp->count[c] > sp->cap[c];
        }
        if ((closed && n != sp->np) || bad) {
            h->found = 1;
            h->species = s;
            h->have = n;
            h->want = sp->np;
            snprintf(h->what, sizeof h->what, "count");
            return 1;
        }
    }
    return 0;
}

int health_check(const sim *S, health_hit *h)
{
    health_hit own, part;
    if (!h)
        h = &own;
    const int field = health_fields(&S->f, h);
    /* E and B finite while particles are not: the bad values were born in the particles
     * (their current J comes from them) */
    const int eb = field && h->what[0] != 'J';
    if (health_particles(S, &part)) {
        const species *sp = &S->sp[part.species];
        empic_report(NULL, 0, "step %ld: species %s: a particle in cell (i, j) = (%d, %d) has "
                     "%s = %g (not finite)", S->step, sp->name, part.i, part.j, part.what,
                     part.value);
        if (eb)
            empic_report(NULL, 0, "  and field %s = %g at cell (i, j) = (%d, %d): fields and "
                         "particles went unstable together (check dt against the Courant "
                         "limit, dx against the Debye length, the lasers and external fields)",
                         h->what, h->value, h->i, h->j);
        else
            empic_report(NULL, 0, "  E and B are finite: the bad values were born in the "
                         "particles; check species %s: charge %g, mass %g (q/m = %g in single "
                         "precision), its density (weights) and drift", sp->name,
                         sp->cfg->charge, sp->cfg->mass, (double)sp->qm);
        *h = part;
        return -1;
    }
    if (field) {
        empic_report(NULL, 0, "step %ld: field %s = %g at cell (i, j) = (%d, %d) is not finite; "
                     "the particles are finite: %s", S->step, h->what, h->value, h->i, h->j,
                     eb ? "the fields have gone unstable (check dt against the Courant limit, "
                          "the external fields and the lasers' a0 and omega0)"
                        : "their current overflows (check the species' densities and charges)");
        return -1;
    }
    if (health_counts(S, h)) {
        empic_report(NULL, 0, "step %ld: species %s: the clusters hold %lld particles but the "
                     "species has %lld (particles lost or duplicated, or a cluster over its "
                     "capacity); this is a bug in empic, please report it with the deck",
                     S->step, S->sp[h->species].name, h->have, h->want);
        return -1;
    }
    return 0;
}

/* The first non-finite quantity of the last energy diagnostic (its energy.csv column), with
 * its likely cause; NULL when all are finite. */
const char *health_energy(const sim *S, char *what, size_t len)
{
    if (!isfinite(S->en_e) || !isfinite(S->en_b)) {
        snprintf(what, len, "%s = %g: the fields are finite but their energy overflows "
                 "(fields near the single-precision limit: check the lasers' a0 omega0 and "
                 "the external fields)", isfinite(S->en_e) ? "field_B" : "field_E",
                 isfinite(S->en_e) ? S->en_b : S->en_e);
        return what;
    }
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].immobile && !isfinite(S->en_kin[s])) {
            snprintf(what, len, "kinetic_%s = %g: species %s has finite momenta and weights "
                     "but their energy overflows (check its density (weights), mass and "
                     "drift)", S->sp[s].name, S->en_kin[s], S->sp[s].name);
            return what;
        }
    if (!isfinite(S->en_gauss)) {
        snprintf(what, len, "gauss_max = %g: the charge density overflows (check the "
                 "species' densities and charges)", S->en_gauss);
        return what;
    }
    return NULL;
}


int health_faults(const sim *S)
{
    for (int s = 0; s < S->nsp; s++)
        if (S->sp[s].bad.found) { /* beyond what deck_load checked (--steps, large decks) */
            const profile_fault *b = &S->sp[s].bad;
            empic_report(NULL, 0, "step %ld: species %s: the moving window's injection met %s "
                         "= %g at (x, y) = (%.9g, %.9g) (lab frame); expected a finite value "
                         ">= 0", S->step, S->sp[s].name, b->what, b->value, b->x, b->y);
            return -1;
        }
    return 0;
}

/* ---------------------------------------------------------------- the energy guard */

int health_growth_on(const deck *d)
{
    return d->energy_growth_limit > 0 && d->nlasers == 0 && !d->window_enabled &&
           !extfield_present(d, 0);
}

/* The sum over species sp's particles of w (gamma - 1) (rest = 0) or of w (rest = 1),
 * from the host arrays (u at the half step before) */
static double particle_sum(const species *sp, const clusters *cl, int rest)
{
    double sum = 0.0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : sum)
    for (int c = 0; c < cl->n; c++)
        for (long p = sp->start[c]; p < (long)sp->start[c] + sp->count[c]; p++)
            sum += rest ? (double)sp->w[p]
                        : kinetic_share(sp->w[p], sp->ux[p], sp->uy[p], sp->uz[p], sp->ux[p],
                                        sp->uy[p], sp->uz[p]);
    return sum;
}

double health_energy_total(const sim *S, int rest)
{
    double kin[DECK_MAX_SPECIES] = {0}, total = 0.0;
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].immobile)
            kin[s] = kinetic_total(particle_sum(&S->sp[s], &S->cl, rest), S->sp[s].m,
                                   S->f.dx, S->f.dy);
    comm_sum_double(kin, DECK_MAX_SPECIES);
    for (int s = 0; s < S->nsp; s++)
        total += kin[s];
    if (!rest) /* both sums over every rank's cells (emf.c) */
        total += emf_energy_e(&S->f, &S->cl) + emf_energy_b(&S->f, &S->cl);
    return total;
}

void health_energy_ref(sim *S)
{
    S->energy_ref = 0.0;
    if (!health_growth_on(&S->d))
        return;
    const double now = health_energy_total(S, 0);
    const double floor = HEALTH_ENERGY_FLOOR * health_energy_total(S, 1);
    S->energy_ref = now > floor ? now : floor;
}

const char *health_growth(const sim *S, long step, double total, char *what, size_t len)
{
    const double lim = S->d.energy_growth_limit;
    if (!(S->energy_ref > 0) || !(total > lim * S->energy_ref))
        return NULL;
    snprintf(what, len, "step %ld: the total energy %.6g is %.3g times the reference %.6g "
             "(the energy when this run started, at least %g of the mobile particles' rest "
             "energy), above diagnostics.energy.growth_limit = %g: the run has gone "
             "numerically unstable (check omega_p dt, dt against the Courant limit and dx against "
             "the Debye length: empic --check DECK prints them; 0 turns the guard off)", step,
             total, total / S->energy_ref, S->energy_ref, HEALTH_ENERGY_FLOOR, lim);
    return what;
}
