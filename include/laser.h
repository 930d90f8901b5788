/* laser.h - the incident laser field, shared by both backends: a 2D Gaussian beam (or a
 * super-Gaussian or flat-top transverse profile) with a temporal envelope, evaluated where
 * the source plane needs it (double precision: the carrier phase omega0 t grows large).
 *
 * Coordinates of a beam: xi = distance from the launching boundary along the propagation
 * direction, r = the transverse in-plane coordinate (y for a beam along x, x for a beam
 * along y). With z = xi - xi_f (xi_f the focal plane), xR = omega0 w0^2 / 2 (c = 1):
 *   w(z) = w0 sqrt(1 + z^2/xR^2),  1/R = z / (z^2 + xR^2),  Gouy phase (1/2) atan(z/xR),
 *   A = a0 omega0 sqrt(w0/w) exp(-(r - rc)^2/w^2) env(t - xi),
 *   phi = omega0 (t - xi) - omega0 (r - rc)^2 / (2R) + (1/2) atan(z/xR) + phase,
 *   linear:   (E1, E2) = A (cos theta, sin theta) cos phi,
 *   circular: (E1, E2) = A (cos phi, sin phi)   (|E| = a0 omega0 at the peak, as for linear),
 * where E1 is the in-plane transverse component (Ey for a beam along x, Ex along y), E2 = Ez
 * and theta the polarisation angle from the in-plane axis toward z.
 *
 * Transverse profiles: the Gaussian's exp(-(r - rc)^2/w^2) is replaced, with a = |r - rc|/w,
 *   supergaussian: exp(-a^N), N = order (2: the Gaussian);
 *   flattop:       1 for a <= 1, cos^2(pi (|r - rc| - w) / (2 e)) over an edge of width
 *                  e = edge w/w0 beyond it, 0 further out (edge 0: a hard edge).
 * These are imposed at the source plane (the grid propagates them on); amplitude factor
 * sqrt(w0/w), phase fronts and Gouy phase stay the Gaussian beam's of the same w0, so a
 * focus away from the plane converges the beam as a lens of that focal length would.
 *
 * Oblique incidence (angle theta from the side's normal, in the simulation plane; tilt = 1):
 * the beam above is evaluated in its own coordinates. With (xi, r) the point's distance from
 * the launching boundary and its transverse coordinate, (xi_f, rc) the focus, ct = cos theta,
 * st = sin theta (theta > 0 tilts the beam toward +r):
 *   z  = (xi - xi_f) ct + (r - rc) st      (along the beam, from the focus),
 *   dr = -(xi - xi_f) st + (r - rc) ct     (across it, from the axis),
 *   tau = t - (z + delay),  delay = xi_f/ct + R |tan theta|,
 * so that along the source plane the phase runs as omega0 st r (the transverse phase of
 * wavelength lambda0/|sin theta|) and the envelope is late by r st: the front of the pulse
 * reaches the plane at t = 0 a footprint radius R (lasers.c: 3 w for the Gaussian, where the
 * axis crosses the boundary) before the axis, and the axis's point at t = R |tan theta|.
 * At theta = 0 these are the normal-incidence expressions (kept as they are: tilt = 0).
 * E1 = A (..) cos phi is then the field along the beam's in-plane transverse direction, which
 * makes the angle theta with the plane; the plane's tangential components are
 *   E_r = E1 ct, E_z = E2           (the B step's correction, laser_line p1 = ct),
 *   B_z ~ E1,    B_r ~ E2 ct        (the E step's, p2 = ct; ~: the normal-incidence signs),
 * so the total-field/scattered-field plane launches the tilted beam with |E| = a0 omega0 at
 * its focus and the beam's power through the plane.
 *
 * Envelopes of the field (duration D = full width at half maximum of env, starting at 0 at
 * tau = 0 on the launching boundary):
 *   sin2:     sin^2(pi tau / (2D)) for 0 <= tau <= 2D;
 *   gaussian: exp(-(tau - 2D)^2 / (2 sigma^2)), sigma = D / (2 sqrt(2 ln 2)), cut to
 *             [0, 4D] (2^-16 at the cut);
 *   flattop:  sin^2 rise over `ramp`, flat for D - ramp, sin^2 fall over `ramp`. */
