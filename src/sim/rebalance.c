/* rebalance.c - dynamic load balancing of the ranks (rebalance.h). */
#include "rebalance.h"
#include "column.h"
#include "comm.h"
#include "empic.h"
#include "memory.h"
#include "reshare.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Borders b[0..p] of p parts of m units (cluster pairs) with loads w, each part at least one
 * unit: border k where the prefix sum comes nearest k/p of the total (the first such unit),
 * as cluster indices (2 per unit). */
static void partition(const double *w, int m, int p, int *b)
{
    double *pre = empic_alloc((size_t)(m + 1) * sizeof(double), "rebalance");
    pre[0] = 0.0;
    for (int u = 0; u < m; u++)
        pre[u + 1] = pre[u] + w[u];
    int at = 0;
    b[0] = 0;
    for (int k = 1; k < p; k++) {
        const double t = pre[m] * k / p;
        int best = at + 1;
        for (int u = at + 2; u <= m - (p - k); u++)
            if (fabs(pre[u] - t) < fabs(pre[best] - t))
                best = u;
        b[k] = 2 * (at = best);
    }
    b[p] = 2 * m;
    free(pre);
}

/* The least and the most loaded rank's load under borders bx, by (w: load per cluster). */
static void extremes(const clusters *cl, const double *w, const int *bx, const int *by,
                     double mm[2])
{
    const int size = cl->nrx * cl->nry;
    double *load = empic_calloc((size_t)size, sizeof(double), "rebalance");
    for (int c = 0; c < cl->n; c++)
        load[clusters_owner(cl, bx, by, c)] += w[c];
    mm[0] = mm[1] = load[0];
    for (int r = 1; r < size; r++) {
        mm[0] = load[r] < mm[0] ? load[r] : mm[0];
        mm[1] = load[r] > mm[1] ? load[r] : mm[1];
    }
    free(load);
}

/* The borders that balance the mobile particles per cluster (count: every species' counts
 * of all ranks) into bx, by; the extremes of the loads before and after into mm. Returns
 * the mobile particles of all ranks. */
static double borders_for(const sim *S, const int *count, int *bx, int *by, double mm[4])
{
    const clusters *cl = &S->cl;
    const int n = cl->n;
    double *w = empic_calloc((size_t)n + cl->ncx / 2 + cl->ncy / 2, sizeof(double), "rebalance");
    double *col = w + n, *row = col + cl->ncx / 2;
    for (int s = 0; s < S->d.nspecies; s++)
        for (int c = 0; !S->d.species[s].immobile && c < n; c++)
            w[c] += count[(size_t)s * n + c];
    double total = 0.0;
    for (int c = 0; c < n; c++) {
        col[c % cl->ncx / 2] += w[c];
        row[c / cl->ncx / 2] += w[c];
        total += w[c];
    }
    partition(col, cl->ncx / 2, cl->nrx, bx);
    partition(row, cl->ncy / 2, cl->nry, by);
    extremes(cl, w, cl->bx, cl->by, mm);
    extremes(cl, w, bx, by, mm + 2);
    free(w);
    return total;
}

/* borders_for the run's particles now (the backend's counts, or the host's before it opens). */
static void borders(sim *S, int *bx, int *by, double mm[4])
{
    const int n = S->cl.n, nsp = S->nsp;
    int *count = empic_alloc((size_t)nsp * n * sizeof(int), "rebalance");
    if (S->be_ctx)
        S->be->counts(S->be_ctx, &S->st, count);
    else /* before the backend opens: the host's */
        for (int s = 0; s < nsp; s++)
            memcpy(count + (size_t)s * n, S->sp[s].count, (size_t)n * sizeof(int));
    comm_sum_int(count, (size_t)nsp * n);
    borders_for(S, count, bx, by, mm);
    free(count);
}

/* Whether the split whose busiest rank holds mm[3] lowers the busiest rank's load mm[1] by
 * half the threshold of the mean load (total / ranks) at least: small drifts (a tie between
 * two borders) do not move the borders back and forth. */
static int pays(const deck *d, const double mm[4], double total)
{
    return mm[1] - mm[3] >= 0.5 * d->balance_threshold * total / comm_size() && mm[3] < mm[1];
}

/* Whether every rank has the memory for its share of plan p (host: its figure times the
 * ranks of its node against what the node has available; device: the backend's); else the
 * warning (the first time) naming the first rank that lacks it. */
