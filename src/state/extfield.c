/* extfield.c - the external fields' values at each step (extfield.h). */
#include "extfield.h"
#include "empic.h"
#include "yee.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

int extfield_present(const deck *d, int b)
{
    for (int m = 3 * b; m < 3 * b + 3; m++) {
        double v;
        if (!formula_number(d->ext[m], &v) || v != 0.0)
            return 1;
    }
    return 0;
}

/* A formula the deck checked. */
static formula *parse(const char *expr, int m)
{
    char err[256];
    formula *f = formula_new(expr, 1, err, sizeof err);
    if (!f)
        EMPIC_DIE("external field %c%c: %s", "EB"[m / 3], "xyz"[m % 3], err);
    return f;
}

int extfield_arrays(const deck *d)
{
    int n = 0;
    for (int m = 0; m < 6; m++) {
        formula *f = formula_new(d->ext[m], 1, NULL, 0);
        n += f && (formula_vars(f) & (FORMULA_X | FORMULA_Y));
        formula_free(f);
    }
    return n;
}

void extfield_init(extfield *x, const deck *d, const emf *f, ext_fields *out)
{
    memset(x, 0, sizeof *x);
    memset(out, 0, sizeof *out);
    x->grid = f;
    x->step = x->cells = -1;
    x->nthreads = omp_get_max_threads();
    x->f = empic_calloc((size_t)x->nthreads * 6, sizeof(formula *), "external fields");
    int arrays = 0;
    for (int m = 0; m < 6; m++) {
        double v;
        if (formula_number(d->ext[m], &v)) {
            x->value[m] = (float)v;
        } else {
            formula *p = parse(d->ext[m], m);
            x->vars[m] = formula_vars(p);
            if (!x->vars[m])
                x->value[m] = (float)formula_eval_t(p, 0.0, 0.0, 0.0);
            formula_free(p);
        }
        for (int k = 0; x->vars[m] && k < x->nthreads; k++)
            x->f[k * 6 + m] = parse(d->ext[m], m);
        arrays += (x->vars[m] & (FORMULA_X | FORMULA_Y)) != 0;
        out->u[m] = x->value[m];
    }
    if (arrays)
        x->store = empic_alloc((size_t)arrays * f->size * sizeof(float), "external fields");
    for (int m = 0, n = 0; m < 6; m++)
        if (x->vars[m] & (FORMULA_X | FORMULA_Y))
            out->a[m] = x->store + (size_t)n++ * f->size;
}

/* Component m at its Yee points of local columns [c0, c1) of every row (guards included),
 * at time t with the box origin at `cells`: (i + cells + hx/2) dx, (j + hy/2) dy for the
 * global cell (i, j), a periodic axis' guards at their image. */
static void eval_columns(extfield *x, int m, float *a, int c0, int c1, double t, long cells)
{
    const emf *f = x->grid;
    const int G = EMF_GUARD, px = f->bnd[SIDE_XMIN] == FBND_PERIODIC;
    const int py = f->bnd[SIDE_YMIN] == FBND_PERIODIC;
    const double hx = 0.5 * yee_hx(m), hy = 0.5 * yee_hy(m);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < f->rows; r++) {
        formula *p = x->f[omp_get_thread_num() * 6 + m];
        const int j = r + f->j0 - G;
        const double y = ((py ? wrap_index(j, f->ny) : j) + hy) * f->dy;
        for (int c = c0; c < c1; c++) {
            const int i = c + f->i0 - G;
            const long ig = (px ? wrap_index(i, f->nx) : i) + cells;
            a[emf_idx(f, i, j)] = (float)formula_eval_t(p, ((double)ig + hx) * f->dx, y, t);
        }
    }
}

int extfield_update(extfield *x, long step, long cells, ext_fields *out)
{
    const emf *f = x->grid;
    const double t = (double)step * f->dt;
    int changed = 0;
    for (int m = 0; m < 6; m++) {
        const int v = x->vars[m];
        if (!(v & FORMULA_T) && !(v & FORMULA_X && cells != x->cells) && x->step >= 0)
            continue; /* nothing it reads changed */
        if (!(v & (FORMULA_X | FORMULA_Y))) {
            if (v) /* a formula in t alone */
                out->u[m] = (float)formula_eval_t(x->f[m], 0.0, 0.0, t);
            continue;
        }
        float *a = (float *)out->a[m];
        if (!(v & FORMULA_T) && x->step >= 0 && cells == x->cells + 1) {
            /* the moving window's shift: every column one to the left, the last evaluated */
            for (int r = 0; r < f->rows; r++) {
                float *row = a + (size_t)r * f->stride;
                memmove(row, row + 1, (size_t)(f->stride - 1) * sizeof(float));
            }
            eval_columns(x, m, a, f->stride - 1, f->stride, t, cells);
        } else {
            eval_columns(x, m, a, 0, f->stride, t, cells);
        }
        changed = 1;
    }
    x->step = step;
    x->cells = cells;
    return changed;
}

void extfield_fill(const ext_fields *e, const emf *f, float *dst)
{
    for (int m = 0; m < 6; m++) {
        float *d = dst + (size_t)m * f->size;
        if (e->a[m]) {
            memcpy(d, e->a[m], f->size * sizeof(float));
            continue;
        }
        for (size_t k = 0; k < f->size; k++)
            d[k] = e->u[m];
    }
}

void extfield_free(extfield *x)
{
    for (int k = 0; x->f && k < 6 * x->nthreads; k++)
        formula_free(x->f[k]);
    free(x->f);
    free(x->store);
    memset(x, 0, sizeof *x);
}
