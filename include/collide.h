/* collide.h - binary Coulomb collisions (docs/physics.md, "Binary collisions"), the rules both
 * backends share: the physical scale from n0, the Philox streams of a cell's pairing and of
 * each pair, the pairing of a cell's particles, the cell's Debye length and low-temperature
 * cap, and the relativistic scattering of one pair (Pérez et al. 2012, Phys. Plasmas 19,
 * 083104, with Nanbu's angle distribution, Nanbu 1997). Unequal weights: the lighter particle
 * always takes the pair's scattering, the heavier one with probability w_light / w_heavy
 * (rejection, as Higginson and WarpX), so momentum and energy are conserved exactly for equal
 * weights and on average otherwise.
 *
 * Code units: time 1/w_p, length c/w_p, momentum u = gamma v / c (per mass), mass in m_e,
 * charge in e, density in n0, with w_p the plasma frequency of n0. */
#ifndef COLLIDE_H
#define COLLIDE_H

#include "empic.h"
#include "rng.h"
#include <math.h>
#include <stdint.h>

/* One collision entry of the deck as the backends apply it at one step. */
typedef struct collide_par {
    int a, b;          /* species numbers; a == b: intra-species */
    double lnl;        /* Coulomb logarithm (> 0), or 0: computed per pair from the cell */
    double dt;         /* time of the collision step: every * dt */
    double re_kp;      /* r_e w_p / c: the classical electron radius in c/w_p (from n0) */
    double lc_kp;      /* hbar / (m_e c) in c/w_p: the quantum minimum impact parameter */
    unsigned long long seed;
    unsigned entry;    /* the entry's index in the deck: its own random streams */
    long step;         /* the step: a fresh pairing and fresh angles each time */
    long window_cells; /* cells the moving window has moved: the global cell index */
} collide_par;

/* r_e w_p / c and hbar / (m_e c) w_p / c for n0 in cm^-3 (CODATA 2018). */
static inline void collide_scale(double n0_cm3, double *re_kp, double *lc_kp)
{
    const double re = 2.8179403262e-15, lc = 3.8615926796e-13, c = 299792458.0;
    const double wp = 5.64146e4 * sqrt(n0_cm3); /* rad/s: sqrt(n e^2 / (eps0 m_e)) */
    *re_kp = re * wp / c;
    *lc_kp = lc * wp / c;
}

/* The random stream of pair k (or of a shuffle: k = COLLIDE_SHUFFLE + side) of global cell
 * (i, j) at par->step: a pure function of them, never of a storage slot. The counter's low
 * 12 bits number the draws: 16384 uniforms a stream (a pair takes 5 or so; a shuffle one per
 * particle, so the two shuffles of a cell of more than 16384 particles share numbers). */
#define COLLIDE_SHUFFLE 0xFFFF0u
EMPIC_HD void collide_rng(rng_stream *r, const collide_par *p, int i, int j, unsigned k)
{
    uint64_t st = (uint64_t)p->step;
    r->key.v[0] = (uint32_t)p->seed ^ (0x85EBCA6Bu * (p->entry + 1u));
    r->key.v[1] = (uint32_t)(p->seed >> 32) ^ 0xC0111DE5u ^ (uint32_t)(st >> 32);
    r->ctr.v[0] = (uint32_t)(i + p->window_cells);
    r->ctr.v[1] = (uint32_t)j;
    r->ctr.v[2] = (uint32_t)st;
    r->ctr.v[3] = k << 12;
    r->used = 4;
}

/* Fisher-Yates shuffle of a cell's n particle indices. */
EMPIC_HD void collide_shuffle(int *ix, int n, rng_stream *r)
{
    for (int k = n - 1; k > 0; k--) {
        int m = (int)(rng_uniform(r) * (float)(k + 1));
        m = m > k ? k : m; /* rng_uniform may return 1 */
        int t = ix[k];
        ix[k] = ix[m];
        ix[m] = t;
    }
}

/* Pairs of a cell with na particles of a and nb of b (intra: nb unused). Intra-species:
 * consecutive pairs of the shuffled list; an odd count (Pérez §II.D) makes the first three
 * particles three pairs of half weight. Inter-species: the larger group cycled over the
 * smaller. */
