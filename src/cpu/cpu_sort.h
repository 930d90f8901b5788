/* cpu_sort.h - Kong's incremental bi-cluster sort (design.md §6) on the CPU. */
#ifndef CPU_SORT_H
#define CPU_SORT_H

#include "species.h"

/* From the per-cluster migration histograms of the last move, the room each cluster needs
 * during the four passes; relayout first if any cluster would overflow. */
void sort_prepare(species *s, const clusters *cl);
/* Several ranks: into h (every cluster's 9-bin histogram, this rank's filled) the histograms
 * of the ring of clusters around this rank's share, corners included, from the ranks that
 * hold them: all that sort_need reads for this rank's clusters, and what tells each rank
 * how many leavers its neighbours send across a border. */
void sort_hist_halo(const clusters *cl, int *h);
/* Four passes (x pairs, shifted x pairs, y pairs, shifted y pairs): afterwards every particle
 * is in its cluster's segment and every code is 0. Returns the particles this rank sent to
 * others less those it received. */
long long sort_clusters(species *s, const clusters *cl);

#endif