static int fits(sim *S, const reshare_plan *p)
{
    const int size = comm_size(), me = comm_rank();
    char src[64];
    double *v = empic_calloc(3 * (size_t)size, sizeof(double), "rebalance");
    v[3 * me] = p->host_bytes * comm_node_ranks();
    v[3 * me + 1] = memory_available(src, sizeof src);
    /* before the backend opens, its open checks the device's memory for the share */
    v[3 * me + 2] = S->be_ctx && !S->be->fits(S->be_ctx, &S->st, p->size, p->alloc, p->np);
    comm_sum_double(v, 3 * (size_t)size); /* each rank's entries, exactly */
    int r = 0;
    while (r < size && !(v[3 * r + 1] >= 0 && v[3 * r] > v[3 * r + 1]) && !v[3 * r + 2])
        r++;
    if (r < size && me == 0 && S->rebal_refused == 0) {
        if (v[3 * r + 2])
            fprintf(stderr, "empic: warning: step %ld: the ranks keep their borders: the GPU "
                            "of rank %d lacks the memory for its share of the new split; "
                            "later refusals are counted in timing.json\n", S->step, r);
        else
            fprintf(stderr, "empic: warning: step %ld: the ranks keep their borders: rank %d "
                            "would need %.1f MiB of host memory for its share of the new split "
                            "(with the other ranks of its node), %.1f MiB are available there; "
                            "later refusals are counted in timing.json\n", S->step, r,
                    v[3 * r] / 1048576.0, v[3 * r + 1] / 1048576.0);
    }
    free(v);
    S->rebal_refused += r < size;
    return r == size;
}

/* The borders as cells, "a b c" into buf. */
static void cells_text(const int *first, const int *b, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int k = 0; k <= n && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%d", k ? " " : "", first[b[k]]);
}

/* Rank 0 notes the rebalance (the run log, timing.json). */
static void note(sim *S, const int *bx, const int *by, const double mm[4], double seconds,
                 const double part_s[3])
{
    const clusters *cl = &S->cl;
    if (comm_rank() != 0)
        return;
    S->rebal = realloc(S->rebal, (size_t)(S->nrebal + 1) * sizeof *S->rebal);
    if (!S->rebal)
        EMPIC_DIE("out of host memory noting a rebalance");
    rebalance_entry *e = &S->rebal[S->nrebal++];
    e->step = S->step;
    e->seconds = seconds;
    for (int k = 0; k < 3; k++)
        e->part_s[k] = part_s[k];
    for (int k = 0; k < 4; k++)
        e->load[k] = (long long)mm[k];
    e->cells = empic_alloc((size_t)(cl->nrx + cl->nry + 2) * sizeof(int), "rebalance");
    for (int k = 0; k <= cl->nrx; k++)
        e->cells[k] = cl->x0[bx[k]];
    for (int k = 0; k <= cl->nry; k++)
        e->cells[cl->nrx + 1 + k] = cl->y0[by[k]];
    if (S->quiet)
        return;
    char x[512], y[512];
    cells_text(cl->x0, bx, cl->nrx, x, sizeof x);
    cells_text(cl->y0, by, cl->nry, y, sizeof y);
    printf("empic: step %ld: ranks rebalanced: mobile particles per rank %lld to %lld, now %lld "
           "to %lld; borders at cells x = %s, y = %s (%.3f s: fetch %.3f, move %.3f, open %.3f)\n",
           S->step, e->load[0], e->load[1], e->load[2], e->load[3], x, y, seconds, part_s[0],
           part_s[1], part_s[2]);
    fflush(stdout);
}

/* The move to borders bx, by when every rank can hold its share: the state fetched, the
 * backend closed, the state moved (reshare.h) and the backend opened on it (part_s: the
 * seconds of these three, the slowest rank's); before the backend opens (S->be_ctx NULL),
 * the host's state moved alone. 1 when moved. */
static int move(sim *S, const int *bx, const int *by, double part_s[3])
{
    const backend *be = S->be;
    const int open = S->be_ctx != NULL;
    double t = omp_get_wtime();
    column_drop(&S->ahead); /* made for the old share */
    if (writer_wait(&S->out)) /* a dump written from the host copies (it said why) */
        S->io_failed = 1;
    if (open) {
        be->finish(S->be_ctx, &S->st);
        be->fetch_fields(S->be_ctx, &S->st, NULL);
        be->fetch_particles(S->be_ctx, &S->st);
        be->flows(S->be_ctx, &S->st);
        if (S->st.avg)
            be->avg_fetch(S->be_ctx, &S->st);
    }
    reshare_plan p;
    reshare_plan_make(S, bx, by, &p);
    if (!fits(S, &p)) {
        reshare_plan_free(&p);
        return 0;
    }
    part_s[0] = omp_get_wtime() - t;
    t = omp_get_wtime();
    S->st.reopen = 1; /* the backend keeps what does not depend on the share */
    if (open)
        be->close(S->be_ctx, &S->st);
    S->be_ctx = NULL;
    reshare(S, &p);
    part_s[1] = omp_get_wtime() - t;
    t = omp_get_wtime();
    int bad = open ? be->open(&S->st, &S->be_ctx) : 0;
    S->st.reopen = 0;
    part_s[2] = omp_get_wtime() - t;
    comm_max_double(part_s, 3);
    comm_max_int(&bad, 1);
    if (bad)
        EMPIC_DIE("the %s backend could not take this rank's share after the rebalance at "
                  "step %ld", be->name, S->step);
    return 1;
}

