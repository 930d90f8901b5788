/* bnd.c - particle walls on the CPU (bnd.h, include/pbnd.h). */
#include "bnd.h"
#include "empic.h"
#include "particle.h"
#include "pbnd.h"

/* Particle p of cluster c after its move (mc = (dcx+1) + 3 (dcy+1)): the new mc, or -1 to
 * drop it. */
static int bnd_particle(species *s, const emf *f, const clusters *cl, int c, size_t p, int mc)
{
    const int *bnd = s->cfg->bnd, cx = c % cl->ncx, cy = c / cl->ncx;
    int d[2] = {mc % 3 - 1, mc / 3 - 1};
    int at[2] = {cell_i(s->cell[p]), cell_j(s->cell[p])};
    for (int axis = 0; axis < 2; axis++) {
        const int cc = axis ? cy : cx, ncc = axis ? cl->ncy : cl->ncx;
        const int lo = cc == 0 && d[axis] == -1, hi = cc == ncc - 1 && d[axis] == 1;
        const int type = (lo || hi) ? bnd[2 * axis + hi] : PBND_PERIODIC;
        if (type == PBND_PERIODIC)
            continue;
        if (type == PBND_ABSORBING)
            return -1;
        float *o = axis ? &s->y[p] : &s->x[p];
        at[axis] = lo ? pbnd_mirror_lo(o) : pbnd_mirror_hi(axis ? f->ny : f->nx, o);
        d[axis] = (axis ? cl->cy_of[at[1]] : cl->cx_of[at[0]]) - cc;
        if (type == PBND_REFLECTING) {
            float *un = axis ? &s->uy[p] : &s->ux[p];
            *un = -*un;
        } else {
            const float uth[3] = {(float)s->cfg->uth[0], (float)s->cfg->uth[1],
                                  (float)s->cfg->uth[2]};
            float u[3];
            rng_stream r;
            pbnd_rng(&r, s->seed, (unsigned)s->index, f->step, (unsigned)p, axis);
            pbnd_thermal(&r, uth, axis, lo ? 1.0f : -1.0f, u);
            s->ux[p] = u[0];
            s->uy[p] = u[1];
            s->uz[p] = u[2];
        }
    }
    s->cell[p] = cell_pack(at[0], at[1]);
    return (d[0] + 1) + 3 * (d[1] + 1);
}

void bnd_cluster(species *s, const emf *f, const clusters *cl, int c)
{
    const int *b = s->cfg->bnd, cx = c % cl->ncx, cy = c / cl->ncx;
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

/* Fold line `g` (beyond the wall) of the tile into the interior lines: the normal component
 * n (stride-1 x or row y) into line `gn` negated, the tangential ones into line `gt`;
 * absorbing: just clear. Lines are columns (axis 0) or rows (axis 1). */
static void fold_line(float *nrm, float *t1, float *t2, int axis, int len, int ts, int gn_from,
                      int gn_to, int gt_from, int gt_to, int keep)
{
    for (int r = 0; r < len; r++) {
        int a = axis ? r : r * ts, step = axis ? ts : 1;
        float *pn = nrm + a, *p1 = t1 + a, *p2 = t2 + a;
        if (keep) {
            pn[gn_to * step] -= pn[gn_from * step];
            p1[gt_to * step] += p1[gt_from * step];
            p2[gt_to * step] += p2[gt_from * step];
        }
        pn[gn_from * step] = 0.0f;
        p1[gt_from * step] = 0.0f;
        p2[gt_from * step] = 0.0f;
    }
}

void bnd_tile(const species *s, const emf *f, const clusters *cl, int c, int i0, int j0,
              int w, int h, int ts, float *jx, float *jy, float *jz)
{
    const int *bnd = s->cfg->bnd, cx = c % cl->ncx, cy = c / cl->ncx;
    /* low wall at tile line 0 - i0 (= 1): normal J at line 0 -> line 1 negated (the half
     * points -1/2 -> +1/2), tangential J at node -1 (line 0) -> node +1 (line 2). High wall
     * at node n, line L = n - i0: normal J at L (n+1/2) -> L-1, tangential L+1 -> L-1. */
    if (cx == 0 && bnd[SIDE_XMIN])
        fold_line(jx, jy, jz, 0, h, ts, -i0 - 1, -i0, -i0 - 1, -i0 + 1,
                  bnd[SIDE_XMIN] != PBND_ABSORBING);
    if (cx == cl->ncx - 1 && bnd[SIDE_XMAX]) {
        int L = f->nx - i0;
        fold_line(jx, jy, jz, 0, h, ts, L, L - 1, L + 1, L - 1, bnd[SIDE_XMAX] != PBND_ABSORBING);
    }
    if (cy == 0 && bnd[SIDE_YMIN])
        fold_line(jy, jx, jz, 1, w, ts, -j0 - 1, -j0, -j0 - 1, -j0 + 1,
                  bnd[SIDE_YMIN] != PBND_ABSORBING);
    if (cy == cl->ncy - 1 && bnd[SIDE_YMAX]) {
        int L = f->ny - j0;
        fold_line(jy, jx, jz, 1, w, ts, L, L - 1, L + 1, L - 1, bnd[SIDE_YMAX] != PBND_ABSORBING);
    }
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
    const int *b = s->cfg->bnd;
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
    s->np -= n;
    return n;
}
