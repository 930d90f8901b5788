/* cpu_sort.c - incremental bi-cluster sort on the CPU (Kong et al. 2011, §2.4, Figs. 4 and 6).
 *
 * Particles move less than a cell per step, so each one stays in its cluster or moves to one
 * of the 8 neighbours; the move wrote that as a migration code. Four passes of disjoint
 * cluster pairs exchange the movers: (0,1),(2,3).. along x, then (1,2),(3,4)..,(n-1,0),
 * then the same along y. Diagonal movers take the x passes, then the y passes. Cost is
 * O(movers) plus one scan of each cluster per pass.
 *
 * Over several ranks (design.md §12) each rank's share starts at an even cluster, so only
 * the shifted passes pair clusters of two ranks: the left cluster's rank sends its movers
 * to the right cluster's rank, which appends them and then sends back its own -1 movers
 * (the hole filling takes from the segment's end, arrivals included): the same operations
 * in the same order as on one rank, so the particle order in every cluster is the same. */
#include "cpu_sort.h"
#include "cluster.h"
#include "comm.h"
#include "empic.h"

#include <stdlib.h>
#include <string.h>

/* Which passes cluster c has movers for, from the histograms h (this rank's and its
 * neighbours'): bit 0 +x, 1 -x (its own), 2 +y, 3 -y (its own and those the x passes bring
 * from the clusters beside it, counted whether or not they arrive). A pass skips the scan of
 * a cluster without: a cold plasma's sort then reads no codes. */
static unsigned cluster_moves(const int *h, const clusters *cl, int c)
{
    const int cx = c % cl->ncx, cy = c / cl->ncx;
    const int *o = h + 9 * (size_t)c;
    const int *l = h + 9 * (size_t)cluster_id(cl, wrap_index(cx - 1, cl->ncx), cy);
    const int *r = h + 9 * (size_t)cluster_id(cl, wrap_index(cx + 1, cl->ncx), cy);
    unsigned m = 0;
    for (int d = -1; d <= 1; d++) {
        m |= (o[mig_bin(1, d)] ? 1u : 0u) | (o[mig_bin(-1, d)] ? 2u : 0u);
        m |= (o[mig_bin(d, 1)] || l[mig_bin(1, 1)] || r[mig_bin(-1, 1)]) ? 4u : 0u;
        m |= (o[mig_bin(d, -1)] || l[mig_bin(1, -1)] || r[mig_bin(-1, -1)]) ? 8u : 0u;
    }
    return m;
}

