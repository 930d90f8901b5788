/* deck_write.c - the resolved deck written back as a libconfig file that deck_load accepts
 * (run.cfg, --check, checkpoints): every key with its value, defaults filled in. */
#include "deck.h"
#include "deck_read.h"
#include "elements.h"
#include "empic.h"
#include "probe.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char s[40];
} numtxt;

/* The shortest of "%.15g".."%.17g" that reads back as the same double, made to read back
 * as a libconfig float. */
static numtxt N(double v)
{
    numtxt t;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(t.s, sizeof t.s, "%.*g", prec, v);
        if (strtod(t.s, NULL) == v)
            break;
    }
    if (!strpbrk(t.s, ".eEni"))
        strcat(t.s, ".0");
    return t;
}

/* An integer, with libconfig's 64-bit suffix where it does not fit in 32 bits. */
static numtxt I(long long v)
{
    numtxt t;
    snprintf(t.s, sizeof t.s, "%lld%s", v, v > INT_MAX || v < INT_MIN ? "L" : "");
    return t;
}

static void wstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* key = [a, b, c]; of 3 numbers, or a list ( ... ) where a formula is among them. */
static void wformulas(FILE *f, const char *key, const char (*e)[DECK_EXPR_MAX])
{
    double v[3];
    int numeric = 1;
    for (int k = 0; k < 3; k++)
        numeric &= dk_numeric_text(e[k], &v[k]);
    fprintf(f, "%s = %c", key, numeric ? '[' : '(');
    for (int k = 0; k < 3; k++) {
        fputs(k ? ", " : "", f);
        if (dk_numeric_text(e[k], &v[k]))
            fputs(N(v[k]).s, f);
        else
            wstr(f, e[k]);
    }
    fputs(numeric ? "];" : ");", f);
}

static const char *nm(const char *const names[], int n, int i)
{
    return i >= 0 && i < n ? names[i] : names[0];
}

static void wvec(FILE *f, const char *key, const double *v, int n)
{
    fprintf(f, "%s = [", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : "", N(v[i]).s);
    fputs("];", f);
}

static void wsides(FILE *f, const char *indent, const char *const names[], int nn, const int *b)
{
    fprintf(f, "%sboundary = { xmin = \"%s\"; xmax = \"%s\"; ymin = \"%s\"; ymax = \"%s\"; };\n",
            indent, nm(names, nn, b[0]), nm(names, nn, b[1]), nm(names, nn, b[2]),
            nm(names, nn, b[3]));
}

static void wspecies(FILE *f, const deck *d, const deck_species *sp)
{
    fputs("  {\n    name = ", f);
    wstr(f, sp->name);
    fprintf(f, ";\n    charge = %s;\n    mass = %s;\n    ppc = [%d, %d];\n    immobile = %s;\n",
            N(sp->charge).s, N(sp->mass).s, sp->ppc[0], sp->ppc[1],
            sp->immobile ? "true" : "false");
    if (sp->element)
        fprintf(f, "    element = \"%s\";\n", elements_symbol(sp->element));
    if (sp->ionize)
        fprintf(f, "    ionization = { model = \"adk\"; electrons = \"%s\"; max_charge = %d; };\n",
                d->species[sp->ion_electrons].name, sp->max_charge);
    fprintf(f, "    density = { profile = \"%s\"; n = %s;", nm(DK_PROFILES, 3, sp->profile),
            N(sp->n).s);
    if (sp->profile == PROFILE_PIECEWISE) {
        const deck_pwl *p[2] = {&sp->pwl_x, &sp->pwl_y};
        for (int a = 0; a < 2; a++)
            if (p[a]->n > 0 && p[a]->s && p[a]->f) {
                fputs("\n               ", f);
                wvec(f, a ? " y" : " x", p[a]->s, p[a]->n);
                wvec(f, a ? " fy" : " fx", p[a]->f, p[a]->n);
            }
    } else if (sp->profile == PROFILE_EXPR) {
        fputs(" expr = ", f);
        wstr(f, sp->density_expr);
        fputc(';', f);
    }
    fputs(" };\n    momentum = { ", f);
    wvec(f, "thermal", sp->uth, 3);
    wformulas(f, " drift", sp->drift);
    fputs(" };\n", f);
    wsides(f, "    ", DK_PBND, 4, sp->bnd);
    fputs("  }", f);
}

static void wmask(FILE *f, const char *key, int mask, const char *const names[], int n)
{
    int first = 1;
    fprintf(f, "%s = [", key);
    for (int i = 0; i < n; i++)
        if (mask & (1 << i)) {
            fputs(first ? "" : ", ", f);
            wstr(f, names[i]);
            first = 0;
        }
    fputs("];", f);
}