EMPIC_HD int collide_npairs(int na, int nb, int intra)
{
    if (intra)
        return na < 2 ? 0 : (na & 1 ? 3 + (na - 3) / 2 : na / 2);
    return na && nb ? (na > nb ? na : nb) : 0;
}

/* Pair k: positions i (in a's list), j (in b's, or a's again when intra); returns its share
 * of the collision time (0.5 for the three pairs of an odd intra-species count, else 1). */
EMPIC_HD double collide_pair_of(int k, int na, int nb, int intra, int *i, int *j)
{
    if (!intra) {
        *i = k % na;
        *j = k % nb;
        return 1.0;
    }
    if (na & 1) {
        if (k < 3) {
            *i = k;
            *j = k == 2 ? 0 : k + 1;
            return 0.5;
        }
        *i = 2 * k - 3;
        *j = 2 * k - 2;
        return 1.0;
    }
    *i = 2 * k;
    *j = 2 * k + 1;
    return 1.0;
}

/* Pairs that share a particle must be taken in order; the pairs of a cell fall into lanes
 * that share none, each a chain of pairs taken in turn, so that a GPU can take the lanes in
 * parallel and get what the CPU gets going through the pairs in order. Inter-species: lane l
 * is the pairs of particle l of the smaller group; intra-species: one pair each, but the
 * three pairs of an odd count make lane 0. */
EMPIC_HD int collide_nlanes(int na, int nb, int intra)
{
    if (intra)
        return na < 2 ? 0 : (na & 1 ? 1 + (na - 3) / 2 : na / 2);
    return na < nb ? na : nb;
}

/* Pair t of lane l (0, 1, ... in turn), or -1 past the lane's end. */
EMPIC_HD int collide_lane_pair(int l, int t, int na, int nb, int intra)
{
    if (!intra) {
        int m = na < nb ? na : nb, n = na < nb ? nb : na, k = l + t * m;
        return k < n ? k : -1;
    }
    if (na & 1)
        return l == 0 ? (t < 3 ? t : -1) : (t == 0 ? l + 2 : -1);
    return t == 0 ? l : -1;
}

/* Moments of one species in one cell: sum w (its density), sum w m u.v (3 n T), count. The
 * terms in single precision (they set the Debye length only), their sums in double. */
typedef struct {
    double n, pv;
    int count;
} collide_moments;

EMPIC_HD void collide_moments_add(collide_moments *mo, float m, float w, float ux, float uy,
                                  float uz)
{
    const float u2 = ux * ux + uy * uy + uz * uz;
    mo->count++;
    mo->n += w;
    mo->pv += w * m * u2 / sqrtf(1.0f + u2);
}

/* What every pair of a cell shares: the largest impact parameter squared (the Debye length of
 * the pair's species, at least the interatomic distance), the density factor of the pair's s
 * (min(Na, Nb) per unit weight) and the cap on s at low temperature (Pérez Eq. 23, to be
 * multiplied by n12 and the relative velocity). Single precision, as s itself. */
typedef struct {
    float bmax2, nmin, cap;
} collide_cell;

EMPIC_HD collide_cell collide_cell_of(const collide_par *p, const collide_moments *a,
                                      const collide_moments *b, double qa, double qb,
                                      double ma, double mb, int intra)
{
    collide_cell c;
    const double four_pi_r = 4.0 * M_PI * p->re_kp; /* n0 in (c/w_p)^-3 is 1 / four_pi_r */
    double ld2 = 0.0, nmax = a->n > b->n ? a->n : b->n;
    if (a->n > 0.0 && a->pv > 0.0)
        ld2 += qa * qa * a->n * a->n * 3.0 / a->pv;
    if (!intra && b->n > 0.0 && b->pv > 0.0)
        ld2 += qb * qb * b->n * b->n * 3.0 / b->pv;
    const float ra = cbrtf((float)(3.0 * p->re_kp / (nmax > 0.0 ? nmax : 1.0))); /* (3/(4 pi n))^1/3 */
    c.bmax2 = ld2 > 0.0 ? fmaxf((float)(1.0 / ld2), ra * ra) : ra * ra;
    c.nmin = (float)(intra ? a->count : (a->count < b->count ? a->count : b->count));
    const float na = (float)(a->n / four_pi_r), nb = (float)((intra ? a->n : b->n) / four_pi_r);
    const float den = fmaxf((float)ma * cbrtf(na * na), (float)mb * cbrtf(nb * nb));
    c.cap = den > 0.0f ? (float)(cbrt(4.0 * M_PI / 3.0) * p->dt * (ma + mb) / four_pi_r) / den
                       : 0.0f;
    return c;
}

