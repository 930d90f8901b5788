/* cpu_walls.c - particle walls on the CPU (cpu_walls.h, include/pbnd.h). */
#include "cpu_walls.h"
#include "deck.h"
#include "empic.h"
#include "particle.h"
#include "ebal.h"
#include "pbnd.h"

void walls_cluster(species *s, const emf *f, const clusters *cl, int c, double *lost)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx;
    pbnd_walls w;
    species_walls(s, cl, f->nx, f->ny, &w);
    const pbnd_edges e = pbnd_edges_of(&w, cx, cy);
    int *hist = s->hist + 9 * c;
    double v = 0.0; /* the energy the walls took, in particle order (a particle that
                       crossed no wall takes none) */
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
        const unsigned c0 = s->code[p];
        if (!pbnd_crossed(&e, c0))
            continue;
        const float ux = s->ux[p], uy = s->uy[p], uz = s->uz[p];
        pbnd_fixup(&w, &e, cx, cy, cl->cx_of, cl->cy_of, f->step, &s->code[p], hist,
                   &s->cell[p], &s->x[p], &s->y[p], &s->ux[p], &s->uy[p], &s->uz[p]);
        v += ebal_wall(c0, s->code[p], s->w[p], ux, uy, uz, s->ux[p], s->uy[p], s->uz[p]);
    }
    *lost += v;
}

void walls_tile(const species *s, const emf *f, const clusters *cl, int c, const cluster_tile *T,
              float *jx, float *jy, float *jz)
{
    pbnd_walls wl;
    species_walls(s, cl, f->nx, f->ny, &wl);
    for (int side = SIDE_XMIN; side <= SIDE_YMAX; side++)
        pbnd_fold_side(&wl, side, c % cl->ncx, c / cl->ncx, T, jx, jy, jz, 0, 1);
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

long long walls_drop(species *s, const clusters *cl, int window)
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
