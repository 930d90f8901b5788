/* pbnd.h - per-particle rules of the non-periodic particle boundaries, shared by both
 * backends. A wall sits on the box edge (node 0 or node n of an axis). A particle that has
 * crossed it during the move (at most one cell, so its raw cell is -1 or n) is
 *   absorbing:  removed (migration code PBND_DROP; the sort's compaction drops it);
 *   reflecting: mirrored about the wall, normal momentum reversed;
 *   thermal:    mirrored about the wall and re-emitted with a fresh momentum from the
 *               species' thermal spread: tangential components Gaussian (u_th), the normal
 *               one flux-weighted, |u_n| = u_th sqrt(-2 ln U), pointing inward.
 * The current of the move is kept charge-conserving by folding the deposit beyond the wall
 * back as its mirror image (normal component negated), which is exactly the deposit of the
 * reflected path (DESIGN §5 shapes are linear). */
#ifndef PBND_H
#define PBND_H

#include "empic.h"
#include "rng.h"
#include <math.h>

#define PBND_DROP 15u /* migration code of a particle to remove (both fields 3: no sort pass) */

/* Mirror about the low wall (node 0): raw cell -1 with offset o becomes position 1 - o;
 * returns the new cell (0, or 1 when o == 0) and sets the offset. */
EMPIC_HD int pbnd_mirror_lo(float *o)
{
    float m = 1.0f - *o;
    int one = m >= 1.0f;
    *o = one ? 0.0f : m;
    return one;
}

/* Mirror about the high wall (node n): raw cell n with offset o becomes position n - o, in
 * cell n - 1 (a particle exactly on the wall is put just inside it). */
EMPIC_HD int pbnd_mirror_hi(int n, float *o)
{
    float m = 1.0f - *o;
    *o = m < 1.0f ? m : 0.99999994f;
    return n - 1;
}

/* Thermal re-emission: u from the spread uth, the component along `axis` pointing along
 * `inward` (+1 at a low wall, -1 at a high wall). */
EMPIC_HD void pbnd_thermal(rng_stream *r, const float uth[3], int axis, float inward, float u[3])
{
    for (int k = 0; k < 3; k++)
        u[k] = uth[k] * rng_normal(r);
    u[axis] = inward * uth[axis] * sqrtf(-2.0f * logf(rng_uniform(r)));
}

/* RNG stream of a thermal re-emission: keyed by the run's seed (tagged), species, step,
 * slot and axis, so a run is the same for any thread count. */
EMPIC_HD void pbnd_rng(rng_stream *r, unsigned long long seed, unsigned species, long step,
                       unsigned slot, int axis)
{
    rng_init(r, seed ^ 0x7468726d616c6277ULL, species + 64u * (unsigned)(axis + 1),
             (uint32_t)step, slot);
}

#endif
