/* lasers.c - the laser sources of a deck set up for a run (lasers.h). */
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
    b->profile = c->profile == LPROF_SUPERGAUSSIAN ? LASER_SUPERGAUSSIAN
                 : c->profile == LPROF_FLATTOP     ? LASER_FLATTOP_BEAM
                                                   : LASER_GAUSSIAN_BEAM;
    b->order = c->order;
    b->edge = c->edge;
    b->ct = 1.0;
    if (c->angle != 0.0) {
        const double th = c->angle * (3.14159265358979323846 / 180.0);
        b->tilt = 1;
        b->ct = cos(th);
        b->st = sin(th);
        /* the footprint's radius where the axis crosses the boundary, widened to the beam's
         * radius at its leading edge there (a focus far from the boundary) */
        const double zc = fabs(b->xi_focus) / b->ct, tn = fabs(b->st / b->ct);
        const double r0 = laser_reach(b, 3.0, zc);
        b->delay = b->xi_focus / b->ct + laser_reach(b, 3.0, zc + r0 * tn) * tn;
    }
}

double laser_reach(const laser_beam *b, double k, double z)
{
    const double w = b->w0 * sqrt(1.0 + z * z / (b->xr * b->xr));
    if (b->profile == LASER_SUPERGAUSSIAN) /* exp(-a^N) = exp(-k^2) */
        return w * pow(k * k, 1.0 / b->order);
    if (b->profile == LASER_FLATTOP_BEAM)
        return w * (1.0 + b->edge / b->w0);
    return k * w;
}

void laser_footprint(const laser_src *L, const deck *d, double *lo, double *hi)
{
    const laser_beam *b = &L->beam;
    const double h = L->axis ? d->dy : d->dx;
    const double a = laser_xi(L, L->plane, h) - b->xi_focus; /* the plane from the focus */
    const double mid = b->center + a * b->st / b->ct;        /* where the axis crosses it */
    const double half = laser_reach(b, 2.0, fabs(a) / b->ct) / b->ct;
    *lo = mid - half;
    *hi = mid + half;
}

double laser_end_time(const laser_src *L, const deck *d)
{
    double h = L->axis ? d->dy : d->dx;
    const laser_beam *b = &L->beam;
    if (b->tilt) /* the footprint's far edge on the plane: its envelope starts 2 R |tan| late */
        return laser_length(b) + laser_xi(L, L->plane, h) / b->ct +
               2.0 * (b->delay - b->xi_focus / b->ct) + h;
    return laser_length(b) + laser_xi(L, L->plane, h) + h;
}

