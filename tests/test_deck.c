/* test_deck.c - the input deck: round trip through deck_write, defaults, tmax, formulas,
 * piecewise tables, and rejection (with the key path in the message) of broken decks. */
#include "deck.h"
#include "species.h"

#include "testutil.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/empic-deck-XXXXXX";
static char errbuf[16384];              /* stderr of the last load_text() */

static const char *GOOD =
    "simulation = { name = \"weibel\"; backend = \"cpu\"; seed = 7; n0 = 1.0e18; };\n"
    "grid = { cells = [128, 64]; dx = [0.1, 0.2]; cluster = [8, 16]; slack = 0.25; };\n"
    "parallel = { ranks = [2, 1]; balance = { every = 40; threshold = 0.15; }; };\n"
    "time = { dt = 0.05; steps = 100; };\n"
    "fields = {\n"
    "  boundary = { xmin = \"pml\"; xmax = \"mur\"; ymin = \"periodic\"; ymax = \"periodic\"; };\n"
    "  pml = { cells = 8; };\n"
    "  filter = { passes = 2; compensate = true; };\n"
    "  external = { E = [0.0, 0.1, 0.0]; B = (0.0, \"0.01*cos(t)*sin(y)\", 0.5); };\n"
    "  moving_window = { enabled = true; t_start = 30; };\n"
    "};\n"
    "lasers = ( { a0 = 2.0; omega0 = 10.0; polarization = 0.3; w0 = 4.0; focus = 2.0;\n"
    "             center = 6.4; duration = 6.0; envelope = \"gaussian\"; phase = 0.1; },\n"
    "           { a0 = 1; omega0 = 5; polarization = \"circular\"; w0 = 3; duration = 8;\n"
    "             envelope = \"flattop\"; boundary = \"xmax\"; profile = \"flattop\";\n"
    "             edge = 0.5; },\n"
    "           { a0 = 1; omega0 = 5; w0 = 3; duration = 8; boundary = \"xmax\";\n"
    "             profile = \"supergaussian\"; order = 6; angle = -20; } );\n"
    "species = (\n"
    "  { name = \"electrons\"; charge = -1.0; ppc = [3, 2];\n"
    "    density = { profile = \"expr\"; expr = \"1+0.5*sin(2*pi*x/10)\"; n = 2; };\n"
    "    momentum = { thermal = [0.1, 0.1, 0.0];\n"
    "                 drift = (\"0.001*sin(2*pi*x/12.8)\", 0, \"1e-3\"); };\n"
    "    boundary = { xmin = \"absorbing\"; xmax = \"thermal\"; };\n"
    "  },\n"
    "  { name = \"ions\"; charge = 1; mass = 1836; ppc = [1, 1]; immobile = true;\n"
    "    density = { profile = \"piecewise\"; x = [0, 5, 10]; fx = [0.0, 1.0, 1.0];\n"
    "                y = [0.0, 12.8]; fy = [1.0, 0.5]; };\n"
    "    momentum = { drift = [0.1, 0.0, 0.0]; };\n"
    "  } );\n"
    "diagnostics = {\n"
    "  output = \"out-weibel\";\n"
    "  energy = { every = 5; };\n"
    "  fields = { every = 50; quantities = [\"E\", \"rho\"]; };\n"
    "  fields_avg = { every = 25; steps = 10; quantities = [\"rho\", \"B2\"]; };\n"
    "  particles = { every = 20; fraction = 0.5; species = [\"ions\"]; };\n"
    "  checkpoint = { every = 1000; };\n"
    "};\n";

/* A minimal valid deck; broken decks are this plus or minus a line. */
#define GRID "grid = { cells = [64, 32]; dx = [0.1, 0.1]; };\n"
#define TIME "time = { dt = 0.05; steps = 10; };\n"
#define SPEC(x) "species = ( { name = \"electrons\"; charge = -1.0; ppc = [2, 2]; " x " } );\n"

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fwrite(data, 1, n, f);
    fclose(f);
}

/* deck_load on a file, its stderr captured into errbuf. */
static int load_path(const char *path, deck *d)
{
    return tu_deck_load_path(tmpdir, path, d, errbuf, sizeof errbuf);
}

static int load_text(const char *text, deck *d)
{
    return tu_deck_load_text(tmpdir, text, d, errbuf, sizeof errbuf);
}

static void expect_fail(const char *text, const char *want1, const char *want2)
{
    tu_deck_refused(tmpdir, text, want1, want2, errbuf, sizeof errbuf);
}

/* d written by deck_write and read back into r (the resolved deck a restart reads). */
static int reload(const deck *d, deck *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/resolved.cfg", tmpdir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    deck_write(d, f);
    fclose(f);
    return load_path(path, r);
}

