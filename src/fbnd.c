/* fbnd.c - CPML layers, Mur edges and laser sources around the Yee updates (fbnd.h). */
#include "fbnd.h"
#include "deck.h"
#include "comm.h"
#include "empic.h"
#include "pml.h"

#include <stdlib.h>
#include <string.h>

static void layer_init(pml_layer *L, const emf *f, int side, int n)
{
    const int axis = side / 2, hi = side & 1, N = axis ? f->ny : f->nx;
    const double delta = axis ? f->dy : f->dx;
    L->axis = axis;
    L->hi = hi;
    L->n = n;
    L->first = hi ? N - n : 0;
    L->len = axis ? f->nx : f->ny;
    L->eb = empic_alloc(4 * (size_t)n * sizeof(float), "PML coefficients");
    L->ec = L->eb + n;
    L->bb = L->eb + 2 * n;
    L->bc = L->eb + 3 * n;
    for (int l = 0; l < n; l++) {
        /* depth 0 at the inner edge, 1 at the box edge; B points half a cell further out */
        double de = hi ? (double)l / n : (double)(n - l) / n;
        double db = hi ? (l + 0.5) / n : (n - l - 0.5) / n;
        pml_coef(de, delta, f->dt, &L->eb[l], &L->ec[l]);
        pml_coef(db, delta, f->dt, &L->bb[l], &L->bc[l]);
    }
    for (int m = 0; m < 4; m++)
        L->psi[m] = empic_calloc((size_t)n * L->len, sizeof(float), "PML layer");
}

fbnd *fbnd_new(emf *f, const deck *d)
{
    int any = d->nlasers > 0;
    for (int k = 0; k < 4; k++)
        any |= d->fbnd[k] != FBND_PERIODIC;
    if (!any)
        return NULL;
    fbnd *b = empic_calloc(1, sizeof *b, "field boundaries");
    memcpy(b->bnd, d->fbnd, sizeof b->bnd);
    b->psi_step = -1;
    b->mur_m[0] = (float)((d->dt - d->dx) / (d->dt + d->dx));
    b->mur_m[1] = (float)((d->dt - d->dy) / (d->dt + d->dy));
    for (int k = 0; k < 4; k++) {
        const int axis = k / 2, hi = k & 1, N = axis ? f->ny : f->nx;
        if (d->fbnd[k] == FBND_PERIODIC)
            continue;
        /* Gauss's law is checked off the edge node and outside the layers */
        int depth = d->fbnd[k] == FBND_PML ? d->pml_cells : 1;
        if (hi)
            f->ghi[axis] = N - depth < f->ghi[axis] ? N - depth : f->ghi[axis];
        else
            f->glo[axis] = depth > f->glo[axis] ? depth : f->glo[axis];
        if (d->fbnd[k] == FBND_PML)
            layer_init(&b->layer[b->nlayers++], f, k, d->pml_cells);
        else
            b->mur_old[k] = empic_calloc(4 * (size_t)(axis ? f->nx : f->ny), sizeof(float),
                                         "Mur edge");
    }
    b->nlasers = d->nlasers;
    for (int l = 0; l < d->nlasers; l++) {
        laser_src *L = &b->lasers[l];
        int side = d->lasers[l].boundary;
        laser_setup(L, &d->lasers[l], d, d->fbnd[side] == FBND_PML ? d->pml_cells : 0);
        /* the plane's div E follows the incident field's, not the charge */
        if (L->sign > 0)
            f->glo[L->axis] = L->plane + 1 > f->glo[L->axis] ? L->plane + 1 : f->glo[L->axis];
        else
            f->ghi[L->axis] = L->plane < f->ghi[L->axis] ? L->plane : f->ghi[L->axis];
    }
    return b;
}

void fbnd_free(fbnd *b)
{
    if (!b)
        return;
    for (int l = 0; l < b->nlayers; l++) {
        free(b->layer[l].eb);
        for (int m = 0; m < 4; m++)
            free(b->layer[l].psi[m]);
    }
    for (int k = 0; k < 4; k++)
        free(b->mur_old[k]);
    free(b);
}

/* 1 when cell t of layer L (pml_e_cell's numbering) is this rank's. */
static int layer_owns(const emf *f, const pml_layer *L, int t)
{
    const pml_strip st = {L->axis, L->first, L->n, L->len};
    int i, j;
    pml_strip_cell(&st, t, &i, &j);
    return emf_owns(f, i, j);
}

/* The psi terms of every layer: after a half B step (e = 0; upd as pml_psi_due) or after
 * the E step (e = 1). */
