/* window.c - when the moving window moves (window.h). */
#include "window.h"
#include "deck.h"

#include <string.h>

void window_init(window *w, const deck *d)
{
    memset(w, 0, sizeof *w);
    w->enabled = d->window_enabled;
    w->t_start = d->window_t_start;
}

int window_due(const window *w, double t, double dx)
{
    return w->enabled && t - w->t_start >= (w->cells + 1) * dx * (1.0 - 1e-12);
}
