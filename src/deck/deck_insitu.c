/* deck_insitu.c - the deck keys of the in-situ diagnostics (design.md §8, docs/deck.md):
 * diagnostics.phasespace (histograms), diagnostics.tracks (particle tracking by
 * id), diagnostics.probes (field probes) and the region/energy selection of
 * diagnostics.particles. Part of the deck module:
 * deck.c calls these while it parses diagnostics and writes them back in deck_write. */
#include "deck_read.h"
#include "empic.h"
#include "probe.h"

#include <limits.h>
#include <string.h>

static const char *const PS_KEYS[] = {"species", "axes", "bins", "range", "every", "log", NULL};
static const char *const TRACK_KEYS[] = {"every", "fraction", "species", NULL};
const char *const DECK_PS_AXES[] = {"x", "y", "ux", "uy", "uz", "energy", NULL};

/* range = [min, max] (1D) or ([min, max], [min, max]) / [[..], [..]] per axis. */
static void parse_range(dk_ctx *c, const cs *g, deck_phasespace *p)
{
    const cs *r = dk_member(g, "range");
    if (!r)
        return;
    if (!config_setting_is_aggregate(r)) {
        dk_report(c, r, NULL, "got %s; expected %s", dk_tname(r), p->naxes == 1 ?
                  "[min, max]" : "([min, max], [min, max]), one pair per axis");
        return;
    }
    int flat = p->naxes == 1 && config_setting_length(r) == 2 &&
               !config_setting_is_aggregate(config_setting_get_elem(r, 0));
    if (!flat && config_setting_length(r) != p->naxes) {
        dk_report(c, r, NULL, "has %d entries; expected one [min, max] pair per axis (%d)",
                  config_setting_length(r), p->naxes);
        return;
    }
    for (int a = 0; a < p->naxes; a++) {
        const cs *e = flat ? r : config_setting_get_elem(r, (unsigned)a);
        if (!config_setting_is_aggregate(e) || config_setting_length(e) != 2) {
            dk_report(c, e, NULL, "got %s; expected [min, max]", dk_tname(e));
            continue;
        }
        double v[2];
        if (dk_num_of(c, config_setting_get_elem(e, 0), &v[0]) ||
            dk_num_of(c, config_setting_get_elem(e, 1), &v[1]))
            continue;
        if (!(v[0] < v[1])) {
            dk_report(c, e, NULL, "[%g, %g]; expected min < max", v[0], v[1]);
            continue;
        }
        if (p->log && p->axis[a] == PSA_ENERGY && !(v[0] > 0)) {
            dk_report(c, e, NULL, "[%g, %g] on a log axis; expected 0 < min < max", v[0], v[1]);
            continue;
        }
        p->fixed[a] = 1;
        p->range[a][0] = v[0];
        p->range[a][1] = v[1];
    }
}

static void parse_one(dk_ctx *c, const cs *g, deck_phasespace *p, const char *const snames[])
{
    dk_keys(c, g, PS_KEYS);
    const cs *s = dk_member(g, "species");
    if (s)
        dk_enum_of(c, s, snames, &p->species);
    else if (c->d->nspecies > 1)
        dk_report(c, g, "species", "missing; expected the name of one species");
    const cs *ax = dk_seq(c, g, "axes", -1, "1 or 2 axis names", 1);
    if (ax && (config_setting_length(ax) < 1 || config_setting_length(ax) > 2))
        dk_report(c, ax, NULL, "has %d axes; expected 1 or 2 of x, y, ux, uy, uz, energy",
                  config_setting_length(ax));
    else if (ax) {
        p->naxes = config_setting_length(ax);
        for (int a = 0; a < p->naxes; a++)
            dk_enum_of(c, config_setting_get_elem(ax, (unsigned)a), DECK_PS_AXES, &p->axis[a]);
        if (p->naxes == 2 && p->axis[0] == p->axis[1])
            dk_report(c, ax, NULL, "names \"%s\" twice; expected two different axes",
                      DECK_PS_AXES[p->axis[0]]);
    }
    p->bins[0] = p->bins[1] = p->naxes == 1 ? 256 : 128;
    dk_ivec(c, g, "bins", p->bins, p->naxes ? p->naxes : 1, 1, 4096, 0);
    if ((long)p->bins[0] * (p->naxes == 2 ? p->bins[1] : 1) > 1L << 22)
        dk_report(c, g, "bins", "%d x %d bins; expected at most 4194304 in all", p->bins[0],
                  p->bins[1]);
    dk_bool(c, g, "log", &p->log);
    if (p->log && p->axis[0] != PSA_ENERGY && (p->naxes < 2 || p->axis[1] != PSA_ENERGY))
        dk_report(c, g, "log", "set, but no axis is \"energy\"; expected log = true only with "
                  "an energy axis");
    DK_INT(g, "every", p->every, 0, LONG_MAX, 1);
    if (p->naxes)
        parse_range(c, g, p);
}