static void wcollisions(FILE *f, const deck *d)
{
    for (int i = 0; i < d->ncollisions && i < DECK_MAX_COLLISIONS; i++) {
        const deck_collision *e = &d->collisions[i];
        fputs(i ? ",\n  { species = [" : "collisions = (\n  { species = [", f);
        wstr(f, d->species[e->species[0]].name);
        fputs(", ", f);
        wstr(f, d->species[e->species[1]].name);
        fprintf(f, "]; coulomb_log = %s; every = %s; }", N(e->coulomb_log).s, I(e->every).s);
    }
    fputs(d->ncollisions ? "\n);\n" : "", f);
}

/* The lasers list's entries (the caller writes the list's brackets). */
static void wlasers(FILE *f, const deck *d)
{
    for (int i = 0; i < d->nlasers && i < DECK_MAX_LASERS; i++) {
        const deck_laser *L = &d->lasers[i];
        fprintf(f, "%s\n  { a0 = %s; omega0 = %s; polarization = ", i ? "," : "", N(L->a0).s,
                N(L->omega0).s);
        fputs(L->circular ? "\"circular\"" : N(L->polarization).s, f);
        fprintf(f, "; w0 = %s; focus = %s;\n    center = %s; duration = %s; envelope = \"%s\";",
                N(L->w0).s, N(L->focus).s, N(L->center).s, N(L->duration).s,
                nm(DK_ENVELOPES, 3, L->envelope));
        if (L->envelope == ENV_FLATTOP)
            fprintf(f, " ramp = %s;", N(L->ramp).s);
        fprintf(f, " boundary = \"%s\"; phase = %s;", nm(DK_SIDES, 4, L->boundary),
                N(L->phase).s);
        fprintf(f, "\n    profile = \"%s\";", nm(DK_LPROFILES, 3, L->profile));
        if (L->profile == LPROF_SUPERGAUSSIAN)
            fprintf(f, " order = %s;", N(L->order).s);
        if (L->profile == LPROF_FLATTOP)
            fprintf(f, " edge = %s;", N(L->edge).s);
        if (L->angle != 0.0)
            fprintf(f, " angle = %s;", N(L->angle).s);
        fputs(" }", f);
    }
}

/* diagnostics.phasespace, when there is one (species by name: snames[0 .. ns)). */
static void wphasespaces(FILE *f, const deck *d, const char *const *snames, int ns)
{
    for (int i = 0; i < d->nphasespace && i < DECK_MAX_PHASESPACE; i++) {
        const deck_phasespace *p = &d->phasespace[i];
        fprintf(f, "%s\n    { species = ", i ? "," : "  phasespace = (");
        wstr(f, snames[p->species < ns ? p->species : 0]);
        fprintf(f, "; axes = [\"%s\"", nm(DECK_PS_AXES, PSA_COUNT, p->axis[0]));
        if (p->naxes == 2)
            fprintf(f, ", \"%s\"", nm(DECK_PS_AXES, PSA_COUNT, p->axis[1]));
        fprintf(f, p->naxes == 2 ? "]; bins = [%d, %d];" : "]; bins = [%d];", p->bins[0],
                p->bins[1]);
        if (p->fixed[0] && (p->naxes == 1 || p->fixed[1])) {
            fputs(" range = (", f);
            for (int a = 0; a < p->naxes; a++)
                fprintf(f, "%s[%s, %s]", a ? ", " : "", N(p->range[a][0]).s, N(p->range[a][1]).s);
            fputs(");", f);
        }
        fprintf(f, " log = %s; every = %s; }", p->log ? "true" : "false", I(p->every).s);
    }
    fputs(d->nphasespace ? "\n  );\n" : "", f);
}

/* diagnostics.probes, when there are any. */
static void wprobes(FILE *f, const deck *d)
{
    for (int i = 0; i < d->nprobes && i < DECK_MAX_PROBES; i++) {
        const deck_probe *p = &d->probes[i];
        fprintf(f, "%s\n    { name = ", i ? "," : "  probes = (");
        wstr(f, p->name);
        fputs(";", f);
        if (p->line) {
            const double a[2] = {p->x0, p->y0}, b[2] = {p->x1, p->y1};
            wvec(f, " from", a, 2);
            wvec(f, " to", b, 2);
            fprintf(f, " n = %d;", p->n);
        } else {
            const double a[2] = {p->x0, p->y0};
            wvec(f, " at", a, 2);
        }
        wmask(f, " fields", p->fields, DECK_PROBE_FIELDS, PROBE_COUNT);
        fprintf(f, " every = %s; }", I(p->every).s);
    }
    fputs(d->nprobes ? "\n  );\n" : "", f);
}