#ifndef LASER_H
#define LASER_H

#include "empic.h"
#include <math.h>

enum laser_env { LASER_SIN2 = 0, LASER_GAUSSIAN, LASER_FLATTOP }; /* as enum deck_envelope */
enum laser_prof { LASER_GAUSSIAN_BEAM = 0, LASER_SUPERGAUSSIAN, LASER_FLATTOP_BEAM };

typedef struct {
    double amp;          /* a0 omega0 (peak field) */
    double omega0, w0, xr;
    double xi_focus;     /* focal plane, as a distance from the launching boundary */
    double center;       /* transverse position of the axis */
    double c1, c2;       /* linear: cos, sin of the polarisation angle */
    int circular;
    double phase;
    int envelope;        /* enum laser_env */
    double duration, ramp;
    int profile;         /* enum laser_prof */
    double order, edge;  /* supergaussian: order; flattop: edge width at the waist */
    int tilt;            /* 1: oblique incidence (ct, st, delay below) */
    double ct, st;       /* cos, sin of the angle from the side's normal toward +r */
    double delay;        /* xi_f/ct + R |tan theta| */
} laser_beam;

/* Envelope at retarded time tau. */
EMPIC_HD double laser_envelope(const laser_beam *L, double tau)
{
    const double pi = 3.14159265358979323846, D = L->duration;
    if (tau <= 0.0)
        return 0.0;
    if (L->envelope == LASER_GAUSSIAN) {
        if (tau >= 4.0 * D)
            return 0.0;
        double sig = D / (2.0 * sqrt(2.0 * log(2.0))), u = (tau - 2.0 * D) / sig;
        return exp(-0.5 * u * u);
    }
    if (L->envelope == LASER_FLATTOP) {
        double r = L->ramp, end = D + r;
        if (tau >= end)
            return 0.0;
        double a = tau < r ? tau : (tau > D ? end - tau : r);
        double s = sin(0.5 * pi * a / r);
        return s * s;
    }
    if (tau >= 2.0 * D)
        return 0.0;
    double s = sin(0.5 * pi * tau / D);
    return s * s;
}

/* Time after which the envelope is zero. */
EMPIC_HD double laser_length(const laser_beam *L)
{
    return L->envelope == LASER_GAUSSIAN ? 4.0 * L->duration
           : L->envelope == LASER_FLATTOP ? L->duration + L->ramp
                                          : 2.0 * L->duration;
}

/* Transverse amplitude profile at distance dr from the axis where the beam's 1/e radius
 * squared is w2 (the Gaussian's exp(-dr^2/w2) as before profiles came). */
EMPIC_HD double laser_transverse(const laser_beam *L, double dr, double w2)
{
    const double pi = 3.14159265358979323846;
    if (L->profile == LASER_GAUSSIAN_BEAM)
        return exp(-dr * dr / w2);
    const double w = sqrt(w2), a = fabs(dr);
    if (L->profile == LASER_SUPERGAUSSIAN)
        return exp(-pow(a / w, L->order));
    const double e = L->edge * w / L->w0;
    if (a <= w)
        return 1.0;
    if (a >= w + e)
        return 0.0;
    const double c = cos(0.5 * pi * (a - w) / e);
    return c * c;
}

/* The transverse field (E1, E2) at (xi, r) and time t. */
EMPIC_HD void laser_field(const laser_beam *L, double xi, double r, double t, double *e1,
                          double *e2)
{
    double z, dr, tau;
    if (L->tilt) {
        const double a = xi - L->xi_focus, b = r - L->center;
        z = a * L->ct + b * L->st;
        dr = b * L->ct - a * L->st;
        tau = t - (z + L->delay);
    } else {
        z = xi - L->xi_focus;
        dr = r - L->center;
        tau = t - xi;
    }
    double env = laser_envelope(L, tau);
    if (env == 0.0) {
        *e1 = *e2 = 0.0;
        return;
    }
    double xr = L->xr;
    double w2 = L->w0 * L->w0 * (1.0 + z * z / (xr * xr));
    double amp = L->amp * env * sqrt(L->w0 / sqrt(w2)) * laser_transverse(L, dr, w2);
    double phi = L->omega0 * tau - 0.5 * L->omega0 * dr * dr * z / (z * z + xr * xr) +
                 0.5 * atan(z / xr) + L->phase;
    if (L->circular) {
        *e1 = amp * cos(phi);
        *e2 = amp * sin(phi);
    } else {
        double c = amp * cos(phi);
        *e1 = c * L->c1;
        *e2 = c * L->c2;
    }
}

