/* deck_read.h - checked reading of libconfig settings for deck.c: typed getters that
 * report file, line, key path and what was expected through empic_report(), and suggest
 * the nearest valid name for misspelt keys and values. Internal to the deck module. */
#ifndef DECK_READ_H
#define DECK_READ_H

#include "deck.h"

#include <libconfig.h>

typedef config_setting_t cs;

typedef struct {
    const char *file;           /* the deck, for messages */
    deck *d;
    int nerr;                   /* problems reported so far */
    int box_ok;                 /* grid cells and dx are valid: box-dependent checks may run */
    int n0_known;               /* simulation.n0 given, or set from a laser's lambda0 */
} dk_ctx;

enum { DK_ANY, DK_POS, DK_NONNEG };     /* range of a floating-point value */

/* Report a problem with setting s (or with its member key, when key != NULL). */
void dk_report(dk_ctx *c, const cs *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same as a warning: printed, not counted as a problem. */
void dk_warn(dk_ctx *c, const cs *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *dk_tname(const cs *s);
/* " did you mean 'x'?" when a name of the NULL-terminated list is close to w, else "". */
const char *dk_suggest(const char *w, const char *const list[], char *buf, size_t n);
const char *dk_join(const char *const list[], char *buf, size_t n);

/* Member key of group g (NULL when g is no group or has no such member). */
cs *dk_member(const cs *g, const char *key);
/* Reject members of g whose names are not in allowed[] (NULL-terminated). */
void dk_keys(dk_ctx *c, const cs *g, const char *const allowed[]);

/* Values of one setting: 0 when valid, -1 after reporting. */
int dk_range_ok(dk_ctx *c, const cs *s, double v, int kind);   /* 1 when in range */
int dk_num_of(dk_ctx *c, const cs *s, double *v);
int dk_int_of(dk_ctx *c, const cs *s, long long *v, long long lo, long long hi);
int dk_str_of(dk_ctx *c, const cs *s, char *buf, size_t n);
int dk_enum_of(dk_ctx *c, const cs *s, const char *const names[], int *v);

/* Members of a group: 1 when given and valid, 0 when absent (output untouched; reported
 * when req), -1 after reporting a problem. */
const cs *dk_group(dk_ctx *c, const cs *g, const char *key, int req);
int dk_num(dk_ctx *c, const cs *g, const char *key, double *v, int kind, int req);
int dk_int(dk_ctx *c, const cs *g, const char *key, long long *v, long long lo, long long hi,
           int req);
int dk_bool(dk_ctx *c, const cs *g, const char *key, int *v);
int dk_str(dk_ctx *c, const cs *g, const char *key, char *buf, size_t n, int req);
int dk_enum(dk_ctx *c, const cs *g, const char *key, const char *const names[], int *v);
/* Array or list of n elements (any length when n < 0); NULL when absent or reported. */
const cs *dk_seq(dk_ctx *c, const cs *g, const char *key, int n, const char *what, int req);
int dk_vec(dk_ctx *c, const cs *g, const char *key, double *v, int n, int kind, int req);
int dk_ivec(dk_ctx *c, const cs *g, const char *key, int *v, int n, int lo, int hi, int req);

/* A list "( { ... }, ... )" of at most max groups under root.key; returns it or NULL. */
const cs *dk_list(dk_ctx *c, const cs *root, const char *key, int max, int *n);
/* The collisions list (deck_collide.c), after the species. */
void deck_collide_parse(dk_ctx *c, const cs *root);

/* The in-situ diagnostics keys (deck_insitu.c): diagnostics.phasespace and .tracks (diag may
 * be NULL: defaults only), and region/energy of diagnostics.particles. */
extern const char *const DECK_PS_AXES[];
void deck_insitu_parse(dk_ctx *c, const cs *diag, const char *const snames[]);
void deck_insitu_parse_selection(dk_ctx *c, const cs *particles);

/* A value stored in single precision: 0 (when zero_ok) or a magnitude the run's arithmetic
 * keeps finite and normal; 0, or -1 after reporting it as `what` at setting s. */
int dk_float_range(dk_ctx *c, const cs *s, const char *what, double v, int zero_ok);
/* Checks of the parsed deck against what the run will do (deck_run.c): cluster split,
 * single-precision ranges, laser sides, output names, every profile value of the load and
 * injection; fills d->load_particles. */
void deck_check(dk_ctx *c, const cs *root);

/* dk_int into an integer lvalue of any type (needs dk_ctx *c in scope). */
#define DK_INT(g, key, dst, lo, hi, req)                                                      \
    do {                                                                                       \
        long long t_ = (long long)(dst);                                                       \
        if (dk_int(c, g, key, &t_, lo, hi, req) > 0)                                          \
            (dst) = t_;                                                                        \
    } while (0)

/* The `constants` group into d->constants (deck_const.c). */
void dk_constants(dk_ctx *c, const cs *root);
/* Replace the names of the constants in formula expr (buffer of n) by their values. */
void dk_expand(dk_ctx *c, const cs *s, char *expr, size_t n);

/* Keys in lab units (deck_lab.c). One way to give a value: the normalised key (alt[0]) or
 * a lab twin, whose value times `scale` is the normalised one; scale 0 means the twin cannot
 * be converted, for want of `need` (NULL: the reference density n0). */
typedef struct {
    const char *key, *unit;
    double scale;
    const char *need;
} dk_alt;
/* Member key of g, or its lab twin when key is absent (for messages about the value). */
cs *dk_given(const cs *g, const char *key, const char *lab);
/* n0 from simulation.n0, else from the first laser's lambda0 (before any lab key is read). */
void dk_lab_reference(dk_ctx *c, const cs *root);
/* Normalised units per um, per fs, per V/m and per T (0 when n0 is unknown). */
double dk_lab_um(const dk_ctx *c);
double dk_lab_fs(const dk_ctx *c);
double dk_lab_vm(const dk_ctx *c);
double dk_lab_tesla(const dk_ctx *c);
/* Which of the n alternatives of g is given: its index, -1 for none (reported when req), -2
 * after reporting two given, or a lab twin that cannot be converted. */
int dk_alt_which(dk_ctx *c, const cs *g, const dk_alt *alt, int n, int req);
/* At most one of the n alternatives of g (exactly one when req): its value into *v (dim
 * values for the vector form); the alternative's index + 1, 0 when absent, -1 reported. */
int dk_num_alt(dk_ctx *c, const cs *g, const dk_alt *alt, int n, double *v, int kind, int req);
int dk_vec_alt(dk_ctx *c, const cs *g, const dk_alt *alt, int n, double *v, int dim, int kind,
               int req);
/* A laser's omega0 or lambda0; after its polarisation, a0 or intensity, w0 or w0_um and
 * duration or duration_fs; ramp or ramp_fs (dk_num_alt's result); focus(_um), center(_um). */
void dk_laser_omega(dk_ctx *c, const cs *g, deck_laser *L);
void dk_laser_lab(dk_ctx *c, const cs *g, deck_laser *L);
int dk_laser_ramp(dk_ctx *c, const cs *g, deck_laser *L);
void dk_laser_place(dk_ctx *c, const cs *g, deck_laser *L);
/* A species' density.n, n_cm3 or n_nc; its momentum.thermal, temperature_eV or _keV. */
void dk_density_lab(dk_ctx *c, const cs *g, deck_species *sp);
void dk_temperature(dk_ctx *c, const cs *g, deck_species *sp);

/* The names of the deck's enumerations (kinds.h), NULL-terminated, in enum order. */
extern const char *const DK_SIDES[], *const DK_FBND[], *const DK_PBND[], *const DK_PROFILES[],
    *const DK_BACKENDS[], *const DK_ENVELOPES[], *const DK_FQ[], *const DK_LPROFILES[];
/* The quantities of the averaged field dumps (DK_FQ's, then E2 and B2: enum deck_fieldq). */
extern const char *const DK_AQ[];
/* 1 and the value in *v when s is a whole finite number (blanks after it allowed), else 0. */
int dk_numeric_text(const char *s, double *v);

#endif
