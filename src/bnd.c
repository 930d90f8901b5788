/* bnd.c - particle walls on the CPU (bnd.h, include/pbnd.h). */
#include "bnd.h"
#include "deck.h"
#include "empic.h"
#include "particle.h"
#include "pbnd.h"

void bnd_walls(const species *s, const clusters *cl, const emf *f, pbnd_walls *w)
{
    for (int k = 0; k < 4; k++)
        w->bnd[k] = s->bnd[k];
    w->ncx = cl->ncx;
    w->ncy = cl->ncy;
    w->nx = f->nx;
    w->ny = f->ny;
    for (int k = 0; k < 3; k++)
        w->uth[k] = (float)s->cfg->uth[k];
    w->seed = s->seed;
    w->species = (unsigned)s->index;
}

/* Particle p of cluster c after its move (mc = (dcx+1) + 3 (dcy+1)): the new mc, or -1 to
 * drop it. */
static int bnd_particle(species *s, const emf *f, const clusters *cl, int c, size_t p, int mc)
{
    pbnd_walls w;
    bnd_walls(s, cl, f, &w);
    return pbnd_particle(&w, c % cl->ncx, c / cl->ncx, cl->cx_of, cl->cy_of, f->step, mc,
                         &s->cell[p], &s->x[p], &s->y[p], &s->ux[p], &s->uy[p], &s->uz[p]);
}

void bnd_cluster(species *s, const emf *f, const clusters *cl, int c)
{
    const int *b = s->bnd, cx = c % cl->ncx, cy = c / cl->ncx;
    /* the code values that leave the grid through a non-periodic side */
    const int xl = cx == 0 && b[SIDE_XMIN], xh = cx == cl->ncx - 1 && b[SIDE_XMAX];
    const int yl = cy == 0 && b[SIDE_YMIN], yh = cy == cl->ncy - 1 && b[SIDE_YMAX];
    int *hist = s->hist + 9 * c;
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
        unsigned code = s->code[p];
        int dx = mig_dx(code), dy = mig_dy(code);
        if (!((xl && dx < 0) || (xh && dx > 0) || (yl && dy < 0) || (yh && dy > 0)))
            continue;
        int mc = (dx + 1) + 3 * (dy + 1), m = bnd_particle(s, f, cl, c, (size_t)p, mc);
        hist[mc]--;
        hist[m < 0 ? 4 : m]++;
        s->code[p] = m < 0 ? (uint8_t)PBND_DROP : (uint8_t)mig_code(m % 3 - 1, m / 3 - 1);
    }
}

void bnd_tile(const species *s, const emf *f, const clusters *cl, int c, int i0, int j0,
              int w, int h, int ts, float *jx, float *jy, float *jz)
{
    pbnd_walls wl;
    bnd_walls(s, cl, f, &wl);
    pbnd_fold_tile(&wl, c % cl->ncx, c / cl->ncx, i0, j0, w, h, ts, jx, jy, jz);
}

/* Drop the marked particles of cluster c (holes filled from the segment's end). */
static int drop_cluster(species *s, int c)
{
    int i = s->start[c], end = s->start[c] + s->count[c];
    while (i < end) {
        if (s->code[i] == PBND_DROP) {
            end--;
            if (i != end)
                species_copy(s, (size_t)i, (size_t)end);
        } else {
            i++;
        }
    }
    int n = s->start[c] + s->count[c] - end;
    s->count[c] = end - s->start[c];
    return n;
}

long long bnd_drop(species *s, const clusters *cl, int window)
{
    const int *b = s->bnd;
    const int lo_x = b[SIDE_XMIN] == PBND_ABSORBING || window,
              hi_x = b[SIDE_XMAX] == PBND_ABSORBING, lo_y = b[SIDE_YMIN] == PBND_ABSORBING,
              hi_y = b[SIDE_YMAX] == PBND_ABSORBING;
    if (!(lo_x || hi_x || lo_y || hi_y))
        return 0;
    long long n = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : n)
    for (int c = 0; c < cl->n; c++) {
        int cx = c % cl->ncx, cy = c / cl->ncx;
        if ((lo_x && cx == 0) || (hi_x && cx == cl->ncx - 1) || (lo_y && cy == 0) ||
            (hi_y && cy == cl->ncy - 1))
            n += drop_cluster(s, c);
    }
    return n;
}