int rebalance_due(const sim *S, int now)
{
    const deck *d = &S->d;
    return d->balance_every > 0 && comm_size() > 1 && S->step < d->steps &&
           (now || S->step % d->balance_every == 0);
}

void rebalance_check(sim *S, int now)
{
    const deck *d = &S->d;
    if (!rebalance_due(S, now))
        return;
    const double t0 = omp_get_wtime();
    double load[2] = {(double)sim_particles(S), 0.0};
    load[1] = load[0];
    comm_max_double(load, 1);
    comm_sum_double(load + 1, 1);
    if (load[0] > (1.0 + d->balance_threshold) * load[1] / comm_size()) {
        const clusters *cl = &S->cl;
        int *b = empic_alloc((size_t)(cl->nrx + cl->nry + 2) * sizeof(int), "rebalance");
        double mm[4], part_s[3];
        borders(S, b, b + cl->nrx + 1, mm);
        if (pays(d, mm, load[1]) && move(S, b, b + cl->nrx + 1, part_s))
            note(S, b, b + cl->nrx + 1, mm, omp_get_wtime() - t0, part_s);
        free(b);
    }
    S->wall_s += omp_get_wtime() - t0;
}

int rebalance_start(sim *S, int *count)
{
    const deck *d = &S->d;
    clusters *cl = &S->cl;
    const int n = cl->n;
    double mm[4], part_s[3] = {0.0, 0.0, 0.0};
    size_t unit[DECK_MAX_SPECIES];
    for (int s = 0; s < d->nspecies; s++) /* the count that species_init would make */
        unit[s] = species_load_counts(d, s, cl, count + (size_t)s * n);
    comm_sum_int(count, (size_t)d->nspecies * n);
    const double t0 = omp_get_wtime();
    int *b = empic_alloc((size_t)(cl->nrx + cl->nry + 2) * sizeof(int), "rebalance");
    const int *bx = b, *by = b + cl->nrx + 1;
    const double total = borders_for(S, count, b, b + cl->nrx + 1, mm);
    reshare_plan share; /* for fits: this rank's new share on the host */
    memset(&share, 0, sizeof share);
    share.host_bytes = reshare_load_bytes(S, bx, by, count, unit);
    const int moved = mm[1] > (1.0 + d->balance_threshold) * total / comm_size() &&
                      pays(d, mm, total) && fits(S, &share);
    if (moved) { /* nothing to move: nothing is loaded yet */
        clusters_set_borders(cl, b, b + cl->nrx + 1);
        note(S, b, b + cl->nrx + 1, mm, omp_get_wtime() - t0, part_s);
    }
    free(b);
    return moved;
}

void rebalance_describe(const deck *d, int ranks, FILE *o)
{
    if (d->balance_every <= 0) {
        fprintf(o, "# load balancing: off (parallel.balance)\n");
        return;
    }
    fprintf(o, "# load balancing: every %ld steps, when the busiest rank holds more than %g "
               "times the mean mobile particles per rank, the rank borders move by whole "
               "cluster pairs%s; the memory figures are those of an even share, a split a "
               "rank cannot hold is refused\n", d->balance_every, 1.0 + d->balance_threshold,
            ranks > 1 ? "" : " (one rank: nothing to balance)");
}

void rebalance_json(const sim *S, FILE *m)
{
    const int nb = S->cl.nrx + S->cl.nry + 2;
    fprintf(m, "  \"balance\": ");
    if (S->d.balance_every > 0)
        fprintf(m, "{\"every\": %ld, \"threshold\": %.9g},\n", S->d.balance_every,
                S->d.balance_threshold);
    else
        fprintf(m, "null,\n");
    fprintf(m, "  \"rebalances_refused\": %d,\n  \"rebalances\": [", S->rebal_refused);
    for (int k = 0; k < S->nrebal; k++) {
        const rebalance_entry *e = &S->rebal[k];
        fprintf(m, "%s\n    {\"step\": %ld, \"before\": {\"min\": %lld, \"max\": %lld}, "
                   "\"after\": {\"min\": %lld, \"max\": %lld}, \"seconds\": %.6g, \"fetch_s\": %.6g, "
                   "\"move_s\": %.6g, \"open_s\": %.6g, \"x\": [",
                k ? "," : "", e->step, e->load[0], e->load[1], e->load[2], e->load[3],
                e->seconds, e->part_s[0], e->part_s[1], e->part_s[2]);
        for (int j = 0; j < nb; j++)
            fprintf(m, "%s%d", j == S->cl.nrx + 1 ? "], \"y\": [" : j ? ", " : "", e->cells[j]);
        fprintf(m, "]}");
    }
    fprintf(m, "%s],\n", S->nrebal ? "\n  " : "");
}

void rebalance_free(sim *S)
{
    for (int k = 0; k < S->nrebal; k++)
        free(S->rebal[k].cells);
    free(S->rebal);
    S->rebal = NULL;
    S->nrebal = 0;
}
