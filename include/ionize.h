/* ionize.h - field (tunnel) ionization of one macro-ion per step, shared by the CPU backend
 * and the CUDA kernels (design.md §14, docs/physics.md "Field ionization").
 *
 * Rate: quasi-static ADK for a DC field (Ammosov, Delone, Krainov 1986, in the form of
 * OSIRIS, EPOCH, WarpX and Smilei), level k -> k + 1 of ionization energy I_p (atomic units),
 * n* = (k + 1) / sqrt(2 I_p), C^2 = 2^(2n*) / (n* Gamma(2n*)):
 *   w = C^2 I_p (2 (2 I_p)^(3/2) / E)^(2n* - 1) exp(-2 (2 I_p)^(3/2) / (3 E)).
 * adk.c folds the constants and the units into three numbers per level, so that the
 * probability rate per step is W = exp(lna - p ln E - b / E) with E = |E| in code units.
 *
 * Levels within a step follow one another: the ion's time to the next ionization is drawn
 * from the level's rate, and when it falls within the step the ion moves up a level and the
 * next level's time is drawn from what is left of the step (the field held at its value for
 * the step). A static field thus gives the exact solution of the rate equations, whatever
 * the step. */
#ifndef IONIZE_H
#define IONIZE_H

#include "empic.h"
#include "particle.h"
#include <Random123/philox.h>
#include <math.h>
#include <stdint.h>

#define IONIZE_LEVELS 36 /* the elements' largest Z (elements.h) */
/* Rates per step below this are taken as zero (a probability no draw of 53 bits resolves
 * well; it also ends the sequence early in a weak field). */
#define IONIZE_WMIN 1e-15

/* The ADK levels of an ion species: W_k(E) = exp(lna[k] - p[k] ln E - b[k] / E) per step for
 * state k -> k + 1, from the initial state up to zmax; below emin[k] (where W_k still grows
 * with E) W_k < IONIZE_WMIN, so that weak fields skip the exponential. */
typedef struct {
    int zmax;
    double lna[IONIZE_LEVELS], p[IONIZE_LEVELS], b[IONIZE_LEVELS], emin[IONIZE_LEVELS];
    /* quiet[z]: the least emin of the levels from state z up (infinite from zmax on): below
       it, no ion in state z or above ionizes */
    double quiet[IONIZE_LEVELS + 1];
} ionize_table;

/* The room to lay out for a cluster's electrons when they outgrow their segment: those
 * there, those arriving in this step, and every one the cluster's ions could still give (up
 * to zmax from the initial state z0), so that a species filled by ionization is re-laid out
 * about once per cluster its plasma reaches, not at every step of its growth. */
static inline int ionize_room(int electrons, int arriving, int ions, int z0, int zmax)
{
    const long long r = (long long)electrons + arriving + (long long)ions * (zmax - z0);
    return r < (1 << 30) ? (int)r : 1 << 30;
}

/* What one step of ionization of a species did: electrons created (on this rank), and the
 * sums of w z and w over its particles after it (all ranks: the mean charge state). */
typedef struct {
    long long events;
    double zw, w;
} ionize_stats;

/* Probability rate per step of level k at field magnitude e (code units, e > 0). */
EMPIC_HD double ionize_rate(const ionize_table *t, int k, double e)
{
    return exp(t->lna[k] - t->p[k] * log(e) - t->b[k] / e);
}

/* The draws of one ion at one step: a pure function of what the ion is, not of where it is
 * stored (docs/reproducibility.md): the seed, the species, the ion's global cell (column ig,
 * counted from the start of a moving window's run, row j < 2^24), its rank in its cluster's
 * slot order (the same for any thread or rank count) and the step. */
typedef struct {
    philox4x32_key_t key;
    philox4x32_ctr_t ctr;
} ionize_stream;

EMPIC_HD ionize_stream ionize_stream_of(unsigned long long seed, unsigned species, uint32_t ig,
                                        uint32_t j, uint32_t rank, long long step)
{
    ionize_stream r;
    /* a key of its own: never the stream of the load (rng.h) of the same cell */
    r.key.v[0] = (uint32_t)seed ^ 0x51ED270Bu;
    r.key.v[1] = (uint32_t)(seed >> 32) ^ (species * 0x9E3779B9u);
    r.ctr.v[0] = ig;
    r.ctr.v[1] = rank;
    r.ctr.v[2] = (uint32_t)step;
    r.ctr.v[3] = j << 8; /* low byte: the draw block */
    return r;
}

/* Two uniform numbers in (0, 1) of 53 bits each, the draw block after the last. */
EMPIC_HD void ionize_uniform2(ionize_stream *r, double u[2])
{
    philox4x32_ctr_t o = philox4x32(r->ctr, r->key);
    r->ctr.v[3]++;
    for (int i = 0; i < 2; i++)
        u[i] = ((double)(o.v[2 * i] >> 5) * 67108864.0 + (double)(o.v[2 * i + 1] >> 6) + 0.5) *
               (1.0 / 9007199254740992.0);
}

/* The charge state at the end of the step of an ion in state z in a field of magnitude e
 * (code units) held for the step, up to t->zmax: sequential levels, each ionization time
 * drawn as -ln(u) / W_k. */
EMPIC_HD int ionize_ion(const ionize_table *t, int z, double e, ionize_stream *r)
{
    double left = 1.0, u[2] = {0.0, 0.0}; /* the fraction of the step left */
    int used = 2;
    for (; z < t->zmax && e > 0.0; z++) {
        if (e < t->emin[z])
            break; /* the rate would be below IONIZE_WMIN */
        const double w = ionize_rate(t, z, e);
        if (!(w * left > IONIZE_WMIN))
            break;
        if (used == 2) {
            ionize_uniform2(r, u);
            used = 0;
        }
        const double tau = -log(u[used++]) / w;
        if (tau >= left)
            break;
        left -= tau;
    }
    return z;
}

/* Whether no ion of a cluster can ionize in this step, from m[c]: the largest |E_c| over
 * every cell its ions gather from (the cluster's tile, one cell around it), and the uniform
 * external field ext[]. A bilinear gather stays within its four values but for a few float
 * roundings (the margin of 1e-5), so a bound below the emin of every level its ions can
 * still take (quiet: the table's quiet[z] for the lowest state z there) leaves each ion's
 * charge state as ionize_ion would: the cluster's ions need not be drawn. */
EMPIC_HD int ionize_quiet(double quiet, const float m[3], const float ext[3])
{
    double s = 0.0;
    for (int c = 0; c < 3; c++) {
        const double v = (double)m[c] + fabs((double)ext[c]);
        s += v * v;
    }
    return sqrt(s) * (1.0 + 1e-5) < quiet;
}

/* |E| at offset (x, y) of cell k (row stride s) with the external field: its arrays xa[]
 * (NULL where uniform) added at the Yee points, its uniform values ext[] after (extfield.h). */
EMPIC_HD double ionize_field(const float *ex, const float *ey, const float *ez,
                             const float *const xa[3], int k, int s, float x, float y,
                             const float ext[3])
{
    const double a = (double)gather_yee_ext(ex, xa[0], YEE_EX, k, s, x, y) + ext[0];
    const double b = (double)gather_yee_ext(ey, xa[1], YEE_EY, k, s, x, y) + ext[1];
    const double c = (double)gather_yee_ext(ez, xa[2], YEE_EZ, k, s, x, y) + ext[2];
    return sqrt(a * a + b * b + c * c);
}

#endif
