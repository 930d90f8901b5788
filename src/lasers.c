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

/* Distance from the launching boundary of coordinate index a (in cells, may be half-integer). */
static double xi_of(const laser_src *L, double a, double h)
{
    return L->sign > 0 ? a * h : L->edge - a * h;
}

double laser_xi(const laser_src *L, double a, double h) { return xi_of(L, a, h); }

double laser_end_time(const laser_src *L, const deck *d)
{
    double h = L->axis ? d->dy : d->dx;
    return laser_length(&L->beam) + xi_of(L, L->plane, h) + h;
}

void laser_b(const laser_src *L, emf *f, long shift)
{
    if (L->axis == 0 && shift != 0)
        return;
    const double t = f->step * f->dt;
    const int b = L->sign > 0 ? L->plane - 1 : L->plane;
    if (L->axis == 0) {
        const double xi = xi_of(L, L->plane, f->dx);
        const float h = (float)(L->sign * 0.5 * f->dt / f->dx);
#pragma omp parallel for
        for (int j = 0; j < f->ny; j++) {
            double e1, e2, u;
            int k = emf_idx(f, b, j);
            laser_field(&L->beam, xi, (j + 0.5) * f->dy, t, &e1, &u);
            laser_field(&L->beam, xi, j * f->dy, t, &u, &e2);
            f->b[2][k] += h * (float)e1;
            f->b[1][k] -= h * (float)e2;
        }
    } else {
        const double xi = xi_of(L, L->plane, f->dy);
        const float h = (float)(L->sign * 0.5 * f->dt / f->dy);
#pragma omp parallel for
        for (int i = 0; i < f->nx; i++) {
            double e1, e2, u;
            int k = emf_idx(f, i, b);
            laser_field(&L->beam, xi, (i + shift + 0.5) * f->dx, t, &e1, &u);
            laser_field(&L->beam, xi, (double)(i + shift) * f->dx, t, &u, &e2);
            f->b[2][k] -= h * (float)e1;
            f->b[0][k] += h * (float)e2;
        }
    }
}

void laser_e(const laser_src *L, emf *f, long shift)
{
    if (L->axis == 0 && shift != 0)
        return;
    const double t = (f->step + 0.5) * f->dt;
    const int b = L->sign > 0 ? L->plane - 1 : L->plane;
    if (L->axis == 0) {
        const double xi = xi_of(L, b + 0.5, f->dx);
        const float c = (float)(f->dt / f->dx);
#pragma omp parallel for
        for (int j = 0; j < f->ny; j++) {
            double e1, e2, u;
            int k = emf_idx(f, L->plane, j);
            laser_field(&L->beam, xi, (j + 0.5) * f->dy, t, &e1, &u);
            laser_field(&L->beam, xi, j * f->dy, t, &u, &e2);
            f->e[1][k] += c * (float)e1;
            f->e[2][k] += c * (float)e2;
        }
    } else {
        const double xi = xi_of(L, b + 0.5, f->dy);
        const float c = (float)(f->dt / f->dy);
#pragma omp parallel for
        for (int i = 0; i < f->nx; i++) {
            double e1, e2, u;
            int k = emf_idx(f, i, L->plane);
            laser_field(&L->beam, xi, (i + shift + 0.5) * f->dx, t, &e1, &u);
            laser_field(&L->beam, xi, (double)(i + shift) * f->dx, t, &u, &e2);
            f->e[0][k] += c * (float)e1;
            f->e[2][k] += c * (float)e2;
        }
    }
}