void sort_prepare(species *s, const clusters *cl, unsigned char *moves)
{
    int *need = empic_alloc((size_t)cl->n * sizeof(int), "sort table");
    const int *hist = s->hist;
    int *all = NULL, over = 0;
    if (comm_size() > 1) { /* the neighbours' arrivals: their histograms around this share */
        all = empic_alloc((size_t)cl->n * 9 * sizeof(int), "sort table");
        memcpy(all, s->hist, (size_t)cl->n * 9 * sizeof(int));
        clusters_hist_halo(cl, all);
        hist = all;
    }
#pragma omp parallel for reduction(+ : over)
    for (int c = 0; c < cl->n; c++) {
        int leavers[4];
        need[c] = cl->own[c] ? sort_need(hist, s->count[c], c % cl->ncx, c / cl->ncx, cl->ncx,
                                         cl->ncy, leavers)
                             : 0;
        over += need[c] > s->cap[c];
        if (moves)
            moves[c] = (unsigned char)cluster_moves(hist, cl, c);
    }
    if (over)
        species_relayout(s, cl, s->count, need, hist);
    free(need);
    free(all);
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

/* A particle on its way to another rank; code: the migration code in bits 0-7 and the
 * charge state of an ionizing species in bits 8-15. */
typedef struct {
    uint32_t cell, code;
    float x, y, ux, uy, uz, w;
    uint64_t id;
} mover;

static void mover_put(species *s, size_t p, const mover *m)
{
    s->cell[p] = m->cell;
    s->x[p] = m->x;
    s->y[p] = m->y;
    s->ux[p] = m->ux;
    s->uy[p] = m->uy;
    s->uz[p] = m->uz;
    s->w[p] = m->w;
    s->code[p] = (uint8_t)m->code;
    if (s->id)
        s->id[p] = m->id;
    if (s->z)
        s->z[p] = (uint8_t)(m->code >> 8);
}

/* Move the particles of cluster a whose code has `dir` in the field selected by `shift`
 * (0: x bits, 2: y bits) out, filling each hole from a's end: to the end of cluster b, or
 * into out (b < 0); the code's field cleared. Returns how many moved. */
static int exchange(species *s, int a, int b, unsigned dir, int shift, mover *out)
{
    int i = s->start[a], end = s->start[a] + s->count[a], n = 0;
    int dst = b < 0 ? 0 : s->start[b] + s->count[b];
    while ((i = next_mover(s->code, i, end, dir, shift)) < end) {
        unsigned c = s->code[i] & ~(3u << shift);
        if (out)
            out[n] = (mover){s->cell[i], c | (s->z ? (unsigned)s->z[i] << 8 : 0u), s->x[i], s->y[i], s->ux[i], s->uy[i], s->uz[i],
                             s->w[i], s->id ? s->id[i] : 0};
        else {
            species_copy(s, (size_t)dst, (size_t)i);
            s->code[dst++] = (uint8_t)c;
        }
        n++;
        end--;
        if (i != end)
            species_copy(s, (size_t)i, (size_t)end);
    }
    s->count[a] = end - s->start[a];
    if (!out)
        s->count[b] = dst - s->start[b];
    return n;
}

/* Cluster `at` along the pass axis, `other` across it. */
static int pair_cluster(const clusters *cl, int axis, int at, int other)
{
    return axis ? cluster_id(cl, other, at) : cluster_id(cl, at, other);
}

/* Half of a shifted pass across a rank border: the `dir` movers of this rank's clusters at
 * position `mine` along the axis (one per row or column [o0, o1) across it) go to rank
 * `to`, and those that rank `from` sends arrive at the end of this rank's clusters at
 * `dest`. Returns sent less received. */
static long long border_half(species *s, const clusters *cl, int axis, int o0, int o1,
                             int mine, int to, int dest, int from, unsigned dir)
{
    const int m = o1 - o0, shift = axis ? 2 : 0;
    int *cnt = empic_calloc(2 * (size_t)m, sizeof(int), "sort exchange");
    size_t total = 0;
    for (int o = o0; to >= 0 && o < o1; o++)
        total += (size_t)s->count[pair_cluster(cl, axis, mine, o)];
    mover *out = empic_alloc((total ? total : 1) * sizeof(mover), "sort exchange");
    size_t n = 0;
    for (int o = o0; to >= 0 && o < o1; o++)
        n += (size_t)(cnt[o - o0] = exchange(s, pair_cluster(cl, axis, mine, o), -1, dir,
                                              shift, out + n));
    comm_sendrecv(cnt, (size_t)m * sizeof(int), to, cnt + m, (size_t)m * sizeof(int), from, 1);
    size_t in = 0;
    for (int o = 0; from >= 0 && o < m; o++)
        in += (size_t)cnt[m + o];
    mover *got = empic_alloc((in ? in : 1) * sizeof(mover), "sort exchange");
    comm_sendrecv(out, n * sizeof(mover), to, got, in * sizeof(mover), from, 2);
    size_t k = 0;
    for (int o = 0; from >= 0 && o < m; o++) {
        const int c = pair_cluster(cl, axis, dest, o0 + o);
        if (s->count[c] + cnt[m + o] > s->cap[c])
            EMPIC_DIE("species %s: cluster %d has room for %d particles, %d arrive from rank "
                      "%d: a bug in empic (sort_prepare), please report it", s->name, c,
                      s->cap[c] - s->count[c], cnt[m + o], from);
        for (int q = 0; q < cnt[m + o]; q++)
            mover_put(s, (size_t)(s->start[c] + s->count[c]++), &got[k++]);
    }
    free(cnt);
    free(out);
    free(got);
    return (long long)n - (long long)in;
}

/* One pass: pairs (lo, lo+1) for lo = first, first+2, ... along x (axis 0) or y (axis 1);
 * this rank's pairs here, the pairs it shares with the ranks on either side through
 * border_half. Returns particles sent less received. */
static long long pass(species *s, const clusters *cl, int axis, int first,
                      const unsigned char *moves)
{
    const int n = axis ? cl->ncy : cl->ncx, pairs = n / 2, shift = axis ? 2 : 0;
    const int periodic = axis ? cl->periodic_y : cl->periodic_x;
    const int lo0 = axis ? cl->cy0 : cl->cx0, hi0 = axis ? cl->cy1 : cl->cx1;
    const int o0 = axis ? cl->cx0 : cl->cy0, o1 = axis ? cl->cx1 : cl->cy1, m = o1 - o0;
#pragma omp parallel for schedule(dynamic, 4)
    for (int q = 0; q < pairs * m; q++) {
        int lo = first + 2 * (q % pairs), other = o0 + q / pairs, hi = lo + 1;
        if (hi == n) {
            if (!periodic)
                continue;
            hi = 0;
        }
        if (lo < lo0 || lo >= hi0 || hi < lo0 || hi >= hi0)
            continue; /* a cluster of another rank: border_half */
        int a = pair_cluster(cl, axis, lo, other), b = pair_cluster(cl, axis, hi, other);
        if (moves[a] & (1u << 2 * axis))
            exchange(s, a, b, 1u, shift, NULL); /* +1 movers: lo -> hi */
        if (moves[b] & (2u << 2 * axis))
            exchange(s, b, a, 2u, shift, NULL); /* -1 movers: hi -> lo */
    }
    const int span = hi0 - lo0;
    if (!first || span == n)
        return 0; /* the unshifted pairs never cross a share; one rank holds the axis */
    /* the pair (hi0 - 1, hi0) with the rank above, (lo0 - 1, lo0) with the rank below */
    const int up = cl->nb[2 * axis + 1], down = cl->nb[2 * axis];
    long long net = border_half(s, cl, axis, o0, o1, hi0 - 1, up, lo0, down, 1u);
    net += border_half(s, cl, axis, o0, o1, lo0, down, hi0 - 1, up, 2u);
    return net;
}

long long sort_clusters(species *s, const clusters *cl)
{
    unsigned char *moves = empic_alloc((size_t)cl->n, "sort table");
    sort_prepare(s, cl, moves);
    long long net = pass(s, cl, 0, 0, moves);
    net += pass(s, cl, 0, 1, moves);
    net += pass(s, cl, 1, 0, moves);
    net += pass(s, cl, 1, 1, moves);
    free(moves);
    return net;
}
