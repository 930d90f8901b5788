/* probe.h - field probes (diagnostics.probes): a value of the fields at a point, gathered as
 * a particle at that point gathers it (particle.h's gather_yee), shared by the CPU backend
 * and the CUDA kernel. */
#ifndef PROBE_H
#define PROBE_H

#include "particle.h"

/* The quantities a probe records, in this order (deck names DECK_PROBE_FIELDS). */
enum { PROBE_EX = 0, PROBE_EY, PROBE_EZ, PROBE_BX, PROBE_BY, PROBE_BZ, PROBE_JX, PROBE_JY,
       PROBE_JZ, PROBE_RHO, PROBE_COUNT };

/* What a probe call must prepare first (backend.h's `probe`): the charge density deposited,
 * J's guard cells filled from the neighbours (a point near a rank's edge reads them). */
enum { PROBE_NEED_RHO = 1, PROBE_NEED_J = 2 };

/* One value asked for: quantity m (PROBE_*) at offset (x, y) in [0, 1) of the rank's cell
 * whose linear index (emf_idx) is k. */
typedef struct {
    int k, m;
    float x, y;
} probe_req;

/* Quantity m from its array a (the rank's layout, row stride s) at offset (x, y) of cell k:
 * E and B at their Yee points with the external field's array g of the component where it
 * varies in space (gather_yee_ext: the particle gather; g NULL otherwise), Jx, Jy, Jz at
 * the points of Ex, Ey, Ez (where they are stored), rho at the nodes (as Ez). */
EMPIC_HD float probe_gather(const float *a, const float *g, int m, int k, int s, float x,
                            float y)
{
    const int yee = m < PROBE_JX ? m : m < PROBE_RHO ? m - PROBE_JX : YEE_EZ;
    return gather_yee_ext(a, g, yee, k, s, x, y);
}

#endif
