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
}

double laser_end_time(const laser_src *L, const deck *d)
{
    double h = L->axis ? d->dy : d->dx;
    return laser_length(&L->beam) + laser_xi(L, L->plane, h) + h;
}

