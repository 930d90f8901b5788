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

/* The energy guard: the total energy (fields and kinetic) must stay below
 * d.energy_growth_limit times the reference, the total energy when the process started
 * (health_energy_ref), at least HEALTH_ENERGY_FLOOR times the rest energy of the mobile
 * particles (so that a cold start with ~0 energy does not trip it). On only for runs with no
 * laser, moving window or external E (they feed energy in). */
#define HEALTH_ENERGY_FLOOR 1e-4
int health_growth_on(const deck *d);
/* The total energy of the host state on every rank (collective): E and B as they are, the
 * kinetic energy from the momenta at the half step before; with rest = 1, the rest energy
 * of the mobile particles instead. */
double health_energy_total(const sim *S, int rest);
/* Set S->energy_ref from the host state (collective; 0 when the guard is off). */
void health_energy_ref(sim *S);
/* The message when total (of step `step`) is above the limit, written into what; else
 * NULL. */
const char *health_growth(const sim *S, long step, double total, char *what, size_t len);

#endif
