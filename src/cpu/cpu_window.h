/* cpu_window.h - the moving window's shift on the CPU (sim/window.h says when it is due;
 * cuda/gpu_window.cu is the device's twin). */
#ifndef CPU_WINDOW_H
#define CPU_WINDOW_H

#include "emf.h"
#include "species.h"

/* The CPU backend's shift of the fields (with the PML state) and the particles' cells one
 * cell toward -x, after the E update and before the sort: a particle's migration code and its
 * cluster's histogram are updated so that the sort puts it into its new cluster; particles
 * leaving the back get PBND_DROP (walls_drop with window = 1 removes them). The caller counts
 * the cell (window.h: window.cells). */
/* lost[s * cl->n + c] += the energy (ebal.h) of species s's particles the back column drops
 * from cluster c. */
void window_shift(emf *f, species *sp, int nsp, const clusters *cl, double *lost);

#endif
