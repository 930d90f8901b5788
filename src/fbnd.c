/* fbnd.c - CPML layers, Mur edges and laser sources around the Yee updates (fbnd.h). */
#include "fbnd.h"
#include "deck.h"
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

void fbnd_b(emf *f)
{
    fbnd *b = f->fb;
    const int s = f->stride, upd = b->psi_step != f->step; /* first half step with E(n) */
    b->psi_step = f->step;
    const float h = (float)(0.5 * f->dt), idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int n = 0; n < b->nlayers; n++) {
        pml_layer *L = &b->layer[n];
        if (L->axis == 0) {
#pragma omp parallel for
            for (int j = 0; j < f->ny; j++)
                for (int l = 0; l < L->n; l++)
                    pml_b_x(f->b[1], f->b[2], f->e[1], f->e[2], emf_idx(f, L->first + l, j),
                            L->psi[2], L->psi[3], j * L->n + l, L->bb[l], L->bc[l], idx, h, upd);
        } else {
#pragma omp parallel for
            for (int l = 0; l < L->n; l++)
                for (int i = 0; i < f->nx; i++)
                    pml_b_y(f->b[0], f->b[2], f->e[0], f->e[2], emf_idx(f, i, L->first + l), s,
                            L->psi[2], L->psi[3], l * L->len + i, L->bb[l], L->bc[l], idy, h,
                            upd);
        }
    }
    for (int l = 0; l < b->nlasers; l++)
        laser_b(&b->lasers[l], f, b->shift);
}

/* The two tangential E components of a Mur side and the node index of its edge and of the
 * node inside, along the side's axis. */
static void mur_side(const emf *f, int k, float **c1, float **c2, int *edge, int *in)
{
    const int axis = k / 2, N = axis ? f->ny : f->nx;
    *c1 = axis ? f->e[0] : f->e[1];
    *c2 = f->e[2];
    *edge = (k & 1) ? N : 0;
    *in = (k & 1) ? N - 1 : 1;
}

static inline int side_idx(const emf *f, int axis, int a, int t)
{
    return axis ? emf_idx(f, t, a) : emf_idx(f, a, t);
}

void fbnd_e_save(emf *f)
{
    fbnd *b = f->fb;
    for (int k = 0; k < 4; k++) {
        if (!b->mur_old[k])
            continue;
        float *c1, *c2, *o = b->mur_old[k];
        int edge, in, axis = k / 2, len = axis ? f->nx : f->ny;
        mur_side(f, k, &c1, &c2, &edge, &in);
        for (int t = 0; t < len; t++) {
            int ke = side_idx(f, axis, edge, t), ki = side_idx(f, axis, in, t);
            o[t] = c1[ke];
            o[len + t] = c1[ki];
            o[2 * len + t] = c2[ke];
            o[3 * len + t] = c2[ki];
        }
    }
}

void fbnd_e(emf *f)
{
    fbnd *b = f->fb;
    const int s = f->stride;
    const float dt = (float)f->dt, idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    for (int n = 0; n < b->nlayers; n++) {
        pml_layer *L = &b->layer[n];
        if (L->axis == 0) {
#pragma omp parallel for
            for (int j = 0; j < f->ny; j++)
                for (int l = 0; l < L->n; l++)
                    pml_e_x(f->e[1], f->e[2], f->b[1], f->b[2], emf_idx(f, L->first + l, j),
                            L->psi[0], L->psi[1], j * L->n + l, L->eb[l], L->ec[l], idx, dt);
        } else {
#pragma omp parallel for
            for (int l = 0; l < L->n; l++)
                for (int i = 0; i < f->nx; i++)
                    pml_e_y(f->e[0], f->e[2], f->b[0], f->b[2], emf_idx(f, i, L->first + l), s,
                            L->psi[0], L->psi[1], l * L->len + i, L->eb[l], L->ec[l], idy, dt);
        }
    }
    for (int l = 0; l < b->nlasers; l++)
        laser_e(&b->lasers[l], f, b->shift);
    for (int k = 0; k < 4; k++) {
        if (!b->mur_old[k])
            continue;
        float *c1, *c2, *o = b->mur_old[k], m = b->mur_m[k / 2];
        int edge, in, axis = k / 2, len = axis ? f->nx : f->ny;
        mur_side(f, k, &c1, &c2, &edge, &in);
        for (int t = 0; t < len; t++) {
            int ke = side_idx(f, axis, edge, t), ki = side_idx(f, axis, in, t);
            c1[ke] = mur_edge(o[t], o[len + t], c1[ki], m);
            c2[ke] = mur_edge(o[2 * len + t], o[3 * len + t], c2[ki], m);
        }
    }
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
    b->shift++;
}