static void pml_terms(emf *f, int e, int upd)
{
    const fbnd *b = f->fb;
    const int s = f->stride;
    const float h = (float)(0.5 * f->dt), dt = (float)f->dt;
    for (int n = 0; n < b->nlayers; n++) {
        const pml_layer *L = &b->layer[n];
        const pml_strip st = {L->axis, L->first, L->n, L->len};
        const float id = L->axis ? (float)(1.0 / f->dy) : (float)(1.0 / f->dx);
        float *const *ef = f->e, *const *bf = f->b;
#pragma omp parallel for
        for (int t = 0; t < L->n * L->len; t++) {
            if (!layer_owns(f, L, t))
                continue;
            if (e)
                pml_e_cell(&st, f->off, s, t, ef[0], ef[1], ef[2], bf[0], bf[1], bf[2], L->psi[0],
                           L->psi[1], L->eb, L->ec, id, dt);
            else
                pml_b_cell(&st, f->off, s, t, bf[0], bf[1], bf[2], ef[0], ef[1], ef[2], L->psi[2],
                           L->psi[3], L->bb, L->bc, id, h, upd);
        }
    }
}

void fbnd_b(emf *f)
{
    fbnd *b = f->fb;
    pml_terms(f, 0, pml_psi_due(&b->psi_step, f->step));
    for (int l = 0; l < b->nlasers; l++)
        laser_b(&b->lasers[l], f, b->shift);
}

/* The Mur sides: their old values kept before the E step (apply = 0), their edge nodes set
 * after it (apply = 1). */
static void mur_sides(emf *f, int apply)
{
    fbnd *b = f->fb;
    for (int k = 0; k < 4; k++) {
        if (!b->mur_old[k])
            continue;
        float *c1 = k / 2 ? f->e[0] : f->e[1], *c2 = f->e[2];
        const mur_line m = mur_line_of(k, f->nx, f->ny, f->off, f->stride);
        const int in = k & 1 ? (k / 2 ? f->ny : f->nx) - 1 : 1; /* the node inside the edge */
        for (int t = 0; t < m.len; t++)
            if (!(k / 2 ? emf_owns(f, t, in) : emf_owns(f, in, t)))
                continue;
            else if (apply)
                mur_apply(&m, t, c1, c2, b->mur_old[k], b->mur_m[k / 2]);
            else
                mur_save(&m, t, c1, c2, b->mur_old[k]);
    }
}

void fbnd_e_save(emf *f) { mur_sides(f, 0); }

void fbnd_e(emf *f)
{
    fbnd *b = f->fb;
    pml_terms(f, 1, 0);
    for (int l = 0; l < b->nlasers; l++)
        laser_e(&b->lasers[l], f, b->shift);
    mur_sides(f, 1);
}

/* Entries of psi array p of layer L in cell column i, rows [j0, j1), to buf (out) or from
 * it; returns how many. */
static size_t layer_column(const pml_layer *L, float *p, int i, int j0, int j1, float *buf,
                           int out)
{
    size_t n = 0;
    if (L->axis == 0 && (i < L->first || i >= L->first + L->n))
        return 0;
    for (int j = j0; j < j1; j++) {
        size_t k = L->axis == 0 ? (size_t)j * L->n + (size_t)(i - L->first)
                                : (j < L->first || j >= L->first + L->n)
                                      ? (size_t)-1
                                      : (size_t)(j - L->first) * L->len + (size_t)i;
        if (k == (size_t)-1)
            continue;
        if (out)
            buf[n++] = p[k];
        else
            p[k] = buf[n++];
    }
    return n;
}

void fbnd_shift(emf *f)
{
    fbnd *b = f->fb;
    for (int n = 0; n < b->nlayers; n++) {
        pml_layer *L = &b->layer[n];
        for (int m = 0; m < 4; m++) {
            float *p = L->psi[m];
            if (L->axis == 0) {
                for (int j = 0; j < L->len; j++) {
                    memmove(p + (size_t)j * L->n, p + (size_t)j * L->n + 1,
                            (size_t)(L->n - 1) * sizeof(float));
                    p[(size_t)j * L->n + L->n - 1] = 0.0f;
                }
            } else {
                for (int l = 0; l < L->n; l++) {
                    memmove(p + (size_t)l * L->len, p + (size_t)l * L->len + 1,
                            (size_t)(L->len - 1) * sizeof(float));
                    p[(size_t)l * L->len + L->len - 1] = 0.0f;
                }
            }
        }
    }
    fbnd_shift_exchange(f);
    b->shift++;
}

void fbnd_shift_exchange(emf *f)
{
    fbnd *b = f->fb;
    float *buf = empic_alloc(2 * (size_t)(f->ny + 1) * sizeof(float), "window exchange");
    const int left = f->nb[SIDE_XMIN], right = f->nb[SIDE_XMAX];
    for (int n = 0; n < b->nlayers; n++)
        for (int m = 0; m < 4; m++) {
            pml_layer *L = &b->layer[n];
            float *p = L->psi[m];
            /* this rank's last column takes the first column of the rank on the right (that
             * rank shifted it to column i0 - 1 of its copy) */
            size_t k = left >= 0 && f->i0 > 0
                           ? layer_column(L, p, f->i0 - 1, f->j0, f->j1, buf, 1)
                           : 0;
            size_t got = comm_sendrecv(buf, k * sizeof(float), left, buf + f->ny + 1,
                                       (size_t)(f->ny + 1) * sizeof(float), right, 30);
            if (got)
                layer_column(L, p, f->i1 - 1, f->j0, f->j1, buf + f->ny + 1, 0);
        }
    free(buf);
}
