/* cpu_ionize.h - field ionization on the CPU (rules in include/ionize.h, design.md §14). */
#ifndef CPU_IONIZE_H
#define CPU_IONIZE_H

#include "emf.h"
#include "extfield.h"
#include "ionize.h"
#include "species.h"

/* Ionize the particles of s (s->ion) in the field E (with the external E of ext) at step
 * `step` (E(step) and x(step): after the sort) and append the electrons to species e in
 * each ion's cluster, in the ions' slot order; window_cells: the global column of cell
 * column 0; sums: the stats' sums of w z and w wanted (an energy row). */
ionize_stats ionize_species(species *s, species *e, const emf *f, const clusters *cl,
                            const ext_fields *ext, long long step, long window_cells, int sums);

#endif
