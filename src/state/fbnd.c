/* fbnd.c - CPML layers, Mur edges and laser sources around the Yee updates (fbnd.h). */
#include "fbnd.h"
#include "deck.h"
#include "comm.h"
#include "empic.h"
#include "pml.h"

#include <stdio.h>
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

ebal_region fbnd_region(const deck *d)
{
    ebal_region r;
    for (int axis = 0; axis < 2; axis++) {
        const int n = axis ? d->ny : d->nx;
        int depth[2];
        for (int hi = 0; hi < 2; hi++) {
            const int b = d->fbnd[2 * axis + hi];
            depth[hi] = b == FBND_PML ? d->pml_cells : b == FBND_MUR ? 1 : 0;
        }
        r.lo[axis] = depth[0];
        r.hi[axis] = n - depth[1];
    }
    return r;
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

/* Entries of psi array p of layer L in cell column i, rows [j0, j1), to buf (out) or from
 * it; returns how many. */
static size_t layer_column(const pml_layer *L, float *p, int i, int j0, int j1, float *buf,
                           int out)
{
    const pml_strip S = {L->axis, L->first, L->n, L->len};
    size_t n = 0;
    for (int j = j0; j < j1; j++) {
        const int k = pml_strip_index(&S, i, j);
        if (k < 0)
            continue;
        if (out)
            buf[n++] = p[k];
        else
            p[k] = buf[n++];
    }
    return n;
}

void fbnd_shift_exchange(emf *f)
{
    fbnd *b = f->fb;
    const size_t room = 2 * (size_t)(f->ny + 1); /* two columns' entries, each way */
    float *buf = empic_alloc(2 * room * sizeof(float), "window exchange"), *in = buf + room;
    const int left = f->nb[SIDE_XMIN], right = f->nb[SIDE_XMAX];
    for (int n = 0; n < b->nlayers; n++)
        for (int m = 0; m < 4; m++) {
            pml_layer *L = &b->layer[n];
            float *p = L->psi[m];
            /* this rank's last column and its first guard column take the first two columns
             * of the rank on the right (that rank shifted them to columns i0 - 1 and i0 of
             * its copy), in one message; the CUDA backend's B half steps read the guard's */
            size_t k = 0;
            if (left >= 0 && f->i0 > 0) {
                k = layer_column(L, p, f->i0 - 1, f->j0, f->j1, buf, 1);
                k += layer_column(L, p, f->i0, f->j0, f->j1, buf + k, 1);
            }
            if (comm_sendrecv(buf, k * sizeof(float), left, in, room * sizeof(float), right,
                              30)) {
                const size_t got = layer_column(L, p, f->i1 - 1, f->j0, f->j1, in, 0);
                layer_column(L, p, f->i1, f->j0, f->j1, in + got, 0);
            }
        }
    free(buf);
}

int fbnd_arrays(const emf *f, fbnd_array *a)
{
    const fbnd *b = f->fb;
    int n = 0;
    for (int l = 0; b && l < b->nlayers; l++)
        for (int m = 0; m < 4; m++, n++) {
            snprintf(a[n].name, sizeof a[n].name, "psi%d_%d", l, m);
            a[n].data = b->layer[l].psi[m];
            a[n].len = (size_t)b->layer[l].n * (size_t)b->layer[l].len;
            a[n].layer = l;
            a[n].side = -1;
        }
    for (int k = 0; b && k < 4; k++)
        if (b->mur_old[k]) {
            snprintf(a[n].name, sizeof a[n].name, "mur%d", k);
            a[n].data = b->mur_old[k];
            a[n].len = 4 * (size_t)(k / 2 ? f->nx : f->ny);
            a[n].layer = -1;
            a[n++].side = k;
        }
    return n;
}

void fbnd_whole(const emf *f, const fbnd_array *a, uint32_t *out)
{
    for (size_t e = 0; e < a->len; e++) {
        int i, j;
        if (a->side < 0) {
            const pml_layer *L = &f->fb->layer[a->layer];
            const pml_strip st = {L->axis, L->first, L->n, L->len};
            pml_strip_cell(&st, (int)e, &i, &j);
        } else { /* 4 rows along the edge (pml.h: mur_save), held by the node inside it */
            const int axis = a->side / 2, len = axis ? f->nx : f->ny, t = (int)(e % (size_t)len);
            const int first = a->side & 1 ? (axis ? f->ny : f->nx) - 1 : 1;
            i = axis ? t : first;
            j = axis ? first : t;
        }
        out[e] = 0;
        if (emf_owns(f, i, j))
            memcpy(&out[e], &a->data[e], 4);
    }
    comm_sum_int((int *)out, a->len);
}