static int pwl_equal(const deck_pwl *a, const deck_pwl *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->s[i] != b->s[i] || a->f[i] != b->f[i])
            return 0;
    return 1;
}

/* Everything but the file name and the table pointers must be identical. */
static void assert_same(deck *a, deck *b)
{
    CU_ASSERT_STRING_EQUAL(a->name, b->name);
    CU_ASSERT(a->backend == b->backend && a->seed == b->seed && a->n0 == b->n0);
    CU_ASSERT(a->nx == b->nx && a->ny == b->ny && a->dx == b->dx && a->dy == b->dy);
    CU_ASSERT(a->cluster[0] == b->cluster[0] && a->cluster[1] == b->cluster[1]);
    CU_ASSERT(a->slack == b->slack && a->dt == b->dt && a->steps == b->steps);
    CU_ASSERT(a->ranks[0] == b->ranks[0] && a->ranks[1] == b->ranks[1]);
    CU_ASSERT(a->balance_every == b->balance_every);
    CU_ASSERT(a->balance_threshold == b->balance_threshold);
    CU_ASSERT(memcmp(a->fbnd, b->fbnd, sizeof a->fbnd) == 0);
    CU_ASSERT(a->pml_cells == b->pml_cells && a->filter_passes == b->filter_passes);
    CU_ASSERT(a->filter_compensate == b->filter_compensate);
    for (int m = 0; m < 6; m++)
        CU_ASSERT_STRING_EQUAL(a->ext[m], b->ext[m]);
    CU_ASSERT(a->window_enabled == b->window_enabled);
    CU_ASSERT(a->window_t_start == b->window_t_start);
    CU_ASSERT_EQUAL_FATAL(a->nlasers, b->nlasers);
    for (int i = 0; i < a->nlasers; i++) {
        const deck_laser *p = &a->lasers[i], *q = &b->lasers[i];
        CU_ASSERT(p->a0 == q->a0 && p->omega0 == q->omega0 && p->polarization == q->polarization);
        CU_ASSERT(p->circular == q->circular && p->w0 == q->w0 && p->focus == q->focus);
        CU_ASSERT(p->center == q->center && p->duration == q->duration && p->phase == q->phase);
        CU_ASSERT(p->envelope == q->envelope && p->ramp == q->ramp);
        CU_ASSERT(p->boundary == q->boundary);
        CU_ASSERT(p->profile == q->profile && p->order == q->order && p->edge == q->edge);
        CU_ASSERT(p->angle == q->angle);
    }
    CU_ASSERT_EQUAL_FATAL(a->nspecies, b->nspecies);
    for (int i = 0; i < a->nspecies; i++) {
        const deck_species *p = &a->species[i], *q = &b->species[i];
        CU_ASSERT_STRING_EQUAL(p->name, q->name);
        CU_ASSERT(p->charge == q->charge && p->mass == q->mass && p->immobile == q->immobile);
        CU_ASSERT(p->ppc[0] == q->ppc[0] && p->ppc[1] == q->ppc[1]);
        CU_ASSERT(p->profile == q->profile && p->n == q->n);
        CU_ASSERT(pwl_equal(&p->pwl_x, &q->pwl_x) && pwl_equal(&p->pwl_y, &q->pwl_y));
        CU_ASSERT_STRING_EQUAL(p->density_expr, q->density_expr);
        CU_ASSERT(memcmp(p->uth, q->uth, sizeof p->uth) == 0);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_STRING_EQUAL(p->drift[k], q->drift[k]);
        CU_ASSERT(memcmp(p->bnd, q->bnd, sizeof p->bnd) == 0);
        CU_ASSERT(p->element == q->element && p->ionize == q->ionize);
        CU_ASSERT(!p->ionize || (p->ion_electrons == q->ion_electrons &&
                                 p->max_charge == q->max_charge));
    }
    CU_ASSERT_STRING_EQUAL(a->output, b->output);
    CU_ASSERT(a->energy_every == b->energy_every && a->fields_every == b->fields_every);
    CU_ASSERT(a->fields_quantities == b->fields_quantities);
    CU_ASSERT(a->avg_every == b->avg_every && a->avg_steps == b->avg_steps);
    CU_ASSERT(a->avg_quantities == b->avg_quantities);
    CU_ASSERT(a->particles_every == b->particles_every);
    CU_ASSERT(a->particles_fraction == b->particles_fraction);
    CU_ASSERT(a->particles_species_mask == b->particles_species_mask);
    CU_ASSERT(a->checkpoint_every == b->checkpoint_every);
}

