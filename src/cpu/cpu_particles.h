/* cpu_particles.h - the CPU backend's particle phases: gather and Boris push, then move and
 * charge-conserving deposit of every cluster (particles_advance), the charge density, and the
 * initial half push back. */
#ifndef CPU_PARTICLES_H
#define CPU_PARTICLES_H

#include "emf.h"
#include "extfield.h"
#include "species.h"

typedef struct {
    double kinetic;            /* sum w m (gamma - 1) dx dy at the time-centred momentum */
    double t_push, t_deposit;  /* wall seconds of the two phases */
} particles_stats;

/* One step for species s: gather E, B at x(n), Boris u(n-1/2) -> u(n+1/2), move to x(n+1),
 * deposit J(n+1/2) into f->j (guards included), write migration codes and histograms;
 * the kinetic energy only when want_ke; lost[c] += what the walls took from cluster c's
 * particles (ebal_wall). The external fields ext are added to E and B. */
void particles_advance(species *s, emf *f, const clusters *cl, const ext_fields *ext,
                       int want_ke, double *lost, particles_stats *out);
/* Initial u(0) -> u(-1/2) with the initial fields (and the external ones at t = 0). */
void particles_half_back(species *s, const emf *f, const clusters *cl, const ext_fields *ext);
/* Add the species' charge density at its current positions to the fixed-point sums
 * f->acc + 3 f->size (guards included; emf_acc_finish makes the density of them). */
void particles_rho(const species *s, const emf *f, const clusters *cl);

#endif
