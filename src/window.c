/* window.c - the moving window (window.h) on the CPU. */
#include "window.h"
#include "empic.h"
#include "fbnd.h"
#include "particle.h"
#include "pbnd.h"

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

/* Every row (guard rows too): columns [0, nx] take columns [1, nx+1], the last is cleared;
 * the guards below x = 0 stay as they are (zero at a non-periodic side). */
static void shift_array(const emf *f, float *a)
{
    const int G = EMF_GUARD;
#pragma omp parallel for
    for (int r = 0; r < f->rows; r++) {
        float *row = a + (size_t)r * f->stride + G;
        memmove(row, row + 1, (size_t)(f->nx + G - 1) * sizeof(float));
        row[f->nx + G - 1] = 0.0f;
    }
}

static void shift_particles(species *s, const clusters *cl)
{
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++) {
        const int cx = c % cl->ncx;
        int *hist = s->hist + 9 * c;
        memset(hist, 0, 9 * sizeof(int));
        for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
            unsigned code = s->code[p];
            int i = cell_i(s->cell[p]) - 1, j = cell_j(s->cell[p]);
            if (code == PBND_DROP || i < 0) {
                s->code[p] = (uint8_t)PBND_DROP;
                hist[4]++;
                continue;
            }
            int dx = cl->cx_of[i] - cx, dy = mig_dy(code);
            s->cell[p] = cell_pack(i, j);
            s->code[p] = (uint8_t)mig_code(dx, dy);
            hist[(dx + 1) + 3 * (dy + 1)]++;
        }
    }
}

void window_shift(window *w, emf *f, species *sp, int nsp, const clusters *cl)
{
    for (int c = 0; c < 3; c++) {
        shift_array(f, f->e[c]);
        shift_array(f, f->b[c]);
        shift_array(f, f->j[c]);
    }
    if (f->fb)
        fbnd_shift(f);
    for (int s = 0; s < nsp; s++)
        shift_particles(&sp[s], cl);
    w->cells++;
}

void window_inject(const window *w, species *sp, int nsp, const deck *d, const clusters *cl)
{
    for (int s = 0; s < nsp; s++)
        species_inject_column(&sp[s], d, cl, d->nx - 1, d->nx - 1 + w->cells);
}
