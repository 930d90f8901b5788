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

/* Moments of one species in one cell: sum w (its density), sum w m u.v (3 n T), count. */
typedef struct {
    double n, pv;
    int count;
} collide_moments;

EMPIC_HD void collide_moments_add(collide_moments *mo, double m, float w, float ux, float uy,
                                  float uz)
{
    double u2 = (double)ux * ux + (double)uy * uy + (double)uz * uz;
    mo->count++;
    mo->n += w;
    mo->pv += w * m * u2 / sqrt(1.0 + u2);
}

/* What every pair of a cell shares: the largest impact parameter squared (the Debye length of
 * the pair's species, at least the interatomic distance), the density factor of the pair's s
 * (min(Na, Nb) per unit weight) and the cap on s at low temperature (Pérez Eq. 23, to be
 * multiplied by n12 and the relative velocity). */
typedef struct {
    double bmax2, nmin, cap;
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
    double ra = cbrt(3.0 * p->re_kp / (nmax > 0.0 ? nmax : 1.0)); /* (3 / (4 pi n))^1/3 */
    c.bmax2 = ld2 > 0.0 ? fmax(1.0 / ld2, ra * ra) : ra * ra;
    c.nmin = intra ? a->count : (a->count < b->count ? a->count : b->count);
    double na = a->n / four_pi_r, nb = (intra ? a->n : b->n) / four_pi_r;
    double den = fmax(ma * cbrt(na * na), mb * cbrt(nb * nb));
    c.cap = den > 0.0 ? cbrt(4.0 * M_PI / 3.0) * p->dt * (ma + mb) / (four_pi_r * den) : 0.0;
    return c;
}

/* Nanbu's cos(chi) for the normalised path s with a uniform r in (0, 1] (the fit of Pérez
 * Eq. 10 for A(s)); r2 replaces r when the small-s form leaves [-1, 1]. */
EMPIC_HD double collide_cos_chi(double s, double r, double r2)
{
    if (s <= 0.1) {
        double c = 1.0 + s * log(r);
        return c < -1.0 ? 1.0 + s * log(r2) : c;
    }
    if (s <= 3.0) {
        double ai = 0.0056958 + s * (0.9560202 + s * (-0.508139 + s * (0.47913906 +
                    s * (-0.12788975 + s * 0.02389567))));
        return ai * log(exp(-1.0 / ai) + 2.0 * r * sinh(1.0 / ai));
    }
    if (s <= 6.0) {
        double a = 3.0 * exp(-s);
        return log(exp(-a) + 2.0 * r * sinh(a)) / a;
    }
    return 2.0 * r - 1.0;
}

/* p* (momentum of 1 in the centre-of-momentum frame) turned by the angles (chi, phi). */
EMPIC_HD void collide_turn(double ps[3], double cx, double phi)
{
    double sx = sqrt(fmax(0.0, 1.0 - cx * cx)), cp = cos(phi), sp = sin(phi);
    double pm = sqrt(ps[0] * ps[0] + ps[1] * ps[1] + ps[2] * ps[2]);
    double pp = sqrt(ps[0] * ps[0] + ps[1] * ps[1]);
    double o[3];
    if (pp > 1e-12 * pm) {
        o[0] = ps[0] * ps[2] / pp * sx * cp + ps[1] * pm / pp * sx * sp + ps[0] * cx;
        o[1] = ps[1] * ps[2] / pp * sx * cp - ps[0] * pm / pp * sx * sp + ps[1] * cx;
        o[2] = -pp * sx * cp + ps[2] * cx;
    } else { /* p* along z: any perpendicular pair of axes will do */
        o[0] = pm * sx * cp;
        o[1] = pm * sx * sp;
        o[2] = ps[2] * cx;
    }
    ps[0] = o[0];
    ps[1] = o[1];
    ps[2] = o[2];
}

/* The normalised path s of a pair (Pérez Eqs. 9 and 22 in the cross-section form, with the
 * Coulomb logarithm from the cell's bmax when par->lnl is 0, floor 2, and the cap of Eq. 23).
 * In: the COM quantities. n12: density factor max(w1, w2) min(Na, Nb), times the pair's
 * share of the time. */
