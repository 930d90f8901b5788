/* deck_collide.c - the collisions list of the deck (design.md §15): species pairs by name,
 * the Coulomb logarithm and the sub-cycling, checked against the species; and a warning when
 * the initial plasma makes the collision step too long to be accurate. */
#include "collide.h"
#include "deck.h"
#include "deck_read.h"

#include <limits.h>
#include <math.h>
#include <string.h>

static const char *const COLL_KEYS[] = {"species", "coulomb_log", "every", NULL};

/* Largest nu dt_coll (Nanbu's s of a thermal pair) beyond which the step is inaccurate. */
#define COLLIDE_S_WARN 0.1

/* Nanbu's s per collision step for entry e at the deck's densities and thermal momenta
 * (non-relativistic estimate, ln Lambda = 10 when computed); 0 for a cold pair. */
static double estimate_s(const deck *d, const deck_collision *e)
{
    const deck_species *a = &d->species[e->species[0]], *b = &d->species[e->species[1]];
    double v2 = 0.0, re_kp, lc_kp;
    for (int k = 0; k < 3; k++)
        v2 += a->uth[k] * a->uth[k] + b->uth[k] * b->uth[k]; /* the relative speed's */
    if (!(v2 > 0.0))
        return 0.0;
    double v = fmin(sqrt(v2), 1.0), mu = a->mass * b->mass / (a->mass + b->mass);
    double n = fmax(fabs(a->n), fabs(b->n)), lnl = e->coulomb_log > 0 ? e->coulomb_log : 10.0;
    collide_scale(d->n0, &re_kp, &lc_kp);
    return re_kp * a->charge * a->charge * b->charge * b->charge * n * lnl * e->every * d->dt /
           (mu * mu * v * v * v);
}

static void parse_entry(dk_ctx *c, const cs *g, deck_collision *e, const char *const names[])
{
    dk_keys(c, g, COLL_KEYS);
    const cs *s = dk_seq(c, g, "species", 2, "species names", 1);
    for (int k = 0; s && k < 2; k++)
        if (dk_enum_of(c, config_setting_get_elem(s, (unsigned)k), names, &e->species[k]) == 0 &&
            c->d->species[e->species[k]].immobile)
            dk_report(c, config_setting_get_elem(s, (unsigned)k), NULL, "\"%s\" is immobile; "
                      "expected mobile species (an immobile species is never pushed)",
                      names[e->species[k]]);
    dk_num(c, g, "coulomb_log", &e->coulomb_log, DK_NONNEG, 0);
    DK_INT(g, "every", e->every, 1, LONG_MAX, 0);
}

void deck_collide_parse(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    const char *names[DECK_MAX_SPECIES + 1];
    for (int i = 0; i < d->nspecies; i++)
        names[i] = d->species[i].name;
    names[d->nspecies] = NULL;
    const cs *l = dk_list(c, root, "collisions", DECK_MAX_COLLISIONS, &d->ncollisions);
    if (l && d->ncollisions && !d->n0_given)
        dk_report(c, l, NULL, "collisions need the physical density: expected simulation.n0 "
                  "(reference density in cm^-3) in the deck, or a laser's lambda0");
    for (int i = 0; l && i < d->ncollisions; i++) {
        const cs *g = config_setting_get_elem(l, (unsigned)i);
        deck_collision *e = &d->collisions[i];
        e->species[0] = e->species[1] = 0;
        e->coulomb_log = 0.0;
        e->every = 1;
        if (!config_setting_is_group(g))
            continue;
        int before = c->nerr;
        parse_entry(c, g, e, names);
        for (int j = 0; j < i && c->nerr == before; j++) {
            const int *o = d->collisions[j].species, *p = e->species;
            if ((o[0] == p[0] && o[1] == p[1]) || (o[0] == p[1] && o[1] == p[0]))
                dk_report(c, g, "species", "the pair \"%s\", \"%s\" is already collisions[%d]; "
                          "expected each pair once", names[p[0]], names[p[1]], j);
        }
        double s = c->nerr == before && d->n0_given && d->dt > 0 ? estimate_s(d, e) : 0.0;
        if (s > COLLIDE_S_WARN)
            dk_warn(c, g, NULL, "the collision step (every * dt = %g / w_p) is %.2g collision "
                    "times of a thermal pair (estimated from the initial densities and "
                    "temperatures, n0 = %g cm^-3); expected at most %g for accurate relaxation "
                    "rates: lower dt or every", e->every * d->dt, s, d->n0, COLLIDE_S_WARN);
    }
}