/* 1 - cos(chi) of Nanbu's angle for the normalised path s with a uniform r in (0, 1] (the fit
 * of Pérez Eq. 10 for A(s)); r2 replaces r when the small-s form leaves [-1, 1]. One minus
 * the cosine, in single precision: small angles keep their relative precision (a cosine in
 * float would round 1 - 1e-8 to 1 and lose every collision of a weakly collisional plasma). */
EMPIC_HD float collide_omc(float s, float r, float r2)
{
    if (s <= 0.1f) {
        const float d = -s * logf(r);
        return d > 2.0f ? -s * logf(r2) : d;
    }
    if (s <= 3.0f) {
        const float ai = 0.0056958f + s * (0.9560202f + s * (-0.508139f + s * (0.47913906f +
                         s * (-0.12788975f + s * 0.02389567f))));
        return 1.0f - ai * logf(expf(-1.0f / ai) + 2.0f * r * sinhf(1.0f / ai));
    }
    if (s <= 6.0f) {
        const float a = 3.0f * expf(-s);
        return 1.0f - logf(expf(-a) + 2.0f * r * sinhf(a)) / a;
    }
    return 2.0f - 2.0f * r;
}

/* The change d of p* (momentum of 1 in the centre-of-momentum frame, magnitude pm) turned by
 * chi (1 - cos chi = omc) and the azimuth 2 pi r, in double: p* + d keeps |p*| to double
 * rounding whatever the precision of the angles, and a small turn keeps its relative
 * precision (d is computed, not p* + d). */
EMPIC_HD void collide_turn(const double ps[3], double pm, double omc, float r, double d[3])
{
    const double sx = sqrt(fmax(0.0, omc * (2.0 - omc)));
    const double cp = cosf(6.2831853f * r), sp = (r <= 0.5f ? 1.0 : -1.0) *
                                                 sqrt(fmax(0.0, 1.0 - cp * cp));
    const double pp = sqrt(ps[0] * ps[0] + ps[1] * ps[1]);
    if (pp > 1e-12 * pm) {
        const double ip = 1.0 / pp, a = ps[2] * ip * sx * cp, b = pm * ip * sx * sp;
        d[0] = ps[0] * a + ps[1] * b - ps[0] * omc;
        d[1] = ps[1] * a - ps[0] * b - ps[1] * omc;
        d[2] = -pp * sx * cp - ps[2] * omc;
    } else { /* p* along z: any perpendicular pair of axes will do */
        d[0] = pm * sx * cp - ps[0];
        d[1] = pm * sx * sp - ps[1];
        d[2] = -ps[2] * omc;
    }
}

/* The normalised path s of a pair (Pérez Eqs. 9 and 22 in the cross-section form, with the
 * Coulomb logarithm from the cell's bmax when par->lnl is 0, floor 2, and the cap of Eq. 23),
 * in single precision: s sets only the distribution of the angle. In: the COM quantities.
 * n12: density factor max(w1, w2) min(Na, Nb), times the pair's share of the time. */
EMPIC_HD float collide_s(const collide_par *p, const collide_cell *c, float q1q2, float m1,
                         float m2, float g1, float g2, float g1s, float g2s, float psm, float n12)
{
    const float a = g1s * m1, b = g2s * m2, mu = a * b / (a + b);
    const float vrel = psm / mu;                                 /* |v1* - v2*| */
    const float vinv = vrel / (1.0f + psm * psm / (a * b));
    const float re = (float)p->re_kp;
    const float b0 = 2.0f * re * fabsf(q1q2) / (mu * vrel * vinv); /* in c/w_p */
    float lnl = (float)p->lnl;
    if (lnl <= 0.0f) {
        const float bmin = fmaxf(0.5f * b0, 0.5f * (float)p->lc_kp / psm);
        lnl = fmaxf(2.0f, 0.5f * logf(1.0f + c->bmax2 / (bmin * bmin)));
    }
    /* pi b0^2 lnl n12 / (4 pi re) dt vrel g1s g2s / (g1 g2), in an order that keeps the
     * factors of float's range */
    const float s = b0 * (0.25f * b0 / re) * lnl * n12 * (float)p->dt * vrel * (g1s / g1) *
                    (g2s / g2);
    const float cap = c->cap * n12 * vrel;
    return s < cap ? s : cap;
}