/* An ionizing species and its electron species (ppc [0, 0]) through deck_write. */
static void test_ionization_roundtrip(void)
{
    deck a, b;
    CU_ASSERT_EQUAL_FATAL(
        load_text("grid = { cells = [64, 32]; dx = [0.1, 0.1]; };\n" TIME
                  "species = ( { name = \"e_N\"; charge = -1.0; ppc = [0, 0]; },\n"
                  "{ name = \"N\"; element = \"N\"; charge = 2.0; mass = 25532.0; "
                  "ppc = [2, 2]; ionization = { model = \"adk\"; electrons = \"e_N\"; }; },\n"
                  "{ name = \"Ar\"; element = \"Ar\"; charge = 0.0; mass = 72820.0; "
                  "ppc = [1, 1]; ionization = { electrons = \"e_N\"; max_charge = 8; }; } );\n",
                  &a),
        0);
    CU_ASSERT(a.species[0].ppc[0] == 0 && !a.species[0].ionize);
    CU_ASSERT(a.species[1].element == 7 && a.species[1].ionize && a.species[1].max_charge == 7);
    CU_ASSERT(a.species[1].ion_electrons == 0 && a.species[1].charge == 2.0);
    CU_ASSERT(a.species[2].element == 18 && a.species[2].max_charge == 8);
    CU_ASSERT_EQUAL_FATAL(reload(&a, &b), 0);
    assert_same(&a, &b);
    deck_free(&a);
    deck_free(&b);
}

static void test_roundtrip(void)
{
    deck a, b, c;
    CU_ASSERT_EQUAL_FATAL(load_text(GOOD, &a), 0);
    /* spot checks of what was read */
    CU_ASSERT(a.nx == 128 && a.ny == 64 && a.dy == 0.2 && a.cluster[0] == 8);
    CU_ASSERT(a.backend == BACKEND_CPU && a.seed == 7 && a.steps == 100);
    CU_ASSERT(a.ranks[0] == 2 && a.balance_every == 40 && a.balance_threshold == 0.15);
    CU_ASSERT(a.fbnd[SIDE_XMIN] == FBND_PML && a.fbnd[SIDE_XMAX] == FBND_MUR);
    CU_ASSERT(a.nlasers == 3 && a.lasers[1].circular && a.lasers[1].ramp == 2.0);
    CU_ASSERT(a.lasers[0].profile == LPROF_GAUSSIAN && a.lasers[1].profile == LPROF_FLATTOP);
    CU_ASSERT(a.lasers[1].edge == 0.5 && a.lasers[2].profile == LPROF_SUPERGAUSSIAN);
    CU_ASSERT(a.lasers[2].order == 6.0 && a.lasers[2].angle == -20.0);
    CU_ASSERT(a.lasers[0].angle == 0.0);
    CU_ASSERT(a.lasers[1].boundary == SIDE_XMAX && a.lasers[1].focus == 12.8);
    CU_ASSERT(a.lasers[1].center == 6.4 && a.lasers[0].envelope == ENV_GAUSSIAN);
    CU_ASSERT(a.nspecies == 2 && a.species[1].mass == 1836 && a.species[1].immobile);
    CU_ASSERT(a.species[0].profile == PROFILE_EXPR && a.species[0].n == 2);
    CU_ASSERT(a.species[0].bnd[SIDE_XMIN] == PBND_ABSORBING);
    CU_ASSERT(a.species[0].bnd[SIDE_YMIN] == PBND_PERIODIC);
    CU_ASSERT(a.species[1].bnd[SIDE_XMAX] == PBND_ABSORBING);   /* follows the fields */
    CU_ASSERT_STRING_EQUAL(a.species[0].drift[2], "0.001");
    CU_ASSERT(a.species[1].pwl_x.n == 3 && a.species[1].pwl_y.n == 2);
    CU_ASSERT(a.fields_quantities == (FQ_E | FQ_RHO) && a.particles_species_mask == 2);
    CU_ASSERT(a.avg_every == 25 && a.avg_steps == 10 && a.avg_quantities == (FQ_RHO | FQ_B2));
    CU_ASSERT_STRING_EQUAL(a.ext[1], "0.10000000000000001");
    CU_ASSERT_STRING_EQUAL(a.ext[4], "0.01*cos(t)*sin(y)");

    CU_ASSERT_EQUAL_FATAL(reload(&a, &b), 0);
    assert_same(&a, &b);
    /* and once more: writing the reloaded deck gives the same deck again */
    CU_ASSERT_EQUAL_FATAL(reload(&b, &c), 0);
    assert_same(&b, &c);
    deck_free(&a);
    deck_free(&b);
    deck_free(&c);
}

/* The collisions list: species by name (the same twice: intra-species), defaults, the round
 * trip through deck_write, and the errors. */
