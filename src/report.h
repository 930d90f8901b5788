/* report.h - what a run tells its user: run.cfg, energy.csv, progress line, timing table
 * and timing.json. */
#ifndef REPORT_H
#define REPORT_H

#include "sim.h"

void report_cpu_name(char *name, size_t len);
/* Create the output folder, write run.cfg, open energy.csv. 0 or -1 after reporting. */
int report_open(sim *S);
void report_energy_row(sim *S, double fe, double fb, const double *kin, double gauss);
/* Progress line on a terminal (throttled); final = 1 ends it. */
void report_progress(sim *S, int final);
/* Close energy.csv, write timing.json, print the per-phase table. 0 or -1. */
int report_close(sim *S);

#endif
