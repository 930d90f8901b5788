/* lasers.h - the laser sources of a run: each deck laser enters through a
 * total-field/scattered-field plane just inside its launching boundary (beyond the PML or
 * Mur edge). The incident field (include/laser.h) is added where the Yee curls cross the
 * plane, so the beam goes only forward and what comes back from the plasma leaves through
 * the boundary untouched.
 *
 * For a beam along x launched from xmin (sign s = +1) or xmax (s = -1), with plane node p
 * and B column b = p - 1 (xmin) or p (xmax), E1 = Ey, E2 = Ez of the incident field:
 *   after each half B step (E at t):   Bz[b] += s dt/(2dx) E1(xi_p, t),  By[b] -= s dt/(2dx) E2(xi_p, t)
 *   after the E step t -> t + dt:     Ey[p] += dt/dx E1(xi_b, t + dt/2),  Ez[p] += dt/dx E2(xi_b, t + dt/2)
 * with xi_p the plane's and xi_b the B column's distance from the launching boundary, each
 * component at its own transverse Yee position. Along y (E1 = Ex): Bz[b] -= s dt/(2dy) E1,
 * Bx[b] += s dt/(2dy) E2, Ex[p] += dt/dy E1, Ez[p] += dt/dy E2.
 * Plasma belongs in the total-field region (beyond the plane). */
#ifndef LASERS_H
#define LASERS_H

#include "kinds.h"
#include "emf.h"
#include "laser.h"

/* From the deck's laser; `layer` = cells of the PML on the launching side (0 for Mur). */
void laser_setup(laser_src *L, const struct deck_laser *cfg, const struct deck *d, int layer);
/* Lab time after which the laser has been fully injected. */
double laser_end_time(const laser_src *L, const struct deck *d);
/* Half-width of the beam's transverse profile at distance z from its focus: k w(z) for the
 * Gaussian (amplitude exp(-k^2) there), the same fall for the super-Gaussian, the end of the
 * edge for the flat-top. */
double laser_reach(const laser_beam *b, double k, double z);
/* The beam's footprint [lo, hi] on its source plane, in the transverse coordinate (y for
 * an x side, x for a y side): 2 w of the beam each side of where its axis crosses it, w the
 * beam's radius there (k = 2 in laser_reach; along the plane, / cos theta). */
void laser_footprint(const laser_src *L, const struct deck *d, double *lo, double *hi);

#endif
