/* cpu_sort.h - Kong's incremental bi-cluster sort (design.md §6) on the CPU. */
#ifndef CPU_SORT_H
#define CPU_SORT_H

#include "species.h"

/* From the per-cluster migration histograms of the last move, the room each cluster needs
 * during the four passes; relayout first if any cluster would overflow. moves (NULL, or one
 * entry per cluster): which passes each cluster has movers for. */
void sort_prepare(species *s, const clusters *cl, unsigned char *moves);
/* Four passes (x pairs, shifted x pairs, y pairs, shifted y pairs): afterwards every particle
 * is in its cluster's segment and every code is 0. Returns the particles this rank sent to
 * others less those it received. */
long long sort_clusters(species *s, const clusters *cl);

#endif
