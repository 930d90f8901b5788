/* cpu_collide.c - binary Coulomb collisions on the CPU (the twin of cuda/gpu_collide.cu):
 * per cluster, the particles of each cell indexed by a stable counting sort of the segment
 * (a particle's rank in its cell follows the cluster order, never the thread count), then per
 * cell the shuffles, the cell's moments and the pairs of include/collide.h. */
#include "cpu_collide.h"
#include "collide.h"
#include "empic.h"

#include <stdlib.h>
#include <string.h>

/* Thread-local index of one species in one cluster: off[k]..off[k+1] are the positions in ix
 * of the slots of tile cell k (row stride w). */
typedef struct {
    int *off, *ix;
    int ncell, nix;
} cell_index;

static void index_grow(cell_index *x, int ncell, int n)
{
    if (ncell + 1 > x->ncell) {
        free(x->off);
        x->off = empic_alloc((size_t)(ncell + 1) * sizeof(int), "collision index");
        x->ncell = ncell + 1;
    }
    if (n > x->nix) {
        free(x->ix);
        x->ix = empic_alloc((size_t)n * sizeof(int), "collision index");
        x->nix = n;
    }
}

/* The slots of species s in cluster c by cell of t's cells [xlo, xhi) x [ylo, yhi). */
static void index_cells(const species *s, int c, const cluster_tile *t, cell_index *x)
{
    const int w = t->xhi - t->xlo, ncell = w * (t->yhi - t->ylo), n = s->count[c];
    const size_t st = (size_t)s->start[c];
    index_grow(x, ncell, n);
    memset(x->off, 0, (size_t)(ncell + 1) * sizeof(int));
    for (int k = 0; k < n; k++) {
        uint32_t cv = s->cell[st + k];
        x->off[cell_i(cv) - t->xlo + (cell_j(cv) - t->ylo) * w + 1]++;
    }
    for (int k = 0; k < ncell; k++)
        x->off[k + 1] += x->off[k];
    for (int k = 0; k < n; k++) { /* off[k] walks cell k's range, then is restored below */
        uint32_t cv = s->cell[st + k];
        x->ix[x->off[cell_i(cv) - t->xlo + (cell_j(cv) - t->ylo) * w]++] = (int)(st + k);
    }
    for (int k = ncell; k > 0; k--)
        x->off[k] = x->off[k - 1];
    x->off[0] = 0;
}

static collide_moments moments(const species *s, const int *ix, int n)
{
    collide_moments m = {0.0, 0.0, 0};
    for (int k = 0; k < n; k++)
        collide_moments_add(&m, (float)s->m, s->w[ix[k]], s->ux[ix[k]], s->uy[ix[k]],
                            s->uz[ix[k]]);
    return m;
}

/* The pairs of global cell (i, j): na particles of a at ia, nb of b at ib (intra: ib = ia). */
static void collide_cell_pairs(species *a, species *b, int *ia, int na, int *ib, int nb,
                               int i, int j, const collide_par *p)
{
    const int intra = a == b, np = collide_npairs(na, nb, intra);
    if (!np)
        return;
    rng_stream r;
    collide_rng(&r, p, i, j, COLLIDE_SHUFFLE);
    collide_shuffle(ia, na, &r);
    if (!intra) {
        collide_rng(&r, p, i, j, COLLIDE_SHUFFLE + 1);
        collide_shuffle(ib, nb, &r);
    }
    collide_moments ma = moments(a, ia, na), mb = intra ? ma : moments(b, ib, nb);
    collide_cell cc = collide_cell_of(p, &ma, &mb, a->q, b->q, a->m, b->m, intra);
    for (int k = 0; k < np; k++) {
        int pi, pj;
        double share = collide_pair_of(k, na, nb, intra, &pi, &pj);
        const int s1 = ia[pi], s2 = ib[pj];
        float u1[3] = {a->ux[s1], a->uy[s1], a->uz[s1]}, u2[3] = {b->ux[s2], b->uy[s2], b->uz[s2]};
        const float w1 = a->w[s1], w2 = b->w[s2];
        collide_rng(&r, p, i, j, (unsigned)k);
        collide_pair(u1, u2, (float)a->m, (float)b->m, (float)(a->q * b->q), w1, w2,
                     (float)(share * (w1 > w2 ? w1 : w2) * cc.nmin), p, &cc, &r);
        a->ux[s1] = u1[0], a->uy[s1] = u1[1], a->uz[s1] = u1[2];
        b->ux[s2] = u2[0], b->uy[s2] = u2[1], b->uz[s2] = u2[2];
    }
}

/* Every cell of cluster c. */
static void collide_cluster(species *a, species *b, const clusters *cl, int c,
                            cell_index *xa, cell_index *xb, const collide_par *p)
{
    const cluster_tile t = cluster_tile_of(cl->x0, cl->y0, cl->ncx, c);
    const int w = t.xhi - t.xlo, ncell = w * (t.yhi - t.ylo);
    index_cells(a, c, &t, xa);
    if (b != a)
        index_cells(b, c, &t, xb);
    const cell_index *ib = b != a ? xb : xa;
    for (int k = 0; k < ncell; k++)
        collide_cell_pairs(a, b, xa->ix + xa->off[k], xa->off[k + 1] - xa->off[k],
                           ib->ix + ib->off[k], ib->off[k + 1] - ib->off[k], t.xlo + k % w,
                           t.ylo + k / w, p);
}

void cpu_collide(void *ctx, pic_state *st, const struct collide_par *p)
{
    (void)ctx;
    species *a = &st->sp[p->a], *b = &st->sp[p->b];
    const clusters *cl = st->cl;
#pragma omp parallel
    {
        cell_index xa = {0}, xb = {0};
#pragma omp for schedule(dynamic, 1)
        for (int c = 0; c < cl->n; c++)
            if (cl->own[c])
                collide_cluster(a, b, cl, c, &xa, &xb, p);
        free(xa.off), free(xa.ix), free(xb.off), free(xb.ix);
    }
}