#define TWO "species = ( { name = \"electrons\"; charge = -1.0; ppc = [2, 2]; },\n" \
            "            { name = \"ions\"; charge = 1; mass = 1836; ppc = [2, 2]; } );\n"
#define N0 "simulation = { n0 = 1e21; };\n"
static void test_collisions(void)
{
    deck a, b;
    CU_ASSERT_EQUAL_FATAL(load_text(N0 GRID TIME TWO "collisions = ( { species = [\"electrons\", "
                                    "\"ions\"]; coulomb_log = 7.5; every = 3; },\n"
                                    "  { species = [\"electrons\", \"electrons\"]; } );\n", &a), 0);
    CU_ASSERT(a.ncollisions == 2 && a.collisions[0].species[0] == 0);
    CU_ASSERT(a.collisions[0].species[1] == 1 && a.collisions[0].coulomb_log == 7.5);
    CU_ASSERT(a.collisions[0].every == 3 && a.collisions[1].species[1] == 0);
    CU_ASSERT(a.collisions[1].coulomb_log == 0.0 && a.collisions[1].every == 1);
    CU_ASSERT_EQUAL_FATAL(reload(&a, &b), 0);
    CU_ASSERT(b.ncollisions == 2 && b.n0 == 1e21);
    CU_ASSERT(!memcmp(a.collisions, b.collisions, sizeof a.collisions));
    deck_free(&a);
    deck_free(&b);
    /* a collision step of several collision times is accepted, with a warning */
    CU_ASSERT_EQUAL_FATAL(load_text("simulation = { n0 = 1e30; };\n" GRID TIME
                                    "species = ( { name = \"e\"; charge = -1.0; ppc = [2, 2]; "
                                    "momentum = { thermal = [0.04, 0.04, 0.04]; }; } );\n"
                                    "collisions = ( { species = [\"e\", \"e\"]; } );\n", &a), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "collision times of a thermal pair"));
    deck_free(&a);
#define COLL(x) "collisions = ( { " x " } );\n"
    expect_fail(N0 GRID TIME TWO COLL("species = [\"electrons\", \"ion\"];"),
                "collisions[0].species[1]", "did you mean 'ions'?");
    expect_fail(N0 GRID TIME TWO COLL("species = [\"electrons\"];"), "collisions[0].species",
                NULL);
    expect_fail(N0 GRID TIME TWO COLL("species = [\"ions\", \"ions\"]; every = 0;"),
                "collisions[0].every", NULL);
    expect_fail(N0 GRID TIME TWO COLL("species = [\"ions\", \"ions\"]; coulomb_log = -1;"),
                "collisions[0].coulomb_log", NULL);
    expect_fail(N0 GRID TIME TWO COLL("species = [\"ions\", \"ions\"]; lnL = 2;"),
                "collisions[0].lnL", NULL);
    expect_fail(GRID TIME TWO COLL("species = [\"ions\", \"ions\"];"), "collisions",
                "expected simulation.n0");
    expect_fail(N0 GRID TIME TWO "collisions = ( { species = [\"ions\", \"electrons\"]; },\n"
                "  { species = [\"electrons\", \"ions\"]; } );\n", "collisions[1].species",
                "already collisions[0]");
    expect_fail(N0 GRID TIME "species = ( { name = \"e\"; charge = -1.0; ppc = [2, 2]; },\n"
                "  { name = \"i\"; charge = 1; ppc = [1, 1]; immobile = true; } );\n"
                COLL("species = [\"e\", \"i\"];"), "collisions[0].species[1]",
                "is immobile");
}

static void test_defaults(void)
{
    deck d;
    CU_ASSERT_EQUAL_FATAL(load_text(GRID TIME SPEC(""), &d), 0);
    CU_ASSERT_STRING_EQUAL(d.name, "deck");
    CU_ASSERT(d.backend == BACKEND_AUTO && d.cluster[0] == 16 && d.cluster[1] == 16);
    CU_ASSERT(d.slack == 0.3 && d.pml_cells == 16 && d.filter_passes == 0);
    CU_ASSERT(d.fbnd[0] == FBND_PERIODIC && d.fbnd[3] == FBND_PERIODIC && d.nlasers == 0);
    CU_ASSERT_STRING_EQUAL(d.output, "out");
    CU_ASSERT(d.energy_every == 10 && d.fields_every == 0 && d.checkpoint_every == 0);
    CU_ASSERT(d.fields_quantities == (FQ_E | FQ_B | FQ_J | FQ_RHO));
    CU_ASSERT(d.avg_every == 0 && d.avg_quantities == (FQ_E | FQ_B | FQ_E2 | FQ_B2));
    CU_ASSERT_STRING_EQUAL(d.ext[5], "0");
    CU_ASSERT(d.particles_fraction == 0.01 && d.particles_species_mask == 1);
    const deck_species *s = &d.species[0];
    CU_ASSERT(s->mass == 1 && s->n == 1 && s->profile == PROFILE_UNIFORM && !s->immobile);
    CU_ASSERT(s->uth[0] == 0 && !strcmp(s->drift[0], "0") && s->bnd[SIDE_YMAX] == PBND_PERIODIC);
    deck_free(&d);
}