/* One pair: momenta u1, u2 (per mass, as stored) of masses m1, m2, charges' product q1q2,
 * weights w1, w2 scattered in place (each of them or not, by the rejection rule). The
 * scattering is an increment: p* turned in the centre-of-momentum frame changes by d, and d
 * taken back to the lab frame (the Lorentz transform is linear) is what 1 gains and 2 loses,
 * so momentum is kept to rounding and the rounding errors scale with the turn, not with the
 * momenta. Double precision where the energy needs it: the frame's velocity from the total
 * energy (rest masses plus the kinetic energies, which a heavy ion's gamma in float would
 * lose), p* from the momenta's difference (no cancellation), the turn and the increments;
 * the rest in float (gamma, the frame's gamma, s and the angles), which sets only the
 * scattering's statistics. Energy is kept to the rounding of the stored momenta, unbiased. */
EMPIC_HD void collide_pair(float u1[3], float u2[3], float m1, float m2, float q1q2, float w1,
                           float w2, float n12, const collide_par *p, const collide_cell *c,
                           rng_stream *r)
{
    float d2 = 0.0f, a1 = 0.0f, a2 = 0.0f;
    for (int a = 0; a < 3; a++) {
        const float du = u1[a] - u2[a];
        d2 += du * du;
        a1 += u1[a] * u1[a];
        a2 += u2[a] * u2[a];
    }
    if (d2 == 0.0f)
        return;
    const float g1 = sqrtf(1.0f + a1), g2 = sqrtf(1.0f + a2);
    const float k1 = m1 * a1 / (1.0f + g1), k2 = m2 * a2 / (1.0f + g2); /* m (gamma - 1) */
    const double e = 1.0 / ((double)(m1 + m2) + ((double)k1 + k2)), mm = (double)m1 * m2;
    /* v_c = (p1 + p2) / E; q = (p1 E2 - p2 E1) / E, p* = q + f v_c (v_c . q) */
    double vc[3], q[3], vc2 = 0.0, vq = 0.0;
    float vu1 = 0.0f, vu2 = 0.0f;
    for (int a = 0; a < 3; a++) {
        vc[a] = ((double)m1 * u1[a] + (double)m2 * u2[a]) * e;
        q[a] = (mm * ((double)u1[a] - u2[a]) + (double)(m1 * u1[a]) * k2 -
                (double)(m2 * u2[a]) * k1) * e;
        vc2 += vc[a] * vc[a];
        vq += vc[a] * q[a];
        vu1 += (float)vc[a] * u1[a];
        vu2 += (float)vc[a] * u2[a];
    }
    const float sq = sqrtf(1.0f - (float)vc2), gc = 1.0f / sq, f = gc / (1.0f + sq); /* (gc-1)/vc^2 */
    const float g1s = gc * (g1 - vu1), g2s = gc * (g2 - vu2);
    double ps[3], pm = 0.0;
    for (int a = 0; a < 3; a++) {
        ps[a] = q[a] + f * vc[a] * vq;
        pm += ps[a] * ps[a];
    }
    pm = sqrt(pm);
    if (!(pm > 0.0))
        return;
    const float s = collide_s(p, c, q1q2, m1, m2, g1, g2, g1s, g2s, (float)pm, n12);
    const float r1 = rng_uniform(r), r2 = rng_uniform(r), r3 = rng_uniform(r);
    double d[3];
    collide_turn(ps, pm, collide_omc(s, r1, r2), r3, d);
    const double vd = f * (vc[0] * d[0] + vc[1] * d[1] + vc[2] * d[2]);
    /* the lighter (or either of equal weights) always moves; the heavier with probability
     * w_light / w_heavy: one draw at most */
    const int move1 = w2 >= w1 || w2 >= rng_uniform(r) * w1;
    const int move2 = w1 >= w2 || w1 >= rng_uniform(r) * w2;
    const double i1 = 1.0 / m1, i2 = 1.0 / m2;
    for (int a = 0; a < 3; a++) {
        const double dp = d[a] + vc[a] * vd;
        if (move1)
            u1[a] = (float)(u1[a] + dp * i1);
        if (move2)
            u2[a] = (float)(u2[a] - dp * i2);
    }
}

#endif
