/* profile.h - the plasma a deck describes, before it is loaded: density and drift profiles
 * evaluated where the load puts particles, the scan of those positions that the deck's checks
 * and the load share, and the columns a moving window brings in. */
#ifndef PROFILE_H
#define PROFILE_H

#include "deck.h"

/* Largest value a particle quantity (weight, drift) may take in single precision with room
 * for the arithmetic of a step. */
#define SPECIES_FLOAT_MAX 1e30

/* The first load position of a profile that the run cannot use. */
typedef struct {
    int found;
    const char *what;     /* "density", "drift[1]", ... */
    double x, y, value;   /* lab position and the value there */
    double peak, peak_x, peak_y; /* profile_scan: the largest density visited and where */
} profile_fault;

/* Per-thread evaluators of a species' formulas (NULL where a plain number will do). */
typedef struct {
    formula *dens, *drift[3];
    double drift_const[3];
} profile_eval;

void profile_open(profile_eval *p, const deck_species *c);
void profile_close(profile_eval *p);
/* The density n(x, y) of species c at lab position (x, y). */
double profile_density(const deck_species *c, profile_eval *p, double x, double y);
/* Offset in its cell of load position a of n along an axis. */
float profile_offset(int a, int n);
/* Piecewise-linear evaluation (deck_pwl with n == 0 gives 1). */
double profile_pwl(const deck_pwl *p, double s);
/* Cells the moving window moves in d->steps steps (0 without a window). */
long profile_window_moves(const deck *d);
/* Evaluate the profile of species s of d at every load position of the lab columns
 * [ig0, ig1) (0..nx-1: the initial load; nx and beyond: the moving window's injection),
 * where load and injection evaluate it: the particles of each column into per_column[ig -
 * ig0], and the first position (in column, row order) where the density is not finite or
 * negative, a weight overflows single precision or a drift is not finite into *bad. Only
 * cells whose index (ig - ig0) ny + j is a multiple of stride are visited (stride 1: all). */
void profile_scan(const deck *d, int s, long ig0, long ig1, long long stride,
                  long long *per_column, profile_fault *bad);

/* The first load position of species s with a positive density in the cells [i0, i1) x
 * [j0, j1) (lab columns; column, then row order), visiting every stride-th cell (stride >= 1
 * when more than `budget` positions): 1 with its cell, position and density, else 0. */
typedef struct {
    long i;
    int j;
    double x, y, n;
} profile_hit;
int profile_find(const deck *d, int s, long i0, long i1, int j0, int j1, long long budget,
                 profile_hit *hit);

#endif
