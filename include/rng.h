/* rng.h - counter-based random numbers (Random123 Philox-4x32-10) for particle loading.
 *
 * A draw is a pure function of (seed, species, cell, particle in cell, draw index), so a
 * load is the same for any thread count and on either backend. */
#ifndef RNG_H
#define RNG_H

#include "empic.h"
#include <Random123/philox.h>
#include <math.h>
#include <stdint.h>

typedef struct {
    philox4x32_key_t key;
    philox4x32_ctr_t ctr;
    float buf[4];
    int used;
} rng_stream;

/* The stream of particle `part` of cell `cell` of species `species`. */
EMPIC_HD void rng_init(rng_stream *r, unsigned long long seed, unsigned species, uint32_t cell,
                       uint32_t part)
{
    r->key.v[0] = (uint32_t)seed;
    r->key.v[1] = (uint32_t)(seed >> 32) ^ (species * 0x9E3779B9u);
    r->ctr.v[0] = cell;
    r->ctr.v[1] = part;
    r->ctr.v[2] = species;
    r->ctr.v[3] = 0;
    r->used = 4;
}

/* Uniform in (0, 1]: never 0, so logarithms are safe. */
EMPIC_HD float rng_uniform(rng_stream *r)
{
    if (r->used == 4) {
        philox4x32_ctr_t o = philox4x32(r->ctr, r->key);
        r->ctr.v[3]++;
        for (int i = 0; i < 4; i++)
            r->buf[i] = ((float)(o.v[i] >> 8) + 1.0f) * (1.0f / 16777216.0f);
        r->used = 0;
    }
    return r->buf[r->used++];
}

/* Standard normal by Box-Muller (one of the pair is used: simple and stateless). */
EMPIC_HD float rng_normal(rng_stream *r)
{
    float a = rng_uniform(r), b = rng_uniform(r);
    return sqrtf(-2.0f * logf(a)) * cosf(6.283185307179586f * b);
}

/* Isotropic Maxwell-Juttner momentum with temperature T (in m c^2), Sobol's rejection
 * method (Zenitani 2015, Eq. 10-11); used for hot species where a Gaussian in u is wrong. */
EMPIC_HD void rng_juttner(rng_stream *r, double T, float u[3])
{
    double mag;
    for (;;) {
        double x1 = rng_uniform(r), x2 = rng_uniform(r), x3 = rng_uniform(r),
               x4 = rng_uniform(r);
        mag = -T * log(x1 * x2 * x3);
        double eta = -T * log(x1 * x2 * x3 * x4);
        if (eta * eta - mag * mag > 1.0)
            break;
    }
    double c = 2.0 * rng_uniform(r) - 1.0, ph = 6.283185307179586 * rng_uniform(r);
    double st = sqrt(fmax(0.0, 1.0 - c * c));
    u[0] = (float)(mag * st * cos(ph));
    u[1] = (float)(mag * st * sin(ph));
    u[2] = (float)(mag * c);
}

/* Boost a rest-frame momentum u' by the drift momentum ud (Lorentz transformation of the
 * four-momentum; ud = gamma_d beta_d). */
EMPIC_HD void rng_boost(float u[3], const double ud[3])
{
    double ud2 = ud[0] * ud[0] + ud[1] * ud[1] + ud[2] * ud[2];
    if (ud2 == 0.0)
        return;
    double gd = sqrt(1.0 + ud2), gp = sqrt(1.0 + (double)u[0] * u[0] + (double)u[1] * u[1] +
                                               (double)u[2] * u[2]);
    double proj = (ud[0] * u[0] + ud[1] * u[1] + ud[2] * u[2]) / ud2; /* (n.u')/|ud| */
    double f = (gd - 1.0) * proj;
    for (int i = 0; i < 3; i++)
        u[i] = (float)(u[i] + f * ud[i] + gp * ud[i]);
}

#endif