static void test_tmax(void)
{
    deck d;
    CU_ASSERT_EQUAL(load_text(GRID "time = { dt = 0.07; tmax = 70.0; };\n", &d), 0);
    CU_ASSERT_EQUAL(d.steps, 1000);
    CU_ASSERT_EQUAL(load_text(GRID "time = { dt = 0.03; tmax = 1; };\n", &d), 0);
    CU_ASSERT_EQUAL(d.steps, 34);
    CU_ASSERT_EQUAL(load_text(GRID "time = { dt = 0.05; tmax = 0.0; };\n", &d), 0);
    CU_ASSERT_EQUAL(d.steps, 0);
    expect_fail(GRID "time = { dt = 0.05; tmax = 1.0; steps = 3; };\n", "time.", "exactly one");
    expect_fail(GRID "time = { dt = 0.05; };\n", "time", "steps");
}

static void test_broken(void)
{
    deck d;
    char path[512];
    /* syntax error: the file and line are named */
    expect_fail(GRID TIME "species = ( { name = \"e\"; charge = ; } );\n", "deck.cfg:3:", NULL);
    /* misspelt key, with the suggestion */
    expect_fail("grid = { cels = [64, 32]; dx = [0.1, 0.1]; };\n" TIME, "grid.cels",
                "did you mean 'cells'?");
    expect_fail(GRID TIME "diagnostic = { };\n", "diagnostic", "did you mean 'diagnostics'?");
    expect_fail(GRID TIME "fields = { boundary = { xmin = \"pmll\"; xmax = \"pml\"; }; };\n",
                "fields.boundary.xmin", "did you mean 'pml'?");
    /* transverse laser profiles: keys of one profile only, orders from 2 */
#define LASER_PML "fields = { boundary = { xmin = \"pml\"; xmax = \"pml\"; }; };\n" \
                  "lasers = ( { a0 = 1; omega0 = 5; w0 = 3; duration = 8; "
    expect_fail(GRID TIME LASER_PML "order = 4; } );\n", "lasers[0].order: applies only to "
                "profile = \"supergaussian\"; this laser's profile is \"gaussian\"", NULL);
    expect_fail(GRID TIME LASER_PML "profile = \"supergaussian\"; edge = 1.0; } );\n",
                "lasers[0].edge: applies only to profile = \"flattop\"", NULL);
    expect_fail(GRID TIME LASER_PML "profile = \"supergaussian\"; order = 1.5; } );\n",
                "lasers[0].order: got 1.5; expected an order from 2", NULL);
    expect_fail(GRID TIME LASER_PML "profile = \"tophat\"; } );\n", "lasers[0].profile",
                "expected one of: gaussian, supergaussian, flattop");
    /* the angle of incidence: below 90 degrees */
    expect_fail(GRID TIME LASER_PML "angle = 90.0; } );\n", "lasers[0].angle: got 90; "
                "expected an angle of incidence in degrees", "-90 < angle < 90");
    /* time step above the Courant limit (0.0707 for dx = dy = 0.1) */
    expect_fail(GRID "time = { dt = 0.071; steps = 10; };\n", "time.dt", "Courant limit 0.0707");
    /* ppc, formulas, types, cells */
    expect_fail(GRID TIME "species = ( { name = \"e\"; charge = -1.0; ppc = [-2, 2]; } );\n",
                "species[0](e).ppc[0]", "expected an integer from 0");
    expect_fail(GRID TIME "species = ( { name = \"e\"; charge = -1.0; ppc = [0, 2]; } );\n",
                "species[0](e).ppc", "or [0, 0] for a species with no initial load");
    /* field ionization: the element, the initial state, the electron species */
    expect_fail(GRID TIME "species = ( { name = \"N\"; element = \"Xx\"; charge = 0.0; "
                "ppc = [1, 1]; } );\n", "species[0](N).element", "not an element from H to Kr");
    expect_fail(GRID TIME "species = ( { name = \"N\"; charge = 0.0; ppc = [1, 1]; "
                "ionization = { electrons = \"e\"; }; } );\n", "species[0](N).ionization",
                "needs the species' element");
    expect_fail(GRID TIME "species = ( { name = \"N\"; element = \"N\"; charge = 1.5; "
                "ppc = [1, 1]; ionization = { electrons = \"e\"; }; },\n"
                "{ name = \"e\"; charge = -1.0; ppc = [0, 0]; } );\n", "species[0](N).charge",
                "an integer from 0 to 7");
    expect_fail(GRID TIME "species = ( { name = \"N\"; element = \"N\"; charge = 0.0; "
                "ppc = [1, 1]; ionization = { electrons = \"p\"; max_charge = 5; }; },\n"
                "{ name = \"p\"; charge = 1.0; ppc = [1, 1]; } );\n",
                "species[0](N).ionization.electrons", "expected a mobile electron species");
    expect_fail(GRID TIME "species = ( { name = \"N\"; element = \"N\"; charge = 0.0; "
                "ppc = [1, 1]; ionization = { electrons = \"e\"; max_charge = 8; }; },\n"
                "{ name = \"e\"; charge = -1.0; ppc = [0, 0]; } );\n",
                "species[0](N).ionization.max_charge", "from 1 to 7");
    /* the plasma frequency of the plasma ionization makes: 2 electrons per helium atom */
    expect_fail(GRID TIME "species = ( { name = \"He\"; element = \"He\"; charge = 0.0; "
                "mass = 7294.3; ppc = [1, 1]; density = { n = 1000.0; };\n"
                "ionization = { electrons = \"e\"; }; },\n"
                "{ name = \"e\"; charge = -1.0; ppc = [0, 0]; } );\n", "time.dt",
                "omega_p dt = 2.236");
    expect_fail(GRID TIME SPEC("density = { profile = \"expr\"; expr = \"1+sin(2*pi*x/\"; };"),
                "species[0](electrons).density.expr", "cannot parse formula");
    expect_fail(GRID TIME SPEC("density = { profile = \"expr\"; expr = \"1+q\"; };"),
                "density.expr", "\"q\"");
    expect_fail(GRID TIME SPEC("density = { profile = \"expr\"; expr = \"sin(x)\"; };"),
                "density.expr", ">= 0");
    expect_fail(GRID TIME SPEC("momentum = { drift = (\"sqrt(x-1)\", 0, 0); };"),
                "momentum.drift[0]", "finite");
    expect_fail("grid = { cells = [64, 32]; dx = \"0.1\"; };\n" TIME, "grid.dx", "expected");
    expect_fail("grid = { cells = [64, 32]; dx = [\"0.1\", \"0.1\"]; };\n" TIME, "grid.dx[0]",
                "expected a number");
    expect_fail(GRID "time = { dt = { }; steps = 10; };\n", "time.dt", "expected a number");
    expect_fail("grid = { cells = [0, 32]; dx = [0.1, 0.1]; };\n" TIME, "grid.cells[0]", NULL);
    expect_fail("grid = { cells = [64, 40000]; dx = [0.1, 0.1]; };\n" TIME, "grid.cells[1]",
                NULL);
    expect_fail("grid = { cells = [64, 32]; dx = [0.1, 0.1]; cluster = [2, 16]; };\n" TIME,
                "grid.cluster[0]", NULL);
    /* further rules */
    expect_fail(GRID TIME SPEC("mass = 0.0;"), "mass", "> 0");
    expect_fail(GRID TIME SPEC("density = { profile = \"piecewise\"; x = [0.0, 2.0, 1.0]; "
                               "fx = [1.0, 1.0, 1.0]; };"), "density.x[2]", "increasing");
    expect_fail(GRID TIME SPEC("density = { profile = \"piecewise\"; x = [0.0]; fx = [1.0]; };"),
                "density.x", "at least 2");
    expect_fail(GRID TIME "species = ( { name = \"a\"; charge = 1.0; ppc = [1, 1]; },\n"
                "{ name = \"a\"; charge = 1.0; ppc = [1, 1]; } );\n", "species[1](a).name",
                "unique");
    expect_fail(GRID TIME SPEC("") "diagnostics = { particles = { species = [\"electron\"]; "
                "fraction = 0.5; }; };\n", "diagnostics.particles.species[0]", "electrons");
    expect_fail(GRID TIME "diagnostics = { particles = { fraction = 1.5; }; };\n",
                "diagnostics.particles.fraction", NULL);
    expect_fail(GRID TIME "fields = { filter = { passes = 17; }; };\n", "fields.filter.passes",
                NULL);
    expect_fail(GRID TIME "fields = { boundary = { xmin = \"pml\"; }; };\n", "fields.boundary",
                "periodic");
    expect_fail(GRID TIME "simulation = { backend = \"gpu\"; };\n", "simulation.backend", NULL);
    expect_fail(GRID TIME "fields = { boundary = { xmin = \"pml\"; xmax = \"mur\"; }; };\n"
                SPEC("boundary = { xmin = \"periodic\"; xmax = \"periodic\"; };"),
                "species[0](electrons).boundary.xmin", "not periodic");
    expect_fail(GRID TIME "fields = { moving_window = { enabled = true; }; };\n",
                "fields.moving_window", "periodic");
    expect_fail(GRID TIME "lasers = ( { a0 = 1.0; omega0 = 2.0; w0 = 0.0; duration = 3.0; } );\n",
                "lasers[0].w0", NULL);
    /* load balancing: every >= 1 (required), threshold > 0 */
#define BAL(x) "parallel = { balance = { " x " }; };\n"
    expect_fail(GRID TIME BAL("every = 0;"), "parallel.balance.every: got 0",
                "the steps between two load checks, an integer >= 1");
    expect_fail(GRID TIME BAL("threshold = 0.1;"), "parallel.balance.every: missing", NULL);
    expect_fail(GRID TIME BAL("every = 10; threshold = -0.1;"),
                "parallel.balance.threshold: got -0.1", "the imbalance allowed, a number > 0");
    expect_fail(GRID TIME BAL("every = 10; threshold = \"10%\";"),
                "parallel.balance.threshold", "expected a number");
    expect_fail(GRID TIME BAL("every = 2.5;"), "parallel.balance.every", "expected an integer");
    expect_fail(GRID TIME BAL("every = 10; treshold = 0.1;"), "parallel.balance.treshold",
                "did you mean 'threshold'?");
    expect_fail(GRID TIME "parallel = { balance = true; };\n", "parallel.balance",
                "expected a group balance = { ... };");
    /* several problems are all reported */
    expect_fail("grid = { cells = [0, 32]; dx = [0.1, -0.1]; };\n"
                "time = { dt = -1.0; steps = 1; };\n",
                "grid.cells[0]", "grid.dx[1]");
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "time.dt"));

    /* binary garbage */
    char junk[4096];
    unsigned x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(x >> 16);
    }
    snprintf(path, sizeof path, "%s/junk.cfg", tmpdir);
    write_file(path, junk, sizeof junk);
    CU_ASSERT_EQUAL(load_path(path, &d), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "junk.cfg"));
    /* missing file */
    snprintf(path, sizeof path, "%s/no-such-deck.cfg", tmpdir);
    CU_ASSERT_EQUAL(load_path(path, &d), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "no-such-deck.cfg"));
    CU_ASSERT_EQUAL(load_path(tmpdir, &d), -1);
}

