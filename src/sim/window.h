/* window.h - the moving window along +x at c (design.md §7). Once the window has moved a whole
 * cell since the last shift, the fields (with the PML state) and the particles move one cell
 * toward -x: the first column's particles are dropped, the last column is refilled with fresh
 * plasma from the species profiles (species_column: the same RNG keying as the initial
 * load, by global cell), and the box origin x0 = cells * dx advances. */
#ifndef WINDOW_H
#define WINDOW_H

#include "kinds.h"

typedef struct {
    int enabled;
    double t_start;
    long cells;       /* cells moved since the start */
} window;

void window_init(window *w, const struct deck *d);
/* Whether the window is due to move one cell now that E is at t (window at c (t - t_start)). */
int window_due(const window *w, double t, double dx);

#endif
