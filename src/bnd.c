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

void bnd_cluster(species *s, const emf *f, const clusters *cl, int c)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx;
    pbnd_walls w;
    bnd_walls(s, cl, f, &w);
    const pbnd_edges e = pbnd_edges_of(&w, cx, cy);
    int *hist = s->hist + 9 * c;
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
        pbnd_fixup(&w, &e, cx, cy, cl->cx_of, cl->cy_of, f->step, &s->code[p], hist,
                   &s->cell[p], &s->x[p], &s->y[p], &s->ux[p], &s->uy[p], &s->uz[p]);
}

void bnd_tile(const species *s, const emf *f, const clusters *cl, int c, const cluster_tile *T,
              float *jx, float *jy, float *jz)
{
    pbnd_walls wl;
    bnd_walls(s, cl, f, &wl);
    pbnd_fold_tile(&wl, c % cl->ncx, c / cl->ncx, T, jx, jy, jz);
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
    const pbnd_drops d = pbnd_drops_of(s->bnd, window);
    if (!pbnd_drops_any(&d))
        return 0;
    long long n = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : n)
    for (int c = 0; c < cl->n; c++)
        if (pbnd_drops_at(&d, c % cl->ncx, c / cl->ncx, cl->ncx, cl->ncy))
            n += drop_cluster(s, c);
    return n;
}