static void test_formula(void)
{
    char err[256] = "";
    formula *f = formula_new("1+0.5*sin(2*pi*x/10)", 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 0.0, 3.0), 1.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 2.5, 0.0), 1.5, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 7.5, 1.0), 0.5, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 1.0, 0.0), 1 + 0.5 * sin(2 * M_PI / 10), 1e-15);
    formula_free(f);
    f = formula_new("x*y + e^0 - max(0, y - 10)", 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 2.0, 3.0), 7.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, 1.0, 12.0), 11.0, 1e-15);
    formula_free(f);
    CU_ASSERT_PTR_NULL(formula_new("1+", 0, err, sizeof err));
    CU_ASSERT(strlen(err) > 0);
    CU_ASSERT_PTR_NULL(formula_new("z", 0, err, sizeof err));
    CU_ASSERT_PTR_NULL(formula_new("", 0, err, sizeof err));
    CU_ASSERT_PTR_NULL(formula_new("1, 2", 0, err, sizeof err));
    CU_ASSERT_PTR_NULL(formula_new(NULL, 0, NULL, 0));
    formula_free(NULL);
    /* t only where asked; the variables an expression reads */
    CU_ASSERT_PTR_NULL(formula_new("cos(t)", 0, err, sizeof err));
    f = formula_new("2*cos(t) + y", 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(formula_vars(f), FORMULA_Y | FORMULA_T);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval_t(f, 5.0, 1.0, M_PI), -1.0, 1e-15);
    formula_free(f);
    f = formula_new("0.5*pi", 1, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(formula_vars(f), 0);
    formula_free(f);
}