/* A laser source: its beam enters through a total-field/scattered-field plane just inside
 * its launching boundary (src/lasers.h). */
typedef struct {
    laser_beam beam;
    int side;         /* enum deck_side */
    int axis, sign;   /* propagation axis (0: x, 1: y); +1 from a min side, -1 from a max side */
    int plane;        /* node index of the plane along the axis (window at its start) */
    double edge;      /* coordinate of the launching boundary */
} laser_src;

/* Distance from the launching boundary of coordinate index a (cells, may be half-integer)
 * along the beam's axis of cells of size h. */
EMPIC_HD double laser_xi(const laser_src *L, double a, double h)
{
    return L->sign > 0 ? a * h : L->edge - a * h;
}

/* Where and what a laser adds at one Yee phase: along the line of node index `at` on the
 * beam's axis, entry t (the transverse cell, t < the cells across) adds c1 E1 to component
 * d1 and c2 E2 to d2 (0..2: Ex..Ez, 3..5: Bx..Bz) of the incident field at distance xi from
 * the launching boundary and time tm, E1 at transverse position (t + shift + 1/2) h and E2
 * at (t + shift) h (each at its Yee point). */
typedef struct {
    int on;           /* 0: nothing to add (a beam along x once the window has moved) */
    int at, d1, d2;
    float c1, c2;
    double xi, tm, h;
    double p1, p2;    /* the tangential projections of E1, E2 (1 at normal incidence) */
    long shift;
} laser_line;

/* The line of laser L after a half B step (e = 0; E at t = step dt: the plane's B column
 * gets the field at the plane) or after the E step from t = step dt (e = 1: the plane gets
 * the field at the B column, at t + dt/2); shift = cells the moving window has moved. The
 * signs and components of the total-field/scattered-field correction are in lasers.h. */
EMPIC_HD laser_line laser_line_of(const laser_src *L, int e, long step, double dt, double dx,
                                  double dy, long shift)
{
    laser_line ln;
    const int axis = L->axis, col = L->sign > 0 ? L->plane - 1 : L->plane;
    const double d = axis ? dy : dx;
    ln.on = !(axis == 0 && shift != 0);
    ln.h = axis ? dx : dy;
    ln.shift = axis ? shift : 0;
    ln.p1 = e ? 1.0 : L->beam.ct;
    ln.p2 = e ? L->beam.ct : 1.0;
    if (!e) {
        const float hh = (float)(L->sign * 0.5 * dt / d);
        ln.at = col;
        ln.xi = laser_xi(L, L->plane, d);
        ln.tm = step * dt;
        ln.d1 = 5;
        ln.d2 = axis ? 3 : 4;
        ln.c1 = axis ? -hh : hh;
        ln.c2 = axis ? hh : -hh;
    } else {
        ln.at = L->plane;
        ln.xi = laser_xi(L, col + 0.5, d);
        ln.tm = (step + 0.5) * dt;
        ln.d1 = axis ? 0 : 1;
        ln.d2 = 2;
        ln.c1 = ln.c2 = (float)(dt / d);
    }
    return ln;
}

/* Entry t of line ln: *v1 += c1 E1, *v2 += c2 E2. */
EMPIC_HD void laser_line_add(const laser_beam *b, const laser_line *ln, int t, float *v1,
                             float *v2)
{
    double e1, e2, u;
    laser_field(b, ln->xi, (t + ln->shift + 0.5) * ln->h, ln->tm, &e1, &u);
    laser_field(b, ln->xi, (double)(t + ln->shift) * ln->h, ln->tm, &u, &e2);
    *v1 += ln->c1 * (float)(e1 * ln->p1);
    *v2 += ln->c2 * (float)(e2 * ln->p2);
}

#endif
