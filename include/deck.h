/* deck.h - the resolved input deck (docs/design.md, "Input deck") and density/drift formulas.
 *
 * deck_load() reads a libconfig file, checks every key and value, fills in defaults and
 * returns 0; on any problem it reports file, line, key path and what was expected through
 * empic_report() and returns -1 before anything large is allocated. */
#ifndef DECK_H
#define DECK_H

#include <stdio.h>

#include "kinds.h"

/* One in-situ phase-space histogram (diagnostics.phasespace): the charge of the species'
 * macro-particles binned over 1 or 2 axes (src/insitu.h). */
typedef struct {
    int species;                       /* species number */
    int naxes;                         /* 1 (spectrum, profile) or 2 */
    int axis[2];                       /* enum deck_psaxis, in deck order */
    int bins[2];
    int fixed[2];                      /* range given in the deck (else from the particles at
                                          each dump) */
    double range[2][2];                /* [axis][min, max]; log axes: of the value, > 0 */
    int log;                           /* energy axes binned in log10 */
    long every;
} deck_phasespace;

/* One field probe (diagnostics.probes, src/io/probes.h): a point (x0, y0), or n points from
 * (x0, y0) to (x1, y1) evenly (both ends included), in c/omega_p within the box (the box's
 * frame: it moves with the moving window). */
typedef struct {
    char name[DECK_NAME_MAX];
    int line;                          /* 0: a point, 1: a line of n points */
    int n;                             /* points (1 for a point) */
    double x0, y0, x1, y1;
    int fields;                        /* bit m: quantity m of probe.h (PROBE_EX .. PROBE_RHO) */
    long every;                        /* steps between samples (default 1) */
} deck_probe;
/* The names of the probe quantities in PROBE_* order, NULL-terminated. */
extern const char *const DECK_PROBE_FIELDS[];

/* A piecewise-linear function f(s) through n points (s strictly increasing); constant
 * continuation outside [s[0], s[n-1]]. n == 0 means f = 1. */
typedef struct {
    int n;
    double *s, *f;
} deck_pwl;

typedef struct deck_species {
    char name[DECK_NAME_MAX];
    double charge, mass;
    int ppc[2];
    int immobile;
    int profile;                       /* enum deck_profile */
    double n;                          /* density scale: uniform value, or factor for the others */
    deck_pwl pwl_x, pwl_y;             /* piecewise: n(x,y) = n * fx(x) * fy(y) */
    char density_expr[DECK_EXPR_MAX];  /* expr: n(x,y) = n * expr(x,y) ("n" defaults to 1) */
    double uth[3];                     /* per-axis thermal momentum u_th */
    char drift[3][DECK_EXPR_MAX];      /* drift components as formulas in x, y; numbers are
                                          stored as their "%.17g" text */
    int bnd[4];                        /* enum deck_pbnd per side */
    int element;                       /* atomic number (0: none; charge is then the initial
                                          charge state) */
    int ionize;                        /* field ionization (ADK) of this ion species */
    int ion_electrons;                 /* ionize: the species its electrons join */
    int max_charge;                    /* ionize: the highest charge state (default Z) */
} deck_species;

typedef struct deck_laser {
    double a0, omega0, polarization;   /* polarization: angle of E from y in the y-z plane */
    int circular;
    double w0, focus, center, duration, phase;
    int envelope;                      /* enum deck_envelope */
    double ramp;                       /* flat-top: rise/fall time (default duration/4) */
    int profile;                       /* enum deck_lprofile, transverse */
    double order;                      /* supergaussian: exp(-|r/w|^order), default 4 */
    double edge;                       /* flattop: width of the cos^2 edge beyond w0
                                          (0: a hard edge) */
    int boundary;                      /* enum deck_side, launching side */
    double angle;                      /* angle of incidence in degrees from the side's
                                          normal toward +y (x sides) or +x (y sides);
                                          |angle| < 90, default 0 */
} deck_laser;

/* A user constant of the deck's `constants` group, usable in every formula. */
typedef struct {
    char name[DECK_NAME_MAX];
    double value;
} deck_constant;

/* One entry of the collisions list (design.md §15): species species[0] with species[1] (the
 * same twice: intra-species), every `every` steps, Coulomb logarithm fixed (> 0) or computed
 * per pair (0). */
typedef struct {
    int species[2];
    double coulomb_log;
    long every;
} deck_collision;

