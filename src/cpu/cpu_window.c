/* cpu_window.c - the moving window's shift on the CPU (cpu_window.h). */
#include "cpu_window.h"
#include "deck.h"
#include "empic.h"
#include "cpu_fbnd.h"
#include "particle.h"
#include "ebal.h"
#include "pbnd.h"

#include <string.h>

/* Every stored row (guard rows too): this rank's columns and the guards above take the
 * column to their right, the last is cleared; the guards below stay as they are (zero at
 * a non-periodic side; the neighbour's refill them: window_shift). */
static void shift_array(const emf *f, float *a)
{
    const int G = EMF_GUARD, w = f->i1 - f->i0;
#pragma omp parallel for
    for (int r = 0; r < f->rows; r++) {
        float *row = a + (size_t)r * f->stride + G;
        memmove(row, row + 1, (size_t)(w + G - 1) * sizeof(float));
        row[w + G - 1] = 0.0f;
    }
}

/* Every particle one cell toward -x (window_shift_particle); then the cluster's histogram
 * of codes (four interleaved counters, so the counts do not wait on each other). */
static void shift_particles(species *s, const clusters *cl, double *lost)
{
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++) {
        const int cx = c % cl->ncx, xlo = cl->x0[cx];
        const int b = s->start[c], e = b + s->count[c];
        if (cx == 0) { /* the back column's particles: their energy leaves with them */
            double v = 0.0;
            for (int p = b; p < e; p++)
                if (ebal_window_drops(cell_i(s->cell[p]), s->code[p]))
                    v += ebal_particle(s->w[p], s->ux[p], s->uy[p], s->uz[p]);
            lost[c] += v;
        }
        uint32_t *restrict cell = s->cell;
        uint8_t *restrict code = s->code;
#pragma omp simd
        for (int p = b; p < e; p++)
            code[p] = (uint8_t)window_shift_particle(&cell[p], code[p], xlo);
        int h[4][16] = {{0}}, *hist = s->hist + 9 * c, p = b;
        for (; p + 4 <= e; p += 4) {
            h[0][code[p]]++;
            h[1][code[p + 1]]++;
            h[2][code[p + 2]]++;
            h[3][code[p + 3]]++;
        }
        for (; p < e; p++)
            h[0][code[p]]++;
        memset(hist, 0, 9 * sizeof(int));
        for (unsigned k = 0; k < 16; k++) {
            int n = h[0][k] + h[1][k] + h[2][k] + h[3][k];
            if (n)
                hist[mig_bin_of_code(k)] += n;
        }
    }
}

void window_shift(emf *f, species *sp, int nsp, const clusters *cl, double *lost)
{
    /* J's right guards hold this rank's own deposit there, not the neighbour's current, until
     * filled: the column they move into is dumped (as on one rank) */
    if (cl->nrx > 1)
        for (int c = 0; c < 3; c++)
            emf_guard_fill(f, f->j[c]);
    for (int c = 0; c < 3; c++) {
        shift_array(f, f->e[c]);
        shift_array(f, f->b[c]);
        shift_array(f, f->j[c]);
    }
    for (int c = 0; c < 3; c++) { /* columns that came from the rank on the right */
        emf_guard_fill(f, f->e[c]);
        emf_guard_fill(f, f->b[c]);
    }
    if (f->fb)
        fbnd_shift(f);
    for (int s = 0; s < nsp; s++)
        shift_particles(&sp[s], cl, lost + (size_t)s * cl->n);
}
