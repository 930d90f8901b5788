/* sort.c - incremental bi-cluster sort on the CPU (Kong et al. 2011, §2.4, Figs. 4 and 6).
 *
 * Particles move less than a cell per step, so each one stays in its cluster or moves to one
 * of the 8 neighbours; the move wrote that as a migration code. Four passes of disjoint
 * cluster pairs exchange the movers: (0,1),(2,3).. along x, then (1,2),(3,4)..,(n-1,0),
 * then the same along y. Diagonal movers take the x passes, then the y passes. Cost is
 * O(movers) plus one scan of each cluster per pass. */
#include "sort.h"
#include "empic.h"
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

void sort_prepare(species *s, const clusters *cl)
{
    int *need = empic_alloc((size_t)cl->n * sizeof(int), "sort table");
    int over = 0;
#pragma omp parallel for reduction(+ : over)
    for (int c = 0; c < cl->n; c++) {
        int leavers[4];
        need[c] = sort_need(s->hist, s->count[c], c % cl->ncx, c / cl->ncx, cl->ncx, cl->ncy,
                            leavers);
        over += need[c] > s->cap[c];
    }
    if (over)
        species_relayout(s, cl, need);
    free(need);
}

/* The first slot in [i, end) whose code has `dir` in the field at `shift`, else end. Eight
 * codes per 64-bit word: most particles stay, so most words hold no mover. */
static inline int next_mover(const uint8_t *code, int i, int end, unsigned dir, int shift)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull;
    for (; i + 8 <= end; i += 8) {
        uint64_t v;
        memcpy(&v, code + i, sizeof v);
        v = ((v >> shift) & (3u * ones)) ^ (dir * ones); /* a byte is 0 where the code matches */
        uint64_t hit = ~(v | v >> 1) & ones;
        if (hit)
            return i + __builtin_ctzll(hit) / 8;
    }
#endif
    for (; i < end; i++)
        if (((code[i] >> shift) & 3u) == dir)
            return i;
    return end;
}

/* Move the particles of cluster a whose code has `dir` in the field selected by `shift`
 * (0: x bits, 2: y bits) to the end of cluster b, filling each hole from a's end. */
static void exchange(species *s, int a, int b, unsigned dir, int shift)
{
    int i = s->start[a], end = s->start[a] + s->count[a];
    int dst = s->start[b] + s->count[b];
    while ((i = next_mover(s->code, i, end, dir, shift)) < end) {
        unsigned c = s->code[i];
        species_copy(s, (size_t)dst, (size_t)i);
        s->code[dst] = (uint8_t)(c & ~(3u << shift));
        dst++;
        end--;
        if (i != end)
            species_copy(s, (size_t)i, (size_t)end);
    }
    s->count[a] = end - s->start[a];
    s->count[b] = dst - s->start[b];
}

/* One pass: pairs (lo, lo+1) for lo = first, first+2, ... along x (axis 0) or y (axis 1). */
static void pass(species *s, const clusters *cl, int axis, int first)
{
    const int n = axis ? cl->ncy : cl->ncx, m = axis ? cl->ncx : cl->ncy;
    const int periodic = axis ? cl->periodic_y : cl->periodic_x;
    const int pairs = n / 2, shift = axis ? 2 : 0;
#pragma omp parallel for schedule(dynamic, 4)
    for (int q = 0; q < pairs * m; q++) {
        int lo = first + 2 * (q % pairs), other = q / pairs, hi = lo + 1;
        if (hi == n) {
            if (!periodic)
                continue;
            hi = 0;
        }
        int a = axis ? cluster_id(cl, other, lo) : cluster_id(cl, lo, other);
        int b = axis ? cluster_id(cl, other, hi) : cluster_id(cl, hi, other);
        exchange(s, a, b, 1u, shift); /* +1 movers: lo -> hi */
        exchange(s, b, a, 2u, shift); /* -1 movers: hi -> lo */
    }
}

void sort_clusters(species *s, const clusters *cl)
{
    sort_prepare(s, cl);
    pass(s, cl, 0, 0);
    pass(s, cl, 0, 1);
    pass(s, cl, 1, 0);
    pass(s, cl, 1, 1);
}
