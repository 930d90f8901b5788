/* cpu_fbnd.c - the field boundaries' updates on the CPU around the Yee updates of cpu_fields.c:
 * CPML terms, laser sources, Mur edges, and the layers' shift with the moving window
 * (cpu_fbnd.h; state in fbnd.h; cuda/gpu_fbnd.cu is the device's twin). */
#include "cpu_fbnd.h"
#include "empic.h"
#include "ebal.h"
#include "pml.h"

#include <string.h>

/* The source line of L after a half B step (e = 0) or the E step (e = 1). */
static void laser_add(const laser_src *L, emf *f, long shift, int e)
{
    const laser_line ln = laser_line_of(L, e, f->step, f->dt, f->dx, f->dy, shift);
    if (!ln.on)
        return;
    float *const a[6] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2]};
    float *d1 = a[ln.d1], *d2 = a[ln.d2];
    const int n = L->axis ? f->nx : f->ny;
#pragma omp parallel for
    for (int t = 0; t < n; t++) {
        if (!(L->axis ? emf_owns(f, t, ln.at) : emf_owns(f, ln.at, t)))
            continue; /* another rank's node */
        int k = L->axis ? emf_idx(f, t, ln.at) : emf_idx(f, ln.at, t);
        laser_line_add(&L->beam, &ln, t, &d1[k], &d2[k]);
    }
}

static void laser_b(const laser_src *L, emf *f, long shift) { laser_add(L, f, shift, 0); }

static void laser_e(const laser_src *L, emf *f, long shift) { laser_add(L, f, shift, 1); }

/* 1 when cell t of layer L (pml_e_cell's numbering) is this rank's. */
static int layer_owns(const emf *f, const pml_layer *L, int t)
{
    const pml_strip strip = {L->axis, L->first, L->n, L->len};
    int i, j;
    pml_strip_cell(&strip, t, &i, &j);
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
        const pml_strip strip = {L->axis, L->first, L->n, L->len};
        const float id = L->axis ? (float)(1.0 / f->dy) : (float)(1.0 / f->dx);
        float *const *ef = f->e, *const *bf = f->b;
#pragma omp parallel for
        for (int t = 0; t < L->n * L->len; t++) {
            if (!layer_owns(f, L, t))
                continue;
            if (e)
                pml_e_cell(&strip, f->off, s, t, ef[0], ef[1], ef[2], bf[0], bf[1], bf[2], L->psi[0],
                           L->psi[1], L->eb, L->ec, id, dt);
            else
                pml_b_cell(&strip, f->off, s, t, bf[0], bf[1], bf[2], ef[0], ef[1], ef[2], L->psi[2],
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

/* Sum of ebal_side over the entries of slot sl of side k (in order). */
static double side_slot(const emf *f, const clusters *cl, const ebal_region *r, int k, int sl)
{
    const int *t0 = k / 2 ? cl->x0 : cl->y0;
    double v = 0.0;
    for (int t = t0[sl]; t < t0[sl + 1]; t++)
        v += ebal_side(r, k, t, f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2], f->off,
                       f->stride);
    return v;
}

/* Sum of ebal_laser over the entries of slot sl of laser line ln of L on fields a1, a2. */
static double laser_slot(const emf *f, const clusters *cl, const ebal_region *r,
                         const laser_src *L, const laser_line *ln, const float *a1,
                         const float *a2, int sl)
{
    const int *t0 = L->axis ? cl->x0 : cl->y0;
    double v = 0.0;
    for (int t = t0[sl]; t < t0[sl + 1]; t++) {
        const int k = L->axis ? emf_idx(f, t, ln->at) : emf_idx(f, ln->at, t);
        v += ebal_laser(r, &L->beam, ln, L->axis, t, a1, a2, k);
    }
    return v;
}

void fbnd_flows(emf *f, const clusters *cl, const ebal_region *r, double *flow, int nslot,
                int after)
{
    const fbnd *b = f->fb;
    if (!b)
        return;
    for (int k = 0; k < EBAL_SIDES; k++) {
        if (b->bnd[k] == FBND_PERIODIC)
            continue;
        const int axis = k / 2, node = k & 1 ? r->hi[axis] : r->lo[axis];
        const double h = 0.5 * f->dt * (axis ? f->dx : f->dy);
        for (int sl = 0; sl < (axis ? cl->ncx : cl->ncy); sl++)
            if (cl->own[ebal_cluster(axis, node, sl, cl->cx_of, cl->cy_of, cl->ncx)])
                flow[k * nslot + sl] += h * side_slot(f, cl, r, k, sl);
    }
    float *const a[6] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2]};
    const double dxdy = f->dx * f->dy;
    for (int l = 0; l < b->nlasers; l++) {
        const laser_src *L = &b->lasers[l];
        const int ns = L->axis ? cl->ncx : cl->ncy;
        double *fe = flow + (size_t)(EBAL_SIDES + 2 * l) * nslot, *fb = fe + nslot;
        const laser_line le = laser_line_of(L, 1, f->step, f->dt, f->dx, f->dy, b->shift);
        if (le.on)
            for (int sl = 0; sl < ns; sl++)
                if (cl->own[ebal_cluster(L->axis, le.at, sl, cl->cx_of, cl->cy_of, cl->ncx)])
                    fe[sl] += 0.5 * dxdy * laser_slot(f, cl, r, L, &le, a[le.d1], a[le.d2], sl);
        if (after)
            continue;
        /* B(n+1/2) with the column's dB(n) and dB(n+1) */
        const laser_line l0 = laser_line_of(L, 0, f->step, f->dt, f->dx, f->dy, b->shift);
        const laser_line l1 = laser_line_of(L, 0, f->step + 1, f->dt, f->dx, f->dy, b->shift);
        if (l0.on)
            for (int sl = 0; sl < ns; sl++)
                if (cl->own[ebal_cluster(L->axis, l0.at, sl, cl->cx_of, cl->cy_of, cl->ncx)])
                    fb[sl] += dxdy * (laser_slot(f, cl, r, L, &l0, a[l0.d1], a[l0.d2], sl) +
                                      laser_slot(f, cl, r, L, &l1, a[l1.d1], a[l1.d2], sl));
    }
}

void fbnd_shift_flows(emf *f, const clusters *cl, const ebal_region *r, double *flow, int nslot)
{
    const double h = 0.5 * f->dx * f->dy;
    for (int k = SIDE_XMIN; k <= SIDE_XMAX; k++) {
        const int node = k ? r->hi[0] : r->lo[0];
        for (int sl = 0; sl < cl->ncy; sl++) {
            if (!cl->own[ebal_cluster(0, node, sl, cl->cx_of, cl->cy_of, cl->ncx)])
                continue;
            double v = 0.0;
            for (int t = cl->y0[sl]; t < cl->y0[sl + 1]; t++)
                v += ebal_shift_column(r, k, t, f->e[0], f->e[1], f->e[2], f->b[0], f->b[1],
                                       f->b[2], f->off, f->stride);
            flow[k * nslot + sl] += k ? -h * v : h * v;
        }
    }
}
