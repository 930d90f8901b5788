/* insitu.h - diagnostics computed inside the run on either backend.
 *
 * Phase-space histograms and energy spectra (diagnostics.phasespace) are binned where the
 * particles live (the backend's phasespace function) and written as openPMD
 * meshes to OUTDIR/phasespace/ps%08T.h5, one mesh per histogram due at that step. Each
 * bin holds the charge density in phase space,
 *     h = q sum_p w_p dx dy / (bin volume)   (normalised units, docs/physics.md),
 * so that sum(h) times the bin volume is the species' charge in the range (q sum w dx dy).
 * Momenta are u = gamma v / c at t - dt/2, positions at t, like the particle dumps. */
#ifndef INSITU_H
#define INSITU_H

#include "phasespace.h"
#include "sim_state.h"

/* The binning of histogram e now: the deck's range where given, the box for x and y,
 * else the extent of the particles' values (padded by half a bin on either side). */
void insitu_grid(sim *S, const deck_phasespace *e, ps_grid *g);
/* Write the histograms due at S->step (every one with every > 0 when final: the end of
 * the run). 0, or -1 after reporting. */
int insitu_phasespace(sim *S, int final);

#endif
