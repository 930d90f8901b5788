/* ebalsum.c - the energy balance's sums over the ranks (ebalsum.h). */
#include "ebalsum.h"
#include "comm.h"
#include "empic.h"
#include "fbnd.h"

#include <string.h>

double *ebalsum_all(sim *S)
{
    S->be->flows(S->be_ctx, &S->st);
    if (!S->bal_ck)
        S->bal_ck = empic_alloc(S->bal_n * sizeof(double), "energy balance");
    memcpy(S->bal_ck, S->st.flow, S->bal_n * sizeof(double));
    comm_sum_double(S->bal_ck, S->bal_n);
    return S->bal_ck;
}

void ebalsum_own(sim *S)
{
    const pic_state *st = &S->st;
    const clusters *cl = &S->cl;
    const ebal_region *r = &st->reg;
    for (int k = 0; k < st->nterm; k++)
        for (int sl = 0; sl < st->nslot; sl++) {
            int axis, node;
            if (k < EBAL_SIDES) {
                axis = k / 2;
                node = k & 1 ? r->hi[axis] : r->lo[axis];
            } else {
                const laser_src *L = &S->f.fb->lasers[(k - EBAL_SIDES) / 2];
                axis = L->axis;
                node = laser_line_of(L, (k - EBAL_SIDES) % 2 == 0, 0, 1.0, 1.0, 1.0, 0).at;
            }
            const int n = axis ? cl->ncx : cl->ncy;
            if (node < 0 || node >= (axis ? S->d.ny : S->d.nx) || sl >= n ||
                !cl->own[ebal_cluster(axis, node, sl, cl->cx_of, cl->cy_of, cl->ncx)])
                st->flow[(size_t)k * st->nslot + sl] = 0.0;
        }
    for (int s = 0; s < S->nsp; s++)
        for (int c = 0; c < cl->n; c++)
            if (!cl->own[c])
                st->lost[(size_t)s * cl->n + c] = S->gain[(size_t)s * cl->n + c] = 0.0;
}