/* User constants: numbers and formulas of earlier constants, usable in density and drift
 * formulas (a whole name, not a function call or part of a longer name); the resolved deck
 * reads back to the same values. */
static void test_constants(void)
{
    static const char *text =
        "constants = { k = 0.5; amp = 0.1; L = \"2*pi/k\"; sin2 = 3; };\n" GRID TIME
        "species = ( { name = \"e\"; charge = -1.0; ppc = [2, 2];\n"
        "  density = { profile = \"expr\"; expr = \"1 + amp*sin(k*x) + 0*sin2 + 0*ampx\"; };\n"
        "  momentum = { drift = (\"amp*cos(k*x)\", 0.0, \"L\"); }; } );\n";
    deck d;
    CU_ASSERT_EQUAL(load_text(text, &d), -1); /* ampx is no constant */
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "Unexpected token \"ampx\""));
    char ok[2048];
    snprintf(ok, sizeof ok, "%s", text);
    *strstr(ok, " + 0*ampx") = '\0';
    strcat(ok, "\"; };\n  momentum = { drift = (\"amp*cos(k*x)\", 0.0, \"L\"); }; } );\n");
    CU_ASSERT_EQUAL_FATAL(load_text(ok, &d), 0);
    CU_ASSERT_EQUAL(d.nconstants, 4);
    CU_ASSERT_DOUBLE_EQUAL(d.constants[2].value, 4 * M_PI, 1e-14);
    char err[256];
    formula *f = formula_new(d.species[0].density_expr, 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_DOUBLE_EQUAL(formula_eval(f, M_PI, 0.0), 1 + 0.1 * sin(0.5 * M_PI), 1e-15);
    formula_free(f);
    CU_ASSERT_DOUBLE_EQUAL(strtod(d.species[0].drift[2] + 1, NULL), 4 * M_PI, 1e-14);
    /* the resolved deck keeps the values */
    deck r;
    CU_ASSERT_EQUAL_FATAL(reload(&d, &r), 0);
    assert_same(&d, &r);
    CU_ASSERT_EQUAL(r.nconstants, 4);
    deck_free(&r);
    deck_free(&d);
    expect_fail("constants = { x = 1.0; };\n" GRID TIME SPEC(""), "constants.x",
                "invalid constant name");
    expect_fail("constants = { a = \"b + 1\"; b = 1; };\n" GRID TIME SPEC(""), "constants.a",
                "Unexpected token \"b\"");
    expect_fail("constants = { a = true; };\n" GRID TIME SPEC(""), "constants.a", NULL);
}

