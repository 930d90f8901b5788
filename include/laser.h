/* laser.h - the incident laser field, shared by both backends: a 2D Gaussian beam with a
 * temporal envelope, evaluated where the source plane needs it (double precision: the
 * carrier phase omega0 t grows large).
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

/* The transverse field (E1, E2) at (xi, r) and time t. */
EMPIC_HD void laser_field(const laser_beam *L, double xi, double r, double t, double *e1,
                          double *e2)
{
    double env = laser_envelope(L, t - xi);
    if (env == 0.0) {
        *e1 = *e2 = 0.0;
        return;
    }
    double z = xi - L->xi_focus, xr = L->xr, dr = r - L->center;
    double w2 = L->w0 * L->w0 * (1.0 + z * z / (xr * xr));
    double amp = L->amp * env * sqrt(L->w0 / sqrt(w2)) * exp(-dr * dr / w2);
    double phi = L->omega0 * (t - xi) - 0.5 * L->omega0 * dr * dr * z / (z * z + xr * xr) +
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

#endif
