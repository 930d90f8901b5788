/* report.h - what a run tells its user: run.cfg, energy.csv, progress line, timing table
 * and timing.json. */
#ifndef REPORT_H
#define REPORT_H

#include "sim_state.h"

/* Create the output folder, write run.cfg, open energy.csv (its only writer). A run
 * restarted at S->step keeps the energy.csv rows before that step, from its output folder or
 * else from resume_dir (the run it continues; NULL for none). 0 or -1 after reporting. */
int report_open(sim *S, const char *resume_dir);
/* The energy balance's terms of a row (docs/output.md): the field energy outside the
 * balance region, the stagger term (ebal.h), the laser energy in, the field energy out per side (enum deck_side) and
 * the particle energy the walls and the window took out per species, all cumulative. */
typedef struct {
    double layers, stagger, in, out[4], lost[DECK_MAX_SPECIES];
} ebal_row;

void report_energy_row(sim *S, double fe, double fb, const double *kin, double gauss,
                       const ionize_stats *ist, const ebal_row *bal);
/* Progress line on a terminal (throttled); final = 1 ends it. */
void report_progress(sim *S, int final);
/* Close energy.csv, write timing.json, print the per-phase table. 0 or -1. */
int report_close(sim *S);

/* The SI scales of the deck's n0 as comments (ω_p, c/ω_p, E0, the box and time step, and
 * per laser λ0, the critical density, the peak field and the intensity), for --check. */
void report_scales(const deck *d, FILE *o);

#endif
