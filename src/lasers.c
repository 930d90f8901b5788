/* lasers.c - total-field/scattered-field laser sources (lasers.h) on the CPU. */
#include "lasers.h"
#include "deck.h"
#include "empic.h"

#include <math.h>
#include <string.h>

void laser_setup(laser_src *L, const deck_laser *c, const deck *d, int layer)
{
    memset(L, 0, sizeof *L);
    laser_beam *b = &L->beam;
    L->side = c->boundary;
    L->axis = c->boundary >= SIDE_YMIN;
    L->sign = (c->boundary == SIDE_XMIN || c->boundary == SIDE_YMIN) ? 1 : -1;
    int n = L->axis ? d->ny : d->nx;
    double h = L->axis ? d->dy : d->dx;
    int inset = (layer > 0 ? layer : 1) + 2;
    L->plane = L->sign > 0 ? inset : n - inset;
    L->edge = L->sign > 0 ? 0.0 : n * h;
    b->amp = c->a0 * c->omega0;
    b->omega0 = c->omega0;
    b->w0 = c->w0;
    b->xr = 0.5 * c->omega0 * c->w0 * c->w0;
    b->xi_focus = L->sign > 0 ? c->focus : L->edge - c->focus;
    b->center = c->center;
    b->c1 = cos(c->polarization);
    b->c2 = sin(c->polarization);
    b->circular = c->circular;
    b->phase = c->phase;
    b->envelope = c->envelope == ENV_GAUSSIAN ? LASER_GAUSSIAN
                  : c->envelope == ENV_FLATTOP ? LASER_FLATTOP
                                               : LASER_SIN2;
    b->duration = c->duration;
    b->ramp = c->ramp > 0 ? c->ramp : c->duration / 4;
}

double laser_end_time(const laser_src *L, const deck *d)
{
    double h = L->axis ? d->dy : d->dx;
    return laser_length(&L->beam) + laser_xi(L, L->plane, h) + h;
}

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

void laser_b(const laser_src *L, emf *f, long shift) { laser_add(L, f, shift, 0); }
void laser_e(const laser_src *L, emf *f, long shift) { laser_add(L, f, shift, 1); }