EMPIC_HD double collide_s(const collide_par *p, const collide_cell *c, double q1q2, double m1,
                          double m2, double g1, double g2, double g1s, double g2s, double psm,
                          double n12)
{
    double mu = g1s * m1 * g2s * m2 / (g1s * m1 + g2s * m2);
    double vrel = psm / mu;                                 /* |v1* - v2*| */
    double vinv = vrel / (1.0 + psm * psm / (m1 * g1s * m2 * g2s));
    double b0 = 2.0 * p->re_kp * fabs(q1q2) / (mu * vrel * vinv); /* in c/w_p */
    double lnl = p->lnl;
    if (lnl <= 0.0) {
        double bmin = fmax(0.5 * b0, 0.5 * p->lc_kp / psm);
        lnl = fmax(2.0, 0.5 * log(1.0 + c->bmax2 / (bmin * bmin)));
    }
    double s = M_PI * b0 * b0 * lnl * n12 / (4.0 * M_PI * p->re_kp) * p->dt * vrel * g1s * g2s /
               (g1 * g2);
    double cap = c->cap * n12 * vrel;
    return s < cap ? s : cap;
}

/* One pair: momenta u1, u2 (per mass) of masses m1, m2, charges' product q1q2, weights w1, w2
 * scattered in place (each of them or not, by the rejection rule). */
EMPIC_HD void collide_pair(double u1[3], double u2[3], double m1, double m2, double q1q2,
                           double w1, double w2, double n12, const collide_par *p,
                           const collide_cell *c, rng_stream *r)
{
    double d2 = 0.0, p1[3], p2[3], pt[3];
    for (int a = 0; a < 3; a++) {
        p1[a] = m1 * u1[a];
        p2[a] = m2 * u2[a];
        pt[a] = p1[a] + p2[a];
        d2 += (u1[a] - u2[a]) * (u1[a] - u2[a]);
    }
    if (d2 == 0.0)
        return;
    double g1 = sqrt(1.0 + u1[0] * u1[0] + u1[1] * u1[1] + u1[2] * u1[2]);
    double g2 = sqrt(1.0 + u2[0] * u2[0] + u2[1] * u2[1] + u2[2] * u2[2]);
    double mg = m1 * g1 + m2 * g2, vc[3], vc2 = 0.0, vv1 = 0.0, vv2 = 0.0;
    for (int a = 0; a < 3; a++) {
        vc[a] = pt[a] / mg;
        vc2 += vc[a] * vc[a];
        vv1 += vc[a] * u1[a] / g1;
        vv2 += vc[a] * u2[a] / g2;
    }
    double gc = 1.0 / sqrt(1.0 - vc2), f = gc * gc / (1.0 + gc); /* (gc - 1) / vc^2 */
    double g1s = (1.0 - vv1) * gc * g1, g2s = (1.0 - vv2) * gc * g2, ps[3], psm = 0.0;
    double l1 = (f * vv1 - gc) * m1 * g1;
    for (int a = 0; a < 3; a++) {
        ps[a] = p1[a] + vc[a] * l1;
        psm += ps[a] * ps[a];
    }
    psm = sqrt(psm);
    if (!(psm > 0.0))
        return;
    double s = collide_s(p, c, q1q2, m1, m2, g1, g2, g1s, g2s, psm, n12);
    double r1 = rng_uniform(r), r2 = rng_uniform(r), phi = 2.0 * M_PI * rng_uniform(r);
    collide_turn(ps, collide_cos_chi(s, r1, r2), phi);
    double vp = vc[0] * ps[0] + vc[1] * ps[1] + vc[2] * ps[2];
    double k1 = f * vp + m1 * g1s * gc, wmax = w1 > w2 ? w1 : w2;
    int move1 = w2 >= rng_uniform(r) * wmax, move2 = w1 >= rng_uniform(r) * wmax;
    for (int a = 0; a < 3; a++) {
        double p1f = ps[a] + vc[a] * k1; /* 2 takes the rest: the sum is kept exactly */
        if (move1)
            u1[a] = p1f / m1;
        if (move2)
            u2[a] = (pt[a] - p1f) / m2;
    }
}

#endif