static void test_pwl(void)
{
    double s[] = {0.0, 1.0, 3.0}, v[] = {0.0, 2.0, 1.0};
    deck_pwl p = {3, s, v}, none = {0, NULL, NULL};
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, -5.0), 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, 0.5), 1.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, 1.0), 2.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, 2.0), 1.5, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, 3.0), 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&p, 99.0), 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(profile_pwl(&none, 0.3), 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(deck_courant_dt(0.1, 0.1), 0.1 / sqrt(2.0), 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(deck_courant_dt(1.0, 2.0), 2.0 / sqrt(5.0), 1e-15);
}

/* Beyond the evaluation budget the checks visit a subset of the load positions; the load
 * itself then stops on a bad density it meets (status 1 with the position), never skips it. */
static void test_load_stops_on_bad_density(void)
{
    deck d;
    deck_set_scan_budget(40); /* every 205th cell: column 33 is not visited */
    int rc = load_text(GRID TIME SPEC("density = { profile = \"expr\"; "
                                      "expr = \"x > 3.3 && x < 3.4 ? sqrt(-1) : 1\"; };"), &d);
    deck_set_scan_budget(1LL << 26);
    CU_ASSERT_EQUAL_FATAL(rc, 0); /* the subset missed the bad column */
    char path[600];
    snprintf(path, sizeof path, "%s/load-stop.txt", tmpdir);
    fflush(stdout);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) { /* one thread: OpenMP's thread pool does not survive fork */
        omp_set_num_threads(1);
        FILE *f = freopen(path, "w", stderr);
        clusters cl;
        species sp;
        (void)f;
        clusters_init(&cl, &d);
        species_init(&sp, &d, 0, &cl, NULL);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(errbuf, 1, sizeof errbuf - 1, f) : 0;
    errbuf[n] = '\0';
    if (f)
        fclose(f);
    printf(" [%s] ", errbuf);
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "species electrons: density = "));
    CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "nan at (x, y) = (3.325"));
    deck_free(&d);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("deck", NULL, NULL);
    CU_add_test(s, "round trip through deck_write", test_roundtrip);
    CU_add_test(s, "ionization keys through deck_write", test_ionization_roundtrip);
    CU_add_test(s, "defaults", test_defaults);
    CU_add_test(s, "collisions: keys, round trip, errors", test_collisions);
    CU_add_test(s, "tmax gives steps", test_tmax);
    CU_add_test(s, "broken decks are rejected with the key path", test_broken);
    CU_add_test(s, "formulas", test_formula);
    CU_add_test(s, "user constants in formulas", test_constants);
    CU_add_test(s, "piecewise tables and the Courant limit", test_pwl);
    CU_add_test(s, "the load stops on a bad density the checks did not visit",
                test_load_stops_on_bad_density);
    unsigned failed = tu_run_tests();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_deck: could not remove %s\n", tmpdir);
    return failed ? 1 : 0;
}
