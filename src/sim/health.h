/* health.h - the run's health checks on the host state: non-finite fields, non-finite particle
 * momenta or offsets, particles lost or duplicated in a periodic box, non-finite energies,
 * bad injected densities. They only check; sim_after_step decides when. */
#ifndef HEALTH_H
#define HEALTH_H

#include "sim_state.h"

#define HEALTH_EVERY 50 /* check cadence when energy diagnostics are off */

/* The first problem found. */
typedef struct {
    int found;          /* 0 when the state is sound */
    char what[32];      /* field component ("Ey"), particle quantity ("uz") or "count" */
    int species;        /* -1 for a field */
    int i, j;           /* cell of the bad value */
    double value;
    long long have, want; /* count: particles in the clusters, np */
} health_hit;

/* First non-finite interior value of E, B, J (in the order Ex..Bz, Jx..Jz, then row, column).
 * Returns 1 and fills h when found, else 0. */
int health_fields(const emf *f, health_hit *h);
/* First non-finite momentum (ux, uy, uz) or offset (x, y) among the live particles of the
 * mobile species. 1 when found. */
int health_particles(const sim *S, health_hit *h);
/* Every species keeps its particles: the cluster counts add up to np where all its
 * boundaries are periodic (nothing leaves or enters), and no cluster holds more than its
 * capacity. 1 on a mismatch. */
int health_counts(const sim *S, health_hit *h);
/* All three on the host arrays; reports the first problem with its location and the step
 * (S->step) and returns -1, else 0. */
int health_check(const sim *S, health_hit *h);

/* The first non-finite quantity of the last energy diagnostic (its energy.csv column) with
 * its likely cause, written into what; NULL when all are finite. */
const char *health_energy(const sim *S, char *what, size_t len);
/* A density or drift that the moving window's injection met and could not use (beyond what
 * deck_load checked): reported with its position, -1; else 0. */
int health_faults(const sim *S);

#endif
