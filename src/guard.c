/* guard.c - run-time sanity checks: non-finite fields or particles, lost particles. The scans
 * read the host arrays once (OpenMP), cheap next to a step, and never modify the state. */
#include "guard.h"
#include "empic.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const FIELD_NAME[9] = {"Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy", "Jz"};

int guard_fields(const emf *f, guard_hit *h)
{
    const float *a[9] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1],
                         f->b[2], f->j[0], f->j[1], f->j[2]};
    memset(h, 0, sizeof *h);
    for (int c = 0; c < 9; c++) {
        const float *o = a[c] + f->off;
        long first = LONG_MAX;
#pragma omp parallel for reduction(min : first)
        for (int j = 0; j < f->ny; j++)
            for (int i = 0; i < f->nx; i++)
                if (!isfinite(o[(long)j * f->stride + i])) {
                    long k = (long)j * f->nx + i;
                    first = k < first ? k : first;
                    break;
                }
        if (first != LONG_MAX) {
            h->found = 1;
            h->species = -1;
            h->i = (int)(first % f->nx);
            h->j = (int)(first / f->nx);
            h->value = o[(long)h->j * f->stride + h->i];
            snprintf(h->what, sizeof h->what, "%s", FIELD_NAME[c]);
            return 1;
        }
    }
    return 0;
}

/* First slot of cluster c whose momentum or offset is not finite, or -1. */
static long first_bad(const species *s, int c)
{
    for (long p = s->start[c]; p < (long)s->start[c] + s->count[c]; p++)
        if (!isfinite(s->ux[p]) || !isfinite(s->uy[p]) || !isfinite(s->uz[p]) ||
            !isfinite(s->x[p]) || !isfinite(s->y[p]))
            return p;
    return -1;
}

int guard_particles(const sim *S, guard_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        if (sp->cfg->immobile)
            continue;
        int first = INT_MAX;
#pragma omp parallel for schedule(dynamic, 4) reduction(min : first)
        for (int c = 0; c < S->cl.n; c++)
            if (c < first && first_bad(sp, c) >= 0)
                first = c;
        if (first == INT_MAX)
            continue;
        long p = first_bad(sp, first);
        const float v[5] = {sp->ux[p], sp->uy[p], sp->uz[p], sp->x[p], sp->y[p]};
        const char *name[5] = {"ux", "uy", "uz", "x offset", "y offset"};
        int q = 0;
        while (q < 4 && isfinite(v[q]))
            q++;
        h->found = 1;
        h->species = s;
        h->i = cell_i(sp->cell[p]);
        h->j = cell_j(sp->cell[p]);
        h->value = v[q];
        snprintf(h->what, sizeof h->what, "%s", name[q]);
        return 1;
    }
    return 0;
}

int guard_counts(const sim *S, guard_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        long long n = 0;
        int bad = 0, closed = 1;
        for (int k = 0; k < 4; k++)
            closed &= sp->cfg->bnd[k] == PBND_PERIODIC;
        for (int c = 0; c < S->cl.n; c++) {
            n += sp->count[c];
            bad |= sp->count[c] < 0 || sp->count[c] > sp->cap[c];
        }
        if ((closed && n != sp->np) || bad) {
            h->found = 1;
            h->species = s;
            h->have = n;
            h->want = sp->np;
            snprintf(h->what, sizeof h->what, "count");
            return 1;
        }
    }
    return 0;
}

int guard_check(const sim *S, guard_hit *h)
{
    guard_hit own;
    if (!h)
        h = &own;
    if (guard_fields(&S->f, h)) {
        empic_report(NULL, 0, "step %ld: field %s = %g at cell (i, j) = (%d, %d) is not finite; "
                     "the run has gone unstable (check dt against the Courant limit, dx against "
                     "the Debye length, and the deck's fields)",
                     S->step, h->what, h->value, h->i, h->j);
        return -1;
    }
    if (guard_particles(S, h)) {
        empic_report(NULL, 0, "step %ld: species %s: a particle in cell (i, j) = (%d, %d) has "
                     "%s = %g (not finite); the run has gone unstable",
                     S->step, S->sp[h->species].cfg->name, h->i, h->j, h->what, h->value);
        return -1;
    }
    if (guard_counts(S, h)) {
        empic_report(NULL, 0, "step %ld: species %s: the clusters hold %lld particles but the "
                     "species has %lld (particles lost or duplicated, or a cluster over its "
                     "capacity); this is a bug in empic, please report it with the deck",
                     S->step, S->sp[h->species].cfg->name, h->have, h->want);
        return -1;
    }
    return 0;
}
