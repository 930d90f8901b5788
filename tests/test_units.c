/* test_units.c - the lab units of a deck (include/units.h, src/deck/deck_lab.c): the
 * conversions against numbers computed here from the textbook formulas, a deck in lab units
 * against its normalised twin, the reference density taken from lambda0, and the errors for
 * twins given together or lab keys without what they need. */
#include "deck.h"
#include "units.h"

#include "testutil.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/empic-units-XXXXXX";
static char errbuf[16384]; /* stderr of the last load_text() */

/* deck_load on text, stderr captured into errbuf. */
static int load_text(const char *text, deck *d)
{
    return tu_deck_load_text(tmpdir, text, d, errbuf, sizeof errbuf);
}

static void expect_fail(const char *text, const char *want1, const char *want2)
{
    tu_deck_refused(tmpdir, text, want1, want2, errbuf, sizeof errbuf);
}

static int close_to(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

/* SI constants typed here again, so that the checks do not lean on units.h's. */
#define E_ 1.602176634e-19
#define ME_ 9.1093837015e-31
#define C_ 299792458.0
#define EPS0_ 8.8541878128e-12

static double wp_of(double n0_cm3) { return sqrt(n0_cm3 * 1e6 * E_ * E_ / (EPS0_ * ME_)); }

static void test_conversions(void)
{
    /* n_c = 1.1148e21 / lambda^2 cm^-3: 1.742e21 at 0.8 um, 1.0e21 at 1.0557 um */
    CU_ASSERT(close_to(units_nc_cm3(0.8), 1.7419e21, 1e-4));
    CU_ASSERT(close_to(units_nc_cm3(1.0), 1.11485e21, 1e-4));
    /* a0 = 0.855 lambda sqrt(I / 1e18 W/cm^2) (linear): about 1.0 at 2.14e18, 0.8 um */
    CU_ASSERT(close_to(units_a0(2.14e18, 0.8, 0), 0.8549 * 0.8 * sqrt(2.14), 2e-4));
    CU_ASSERT(fabs(units_a0(2.14e18, 0.8, 0) - 1.0) < 2e-3);
    /* circular: |E| constant, the same intensity gives a0 / sqrt(2) */
    CU_ASSERT(close_to(units_a0(2.14e18, 0.8, 1), units_a0(2.14e18, 0.8, 0) / sqrt(2.0), 1e-14));
    CU_ASSERT(close_to(units_intensity(1.0, 0.8, 0), 1.3685e18 / 0.64, 1e-3));
    CU_ASSERT(close_to(units_intensity(units_a0(3e19, 1.0, 1), 1.0, 1), 3e19, 1e-12));
    /* omega0/omega_p = sqrt(n_c/n0); c/omega_p = 5.314 um and 1/omega_p = 17.72 fs at 1e18 */
    CU_ASSERT(close_to(units_omega0(0.8, 1e19), sqrt(1.7419e21 / 1e19), 1e-4));
    CU_ASSERT(close_to(units_length_um(1e18), C_ / wp_of(1e18) * 1e6, 1e-12));
    CU_ASSERT(close_to(units_length_um(1e18), 5.314, 1e-3));
    CU_ASSERT(close_to(units_time_fs(1e18), 17.72, 1e-3));
    CU_ASSERT(close_to(units_mc2_eV(), 510998.95, 1e-8));
}

#define GRID_LAB "grid = { cells = [64, 32]; dx_um = [0.05, 0.1]; };\n"
#define PML "fields = { boundary = { xmin = \"pml\"; xmax = \"pml\"; ymin = \"periodic\"; " \
            "ymax = \"periodic\"; }; pml = { cells = 8; }; };\n"
#define WINDOW "fields = { boundary = { xmin = \"pml\"; xmax = \"pml\"; ymin = \"periodic\"; " \
               "ymax = \"periodic\"; }; pml = { cells = 8; };\n" \
               "  moving_window = { enabled = true; t_start_fs = 30.0; }; };\n"

static const char *LAB =
    "simulation = { n0 = 1.0e19; };\n" GRID_LAB "time = { dt_fs = 0.05; tmax_fs = 2.0; };\n" WINDOW
    "lasers = ( { lambda0 = 0.8; intensity = 2.14e18; w0_um = 2.0; duration_fs = 5.0;\n"
    "             focus_um = 1.5; center_um = 1.6; envelope = \"flattop\"; ramp_fs = 1.0; },\n"
    "           { lambda0 = 0.4; intensity = 1.0e19; polarization = \"circular\"; w0 = 1.0;\n"
    "             duration = 2.0; } );\n"
    "species = ( { name = \"e\"; charge = -1.0; ppc = [1, 1];\n"
    "              density = { profile = \"uniform\"; n_cm3 = 5.0e18; };\n"
    "              momentum = { temperature_keV = 10.0; }; },\n"
    "            { name = \"p\"; charge = 1.0; mass = 1836.0; ppc = [1, 1];\n"
    "              density = { profile = \"piecewise\"; n_nc = 0.002; y_um = [0.5, 1.0];\n"
    "                          fy = [0.0, 1.0]; };\n"
    "              momentum = { temperature_eV = [100.0, 0.0, 400.0]; }; } );\n";

/* Every value of LAB against the formula, computed here for n0 = 1e19 cm^-3. */
static void test_lab_deck(void)
{
    deck d;
    CU_ASSERT_EQUAL_FATAL(load_text(LAB, &d), 0);
    const double wp = wp_of(1e19), um = C_ / wp * 1e6, fs = 1e15 / wp;
    const double nc08 = EPS0_ * ME_ * pow(2 * M_PI * C_ / 0.8e-6, 2) / (E_ * E_) * 1e-6;
    CU_ASSERT(d.n0 == 1e19);
    CU_ASSERT(close_to(d.dx, 0.05 / um, 1e-12) && close_to(d.dy, 0.1 / um, 1e-12));
    CU_ASSERT(close_to(d.dt, 0.05 / fs, 1e-12));
    CU_ASSERT_EQUAL(d.steps, 40);
    CU_ASSERT(close_to(d.window_t_start, 30.0 / fs, 1e-12));
    const deck_laser *L = &d.lasers[0], *M = &d.lasers[1];
    CU_ASSERT(close_to(L->omega0, sqrt(nc08 / 1e19), 1e-12));
    CU_ASSERT(close_to(M->omega0, 2 * sqrt(nc08 / 1e19), 1e-12));
    /* a0 = e E lambda / (2 pi m c^2), E = sqrt(2 I / (c eps0)) (linear), sqrt(I / (c eps0)) */
    CU_ASSERT(close_to(L->a0, E_ * sqrt(2 * 2.14e22 / (C_ * EPS0_)) * 0.8e-6 /
                              (2 * M_PI * ME_ * C_ * C_), 1e-12));
    CU_ASSERT(close_to(M->a0, E_ * sqrt(1e23 / (C_ * EPS0_)) * 0.4e-6 / (2 * M_PI * ME_ * C_ * C_),
                       1e-12));
    CU_ASSERT(close_to(L->w0, 2.0 / um, 1e-12) && close_to(L->duration, 5.0 / fs, 1e-12));
    CU_ASSERT(close_to(L->focus, 1.5 / um, 1e-12) && close_to(L->center, 1.6 / um, 1e-12));
    CU_ASSERT(close_to(L->ramp, 1.0 / fs, 1e-12));
    CU_ASSERT(M->w0 == 1.0 && M->duration == 2.0);
    CU_ASSERT(close_to(d.species[0].n, 0.5, 1e-15));
    CU_ASSERT(close_to(d.species[1].n, 0.002 * nc08 / 1e19, 1e-12));
    CU_ASSERT(d.species[1].pwl_y.n == 2 && close_to(d.species[1].pwl_y.s[1], 1.0 / um, 1e-12));
    CU_ASSERT(close_to(d.species[1].pwl_y.s[0], 0.5 / um, 1e-12));
    const double mc2 = ME_ * C_ * C_ / E_; /* eV */
    for (int k = 0; k < 3; k++)
        CU_ASSERT(close_to(d.species[0].uth[k], sqrt(1e4 / mc2), 1e-12));
    CU_ASSERT(close_to(d.species[1].uth[0], sqrt(100 / (1836 * mc2)), 1e-12));
    CU_ASSERT(d.species[1].uth[1] == 0.0);
    CU_ASSERT(close_to(d.species[1].uth[2], 2 * d.species[1].uth[0], 1e-14));
    deck_free(&d);
}

/* Without simulation.n0, the first laser's lambda0 sets n0 = n_c: its omega0 is exactly 1. */
static void test_n0_from_lambda0(void)
{
    deck d;
    CU_ASSERT_EQUAL_FATAL(load_text(GRID_LAB "time = { dt = 0.1; steps = 1; };\n" PML
                                    "lasers = ( { lambda0 = 1.0; a0 = 1.0; w0 = 5.0; "
                                    "duration = 10.0; }, { lambda0 = 0.5; a0 = 1.0; w0 = 5.0; "
                                    "duration = 10.0; } );\n", &d), 0);
    CU_ASSERT(close_to(d.n0, 1.11485e21, 1e-4));
    CU_ASSERT(d.lasers[0].omega0 == 1.0);
    CU_ASSERT(close_to(d.lasers[1].omega0, 2.0, 1e-14));
    CU_ASSERT(close_to(d.dx, 0.05 * 2 * M_PI, 1e-12)); /* c/omega0 = lambda / 2 pi */
    deck_free(&d);
}

#define TIME "time = { dt = 0.05; steps = 10; };\n"
#define SPEC(x) "species = ( { name = \"e\"; charge = -1.0; ppc = [1, 1]; " x " } );\n"
#define LASER(x) "lasers = ( { w0 = 2.0; duration = 5.0; " x " } );\n"

static void test_errors(void)
{
    const char *G = "grid = { cells = [64, 32]; dx = [0.1, 0.1]; };\n" TIME;
    char buf[2048];
    /* twins together */
    snprintf(buf, sizeof buf, "%s" PML LASER("a0 = 1.0; omega0 = 5.0; lambda0 = 0.8;"), G);
    expect_fail(buf, "lasers[0].lambda0: given together with omega0", "omega0 (omega_p) or "
                "lambda0 (um)");
    snprintf(buf, sizeof buf, "%s" SPEC("density = { n = 1.0; n_cm3 = 1e18; };"), G);
    expect_fail(buf, "density.n_cm3: given together with n", "n (n0), n_cm3 (cm^-3) or n_nc");
    snprintf(buf, sizeof buf, "%s" SPEC("momentum = { thermal = [0.1, 0.1, 0.1]; "
                                        "temperature_eV = 10.0; };"), G);
    expect_fail(buf, "momentum.temperature_eV: given together with thermal", NULL);
    expect_fail("grid = { cells = [64, 32]; dx = [0.1, 0.1]; dx_um = [0.1, 0.1]; };\n" TIME,
                "grid.dx_um: given together with dx", NULL);
    snprintf(buf, sizeof buf, "%s" SPEC("density = { profile = \"piecewise\"; x = [0.0, 1.0]; "
                                        "x_um = [0.0, 1.0]; fx = [0.0, 1.0]; };"), G);
    expect_fail(buf, "density.x_um: given together with x", NULL);
    /* lab keys without n0 or a wavelength */
    snprintf(buf, sizeof buf, "%s" SPEC("density = { n_cm3 = 1e18; };"), G);
    expect_fail(buf, "density.n_cm3: is in cm^-3 and needs the reference density: add "
                "simulation.n0 (cm^-3), or lambda0 (um) to a laser", "or give n (n0)");
    snprintf(buf, sizeof buf, "%s" SPEC("density = { n_nc = 0.1; };"), G);
    expect_fail(buf, "density.n_nc: is in critical densities of lasers[0] and needs a laser",
                NULL);
    snprintf(buf, sizeof buf, "%s" PML LASER("intensity = 1e18; omega0 = 5.0;"), G);
    expect_fail(buf, "lasers[0].intensity: is in W/cm^2 and needs the wavelength: add lambda0 "
                "(um), or simulation.n0", NULL);
    expect_fail("grid = { cells = [64, 32]; dx = [0.1, 0.1]; };\ntime = { dt_fs = 0.1; "
                "steps = 1; };\n", "time.dt_fs: is in fs and needs the reference density",
                NULL);
    /* a wavelength in metres */
    snprintf(buf, sizeof buf, "%s" PML LASER("a0 = 1.0; lambda0 = 8e-7;"), G);
    expect_fail(buf, "lasers[0].lambda0: got 8e-07; expected a wavelength in um", NULL);
    snprintf(buf, sizeof buf, "%s" PML LASER("lambda0 = 0.8;"), G);
    expect_fail(buf, "lasers[0].a0: missing; expected one of a0 (normalised) or intensity "
                "(W/cm^2)", NULL);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("units", NULL, NULL);
    CU_add_test(s, "conversions against the textbook numbers", test_conversions);
    CU_add_test(s, "a deck in lab units", test_lab_deck);
    CU_add_test(s, "n0 from the first lambda0", test_n0_from_lambda0);
    CU_add_test(s, "twins together, lab keys without n0", test_errors);
    unsigned failed = tu_run_tests();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_units: could not remove %s\n", tmpdir);
    return failed ? 1 : 0;
}