void deck_write(const deck *d, FILE *f)
{
    if (!d || !f)
        return;
    fputs("# empic deck, fully resolved (every default filled in)\nsimulation = { name = ", f);
    wstr(f, d->name);
    fprintf(f, "; backend = \"%s\"; seed = %s; n0 = %s; wall_time = %s; };\n",
            nm(DK_BACKENDS, 3, d->backend), I((long long)d->seed).s, N(d->n0).s,
            N(d->wall_time).s);
    if (d->nconstants) { /* for reference: the formulas below hold their values */
        fputs("constants = {", f);
        for (int i = 0; i < d->nconstants; i++)
            fprintf(f, " %s = %s;", d->constants[i].name, N(d->constants[i].value).s);
        fputs(" };\n", f);
    }
    fprintf(f, "grid = { cells = [%d, %d]; dx = [%s, %s]; cluster = [%d, %d]; slack = %s; };\n",
            d->nx, d->ny, N(d->dx).s, N(d->dy).s, d->cluster[0], d->cluster[1], N(d->slack).s);
    if (d->ranks[0] > 0 || d->balance_every > 0) {
        fputs("parallel = {", f);
        if (d->ranks[0] > 0)
            fprintf(f, " ranks = [%d, %d];", d->ranks[0], d->ranks[1]);
        if (d->balance_every > 0)
            fprintf(f, " balance = { every = %s; threshold = %s; };", I(d->balance_every).s,
                    N(d->balance_threshold).s);
        fputs(" };\n", f);
    }
    fprintf(f, "time = { dt = %s; steps = %s; };\nfields = {\n", N(d->dt).s, I(d->steps).s);
    wsides(f, "  ", DK_FBND, 3, d->fbnd);
    fprintf(f, "  pml = { cells = %d; };\n  filter = { passes = %d; compensate = %s; };\n  "
            "external = { ", d->pml_cells, d->filter_passes,
            d->filter_compensate ? "true" : "false");
    wformulas(f, "E", d->ext);
    wformulas(f, " B", d->ext + 3);
    fprintf(f, " };\n  moving_window = { enabled = %s; t_start = %s; };\n};\nlasers = (",
            d->window_enabled ? "true" : "false", N(d->window_t_start).s);
    wlasers(f, d);
    fputs("\n);\nspecies = (", f);
    for (int i = 0; i < d->nspecies && i < DECK_MAX_SPECIES; i++) {
        fputs(i ? ",\n" : "\n", f);
        wspecies(f, d, &d->species[i]);
    }
    fputs("\n);\n", f);
    wcollisions(f, d);
    fputs("diagnostics = {\n  output = ", f);
    wstr(f, d->output);
    fprintf(f, ";\n  energy = { every = %s; growth_limit = %s; };\n  fields = { every = %s; ",
            I(d->energy_every).s, N(d->energy_growth_limit).s, I(d->fields_every).s);
    wmask(f, "quantities", d->fields_quantities, DK_FQ, 4);
    if (d->avg_every > 0) {
        fprintf(f, " };\n  fields_avg = { every = %s; steps = %s; ", I(d->avg_every).s,
                I(d->avg_steps).s);
        wmask(f, "quantities", d->avg_quantities, DK_AQ, 6);
    }
    fprintf(f, " };\n  particles = { every = %s; fraction = %s; ", I(d->particles_every).s,
            N(d->particles_fraction).s);
    const char *snames[DECK_MAX_SPECIES];
    int ns = d->nspecies < DECK_MAX_SPECIES ? d->nspecies : DECK_MAX_SPECIES;
    for (int i = 0; i < ns; i++)
        snames[i] = d->species[i].name;
    wmask(f, "species", d->particles_species_mask, snames, ns);
    if (d->particles_region)
        wvec(f, " region", d->particles_box, 4);
    if (d->particles_energy)
        wvec(f, " energy", d->particles_erange, 2);
    fprintf(f, " };\n  checkpoint = { every = %s; };\n", I(d->checkpoint_every).s);
    wphasespaces(f, d, snames, ns);
    wprobes(f, d);
    if (d->tracks_every > 0) {
        fprintf(f, "  tracks = { every = %s; fraction = %s; ", I(d->tracks_every).s,
                N(d->tracks_fraction).s);
        wmask(f, "species", d->tracks_species_mask, snames, ns);
        fputs(" };\n", f);
    }
    fputs("};\n", f);
}