static const char *const PROBE_KEYS[] = {"name", "at", "from", "to", "n", "fields", "every",
                                          NULL};
const char *const DECK_PROBE_FIELDS[] = {"Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy", "Jz",
                                         "rho", NULL};

/* A probe point (x, y) of setting s (key): inside the box, [0, Lx) x [0, Ly). */
static void probe_inside(dk_ctx *c, const cs *g, const char *key, double x, double y)
{
    const deck *d = c->d;
    const double lx = d->nx * d->dx, ly = d->ny * d->dy;
    if (c->box_ok && !(x >= 0 && x < lx && y >= 0 && y < ly))
        dk_report(c, g, key, "[%g, %g] is outside the box; expected 0 <= x < %g and "
                  "0 <= y < %g (grid.cells times grid.dx, in c/omega_p)", x, y, lx, ly);
}

static void parse_probe(dk_ctx *c, const cs *g, deck_probe *p, int i)
{
    dk_keys(c, g, PROBE_KEYS);
    snprintf(p->name, sizeof p->name, "probe%d", i);
    dk_str(c, g, "name", p->name, sizeof p->name, 0);
    if (!p->name[0])
        dk_report(c, g, "name", "is empty; expected a name for the probe's group");
    double v[2];
    const int at = dk_member(g, "at") != NULL, from = dk_member(g, "from") != NULL;
    if (at && (from || dk_member(g, "to") || dk_member(g, "n")))
        dk_report(c, g, NULL, "has both `at` and `from`/`to`/`n`; expected a point (at = [x, y]) "
                  "or a line (from = [x0, y0]; to = [x1, y1]; n = points)");
    else if (at) {
        p->n = 1;
        if (dk_vec(c, g, "at", v, 2, DK_ANY, 1) > 0) {
            p->x0 = p->x1 = v[0], p->y0 = p->y1 = v[1];
            probe_inside(c, g, "at", v[0], v[1]);
        }
    } else if (from || dk_member(g, "to")) {
        p->line = 1;
        if (dk_vec(c, g, "from", v, 2, DK_ANY, 1) > 0) {
            p->x0 = v[0], p->y0 = v[1];
            probe_inside(c, g, "from", v[0], v[1]);
        }
        if (dk_vec(c, g, "to", v, 2, DK_ANY, 1) > 0) {
            p->x1 = v[0], p->y1 = v[1];
            probe_inside(c, g, "to", v[0], v[1]);
        }
        DK_INT(g, "n", p->n, 2, DECK_PROBE_POINTS, 1);
    } else {
        dk_report(c, g, NULL, "has no position; expected at = [x, y] (a point) or from = "
                  "[x0, y0]; to = [x1, y1]; n = points (a line)");
    }
    p->fields = (1 << PROBE_EX) | (1 << PROBE_EY) | (1 << PROBE_EZ) | (1 << PROBE_BX) |
                (1 << PROBE_BY) | (1 << PROBE_BZ);
    const cs *f = dk_seq(c, g, "fields", -1, "names of Ex Ey Ez Bx By Bz Jx Jy Jz rho", 0);
    if (f && config_setting_length(f) == 0)
        dk_report(c, f, NULL, "is empty; expected some of Ex Ey Ez Bx By Bz Jx Jy Jz rho");
    for (int k = 0; f && k < config_setting_length(f); k++) {
        int m;
        if (k == 0)
            p->fields = 0;
        if (dk_enum_of(c, config_setting_get_elem(f, (unsigned)k), DECK_PROBE_FIELDS, &m))
            continue;
        if ((p->fields >> m) & 1)
            dk_report(c, config_setting_get_elem(f, (unsigned)k), NULL, "names \"%s\" twice",
                      DECK_PROBE_FIELDS[m]);
        p->fields |= 1 << m;
    }
    p->every = 1;
    DK_INT(g, "every", p->every, 1, LONG_MAX, 0);
}