typedef struct deck {
    char file[DECK_PATH_MAX];          /* the deck's path, for messages */
    int nconstants;
    deck_constant constants[DECK_MAX_CONSTANTS];
    /* simulation */
    char name[DECK_NAME_MAX];
    int backend;                       /* enum deck_backend */
    unsigned long long seed;
    double n0;                         /* reference density, cm^-3 (SI factors of the output,
                                          lab keys, the physical scale of collisions) */
    int n0_given;                      /* simulation.n0 is in the deck, or a laser's lambda0
                                          set it (collisions need one) */
    double wall_time;                  /* wall-clock limit of one process in s (0 = none):
                                          checkpoint and stop before it */
    /* grid */
    int nx, ny;
    double dx, dy;
    int cluster[2];                    /* cluster (tile) size in cells, default [16, 16] */
    double slack;                      /* free fraction per cluster segment, default 0.3 */
    int ranks[2];                      /* parallel.ranks: MPI ranks along x, y (0: chosen
                                          for the grid, clusters_decompose) */
    long balance_every;                /* parallel.balance.every: steps between load checks
                                          (0: no balancing; rebalance.h) */
    double balance_threshold;          /* parallel.balance.threshold: the most loaded rank's
                                          excess over the mean load allowed (0.1: 10 %) */
    /* time */
    double dt;
    long steps;                        /* from time.steps, or ceil(tmax/dt) */
    /* fields */
    int fbnd[4];                       /* enum deck_fbnd per side */
    int pml_cells;                     /* PML thickness, default 16 */
    int filter_passes, filter_compensate;
    char ext[6][DECK_EXPR_MAX];        /* external Ex, Ey, Ez, Bx, By, Bz: formulas in x, y,
                                          t (extfield.h); numbers as their "%.17g" text */
    int window_enabled;
    double window_t_start;
    int nlasers;
    deck_laser lasers[DECK_MAX_LASERS];
    int nspecies;
    deck_species species[DECK_MAX_SPECIES];
    int ncollisions;
    deck_collision collisions[DECK_MAX_COLLISIONS];
    /* diagnostics */
    char output[DECK_PATH_MAX];        /* default "out" */
    long energy_every;                 /* 0 = off; default 10 */
    double energy_growth_limit;        /* stop when the total energy grows by this factor
                                          (0 = off; default 10) */
    long fields_every;                 /* 0 = off; default 0 */
    int fields_quantities;             /* mask of enum deck_fieldq; default all */
    long avg_every;                    /* diagnostics.fields_avg: steps between averaged field
                                          dumps (0 = off; fieldavg.h) */
    long avg_steps;                    /* steps averaged before each, 1..avg_every (default
                                          avg_every) */
    int avg_quantities;                /* mask of enum deck_fieldq; default E, B, E2, B2 */
    long particles_every;              /* 0 = off */
    double particles_fraction;         /* default 0.01 */
    int particles_species_mask;        /* bit s = species s dumped; default all */
    int particles_region;              /* 1: only particles inside particles_box */
    double particles_box[4];           /* x0, x1, y0, y1 (lab frame, with the window) */
    int particles_energy;              /* 1: only particles with energy in particles_erange */
    double particles_erange[2];        /* (gamma - 1) m c^2 per particle, in m_e c^2 */
    int nphasespace;
    deck_phasespace phasespace[DECK_MAX_PHASESPACE];
    long tracks_every;                 /* 0 = off */
    double tracks_fraction;            /* share of each tracked species given an id at load */
    int tracks_species_mask;           /* bit s = species s tracked; default all mobile */
    int nprobes;
    deck_probe probes[DECK_MAX_PROBES];
    long checkpoint_every;             /* 0 = off */
    /* found by the checks of deck_load: particles of each species in the fullest box-wide
     * window of its load and injection columns (estimated when too many to visit) */
    double load_particles[DECK_MAX_SPECIES];
} deck;

/* 1 when the run's data dumps have meshes at all: field dumps or averaged ones (every dump
 * of the series then has a meshes group, empty where it has none). */
static inline int deck_dumps_meshes(const deck *d)
{
    return d->fields_every > 0 || d->avg_every > 0;
}

/* Load and validate; 0 on success, -1 after reporting the error(s). */
int deck_load(const char *path, deck *d);
/* The profile checks of deck_load again, after d->steps changed (the moving window injects
 * further); 0, or -1 after reporting. */
int deck_recheck(deck *d);
/* Profile values the checks of one deck evaluate at most (default 2^26; the fuzzers lower
 * it); beyond it they visit an even subset of the load positions. */
void deck_set_scan_budget(long long points);
/* The name of a species in output files and datasets: [^A-Za-z0-9] replaced by '_'. */
void deck_output_name(char *dst, size_t len, const char *src);
/* dt must stay below this fraction of the Courant limit (0.1 % below it). */
#define DECK_COURANT_MARGIN 0.999
/* Courant limit of the 2D Yee scheme: 1/sqrt(1/dx^2 + 1/dy^2). */
double deck_courant_dt(double dx, double dy);
/* Write the fully resolved deck as a libconfig file that deck_load() accepts. */
void deck_write(const deck *d, FILE *f);
void deck_free(deck *d);

/* Formulas in x and y, and t where asked (constants pi and e) through the expression
 * library. Not thread safe: give each thread its own (formula_new again). */
typedef struct formula formula;
/* NULL on a parse error, with the library's message in err; time: t is a variable too. */
formula *formula_new(const char *expr, int time, char *err, size_t errlen);
/* Value of a constant expression (no x, y) in which the n constants k[] are known; 0, or -1
 * with the library's message in err. */
int formula_constant(const char *expr, const deck_constant *k, int n, double *value,
                     char *err, size_t errlen);
/* Whether expr is a plain number (a deck's numbers are stored as their "%.17g" text), its
 * value into *value; no expression library needed. */
int formula_number(const char *expr, double *value);
double formula_eval(formula *f, double x, double y);
double formula_eval_t(formula *f, double x, double y, double t);
/* The variables the expression reads (FORMULA_X | FORMULA_Y | FORMULA_T). */
enum { FORMULA_X = 1, FORMULA_Y = 2, FORMULA_T = 4 };
int formula_vars(const formula *f);
void formula_free(formula *f);

#endif