static void parse_probes(dk_ctx *c, const cs *diag)
{
    deck *d = c->d;
    const cs *l = dk_member(diag, "probes");
    if (!l)
        return;
    if (!config_setting_is_list(l)) {
        dk_report(c, l, NULL, "got %s; expected a list probes = ( { ... }, ... );", dk_tname(l));
        return;
    }
    d->nprobes = config_setting_length(l);
    if (d->nprobes > DECK_MAX_PROBES) {
        dk_report(c, l, NULL, "has %d entries; expected at most %d", d->nprobes, DECK_MAX_PROBES);
        d->nprobes = DECK_MAX_PROBES;
    }
    for (int i = 0; i < d->nprobes; i++) {
        const cs *e = config_setting_get_elem(l, (unsigned)i);
        if (!config_setting_is_group(e)) {
            dk_report(c, e, NULL, "got %s; expected a group { ... }", dk_tname(e));
            continue;
        }
        parse_probe(c, e, &d->probes[i], i);
        char a[DECK_NAME_MAX], b[DECK_NAME_MAX];
        deck_output_name(a, sizeof a, d->probes[i].name);
        for (int k = 0; k < i; k++) {
            deck_output_name(b, sizeof b, d->probes[k].name);
            if (!strcmp(a, b))
                dk_report(c, e, "name", "\"%s\" is the name of probe %d too (as \"%s\" in the "
                          "file); expected a name of its own", d->probes[i].name, k, a);
        }
    }
}

void deck_insitu_parse(dk_ctx *c, const cs *diag, const char *const snames[])
{
    deck *d = c->d;
    d->tracks_fraction = 0.01;
    d->tracks_species_mask = 0;
    for (int s = 0; s < d->nspecies; s++)
        d->tracks_species_mask |= d->species[s].immobile ? 0 : 1 << s;
    if (!diag)
        return;
    const cs *l = dk_member(diag, "phasespace");
    if (l && !config_setting_is_list(l) && config_setting_is_group(l)) {
        dk_report(c, l, NULL, "got a group; expected a list phasespace = ( { ... }, ... );");
    } else if (l && !config_setting_is_list(l)) {
        dk_report(c, l, NULL, "got %s; expected a list phasespace = ( { ... }, ... );",
                  dk_tname(l));
    } else if (l) {
        d->nphasespace = config_setting_length(l);
        if (d->nphasespace > DECK_MAX_PHASESPACE) {
            dk_report(c, l, NULL, "has %d entries; expected at most %d", d->nphasespace,
                      DECK_MAX_PHASESPACE);
            d->nphasespace = DECK_MAX_PHASESPACE;
        }
        for (int i = 0; i < d->nphasespace; i++) {
            const cs *e = config_setting_get_elem(l, (unsigned)i);
            if (config_setting_is_group(e))
                parse_one(c, e, &d->phasespace[i], snames);
            else
                dk_report(c, e, NULL, "got %s; expected a group { ... }", dk_tname(e));
        }
    }
    parse_probes(c, diag);
    const cs *t = dk_group(c, diag, "tracks", 0);
    if (t) {
        dk_keys(c, t, TRACK_KEYS);
        DK_INT(t, "every", d->tracks_every, 0, LONG_MAX, 1);
        if (dk_num(c, t, "fraction", &d->tracks_fraction, DK_POS, 0) > 0 &&
            d->tracks_fraction > 1)
            dk_report(c, dk_member(t, "fraction"), NULL, "got %g; expected a fraction in (0, 1]",
                      d->tracks_fraction);
        const cs *s = dk_seq(c, t, "species", -1, "species names", 0);
        for (int i = 0; s && i < config_setting_length(s); i++) {
            int k;
            if (i == 0)
                d->tracks_species_mask = 0;
            if (dk_enum_of(c, config_setting_get_elem(s, (unsigned)i), snames, &k) == 0)
                d->tracks_species_mask |= 1 << k;
        }
    }
}

void deck_insitu_parse_selection(dk_ctx *c, const cs *particles)
{
    deck *d = c->d;
    if (dk_vec(c, particles, "region", d->particles_box, 4, DK_ANY, 0) > 0) {
        d->particles_region = 1;
        if (!(d->particles_box[0] < d->particles_box[1]) ||
            !(d->particles_box[2] < d->particles_box[3]))
            dk_report(c, dk_member(particles, "region"), NULL, "[%g, %g, %g, %g]; expected "
                      "[x0, x1, y0, y1] with x0 < x1 and y0 < y1", d->particles_box[0],
                      d->particles_box[1], d->particles_box[2], d->particles_box[3]);
    }
    if (dk_vec(c, particles, "energy", d->particles_erange, 2, DK_NONNEG, 0) > 0) {
        d->particles_energy = 1;
        if (!(d->particles_erange[0] < d->particles_erange[1]))
            dk_report(c, dk_member(particles, "energy"), NULL, "[%g, %g]; expected [emin, emax] "
                      "with emin < emax (kinetic energy per particle in m_e c^2)",
                      d->particles_erange[0], d->particles_erange[1]);
    }
}
