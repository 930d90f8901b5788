/* reshare.c - a run's state moved to another split of its rank array (reshare.h). */
#include "reshare.h"
#include "average.h"
#include "comm.h"
#include "ebalsum.h"
#include "empic.h"
#include "fbnd.h"
#include "probes.h"

#include <stdlib.h>
#include <string.h>

/* Cells [lo, hi) along x and y, global indices (guards from -EMF_GUARD to n + EMF_GUARD). */
typedef struct {
    int lo[2], hi[2];
} rect;

/* The cells of rank r under the borders bx, by (cluster columns and rows). */
static rect cells_of(const clusters *cl, const int *bx, const int *by, int r)
{
    const int rx = r % cl->nrx, ry = r / cl->nrx;
    const rect a = {{cl->x0[bx[rx]], cl->y0[by[ry]]}, {cl->x0[bx[rx + 1]], cl->y0[by[ry + 1]]}};
    return a;
}

/* What a rank holds of the whole arrays with guards: its cells a and the guards of the box
 * edges beside them (the ranks' rectangles tile the whole arrays, as a checkpoint stores
 * them); with all = 1 what it needs: its cells and all their guards. */
static rect grown(rect a, const emf *f, int all)
{
    const int G = EMF_GUARD, n[2] = {f->nx, f->ny};
    for (int k = 0; k < 2; k++) {
        a.lo[k] -= all || a.lo[k] == 0 ? G : 0;
        a.hi[k] += all || a.hi[k] == n[k] ? G : 0;
    }
    return a;
}

/* The cells a and b share into *m; their number. */
static size_t meet(rect a, rect b, rect *m)
{
    for (int k = 0; k < 2; k++) {
        m->lo[k] = a.lo[k] > b.lo[k] ? a.lo[k] : b.lo[k];
        m->hi[k] = a.hi[k] < b.hi[k] ? a.hi[k] : b.hi[k];
        if (m->hi[k] <= m->lo[k])
            return 0;
    }
    return (size_t)(m->hi[0] - m->lo[0]) * (size_t)(m->hi[1] - m->lo[1]);
}

/* Entries of n arrays on a layout: entry (i, j) of array k at k size + off + i + j stride
 * from base (entries of esz bytes): an emf's arrays, or a block of cells packed for a
 * message. */
typedef struct {
    char *base;
    size_t size;
    long off;
    int stride;
} layout;

static layout emf_layout(const emf *f, const void *a)
{
    const layout l = {(char *)a, f->size, f->off, f->stride};
    return l;
}

/* The cells m of each array, row after row, array after array. */
static layout block_layout(void *b, rect m)
{
    const int w = m.hi[0] - m.lo[0];
    const layout l = {(char *)b, (size_t)w * (size_t)(m.hi[1] - m.lo[1]),
                      -(long)m.lo[0] - (long)m.lo[1] * w, w};
    return l;
}

/* The cells m of n arrays copied from layout a to layout b, rows by the threads together. */
static void copy_cells(layout b, layout a, rect m, int n, size_t esz)
{
    const int h = m.hi[1] - m.lo[1];
    const size_t len = (size_t)(m.hi[0] - m.lo[0]) * esz;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < (long)n * h; r++) {
        const long k = r / h, j = m.lo[1] + r % h;
        memcpy(b.base + ((size_t)k * b.size + (size_t)(b.off + m.lo[0] + j * b.stride)) * esz,
               a.base + ((size_t)k * a.size + (size_t)(a.off + m.lo[0] + j * a.stride)) * esz,
               len);
    }
}

/* n arrays of esz-byte entries on the layout of `from` (one after the other, from->size
 * apart) moved into arrays on the layout of `to`: every rank sends what it holds of the
 * whole arrays (held[rank]) to the other ranks that need it (need[rank]), and copies what
 * it needs itself straight across. */
static void move_mesh(const emf *from, const emf *to, const rect *held, const rect *need,
                      const char *src, char *dst, int n, size_t esz)
{
    const int size = comm_size(), me = comm_rank();
    size_t *sc = empic_calloc(2 * (size_t)size, sizeof(size_t), "rebalance"), *rc = sc + size;
    size_t ns = 0, nr = 0;
    rect m;
    for (int r = 0; r < size; r++)
        if (r != me) {
            ns += sc[r] = (size_t)n * meet(held[me], need[r], &m);
            nr += rc[r] = (size_t)n * meet(held[r], need[me], &m);
        }
    char *sb = empic_alloc(ns * esz, "rebalance"), *rb = empic_alloc(nr * esz, "rebalance");
    size_t o = 0;
    for (int r = 0; r < size; r++)
        if (r != me && meet(held[me], need[r], &m)) {
            copy_cells(block_layout(sb + o * esz, m), emf_layout(from, src), m, n, esz);
            o += sc[r];
        }
    comm_alltoallv(sb, sc, rb, rc, esz);
    if (meet(held[me], need[me], &m))
        copy_cells(emf_layout(to, dst), emf_layout(from, src), m, n, esz);
    o = 0;
    for (int r = 0; r < size; r++)
        if (r != me && meet(held[r], need[me], &m)) {
            copy_cells(emf_layout(to, dst), block_layout(rb + o * esz, m), m, n, esz);
            o += rc[r];
        }
    free(sb);
    free(rb);
    free(sc);
}

/* The fields and the averaged dumps' sums moved to the new split (cells new[rank]) in a new
 * emf that takes over the old one's clocks and boundaries; the old arrays freed. */
static void move_fields(sim *S, const rect *old, const rect *new)
{
    const int size = comm_size(), me = comm_rank();
    emf *f = &S->f, nf;
    rect *held = empic_alloc(2 * (size_t)size * sizeof(rect), "rebalance"), *need = held + size;
    for (int r = 0; r < size; r++) {
        held[r] = grown(old[r], f, 0);
        need[r] = grown(new[r], f, 1);
    }
    const int lo[2] = {new[me].lo[0], new[me].lo[1]}, hi[2] = {new[me].hi[0], new[me].hi[1]};
    emf_init(&nf, &S->d, lo, hi, f->nb);
    /* emf_state's arrays lie one after the other in the store, in its order */
    move_mesh(f, &nf, held, need, (const char *)f->store, (char *)nf.store, EMF_STATE,
              sizeof(float));
    const int navg = S->st.avg ? avg_arrays(S->st.avg_q) : 0;
    if (navg) {
        double *avg = empic_alloc((size_t)navg * nf.size * sizeof(double), "averaged field sums");
        move_mesh(f, &nf, held, need, (const char *)S->st.avg, (char *)avg, navg,
                  sizeof(double));
        free(S->st.avg);
        S->st.avg = avg;
    }
    nf.acc_scale = f->acc_scale;
    nf.rho_bg = f->rho_bg;
    nf.step = f->step;
    nf.fb = f->fb;
    memcpy(nf.glo, f->glo, sizeof nf.glo);
    memcpy(nf.ghi, f->ghi, sizeof nf.ghi);
    emf_free(f);
    *f = nf;
    free(held);
}

/* The boundary memories made whole on every rank (each entry from the rank that held its
 * cell: f is still the old split's), as a restart reads them. */
static void whole_boundaries(const emf *f)
{
    fbnd_array a[FBND_ARRAYS];
    const int n = f->fb ? fbnd_arrays(f, a) : 0;
    for (int k = 0; k < n; k++) {
        uint32_t *w = empic_alloc(a[k].len * sizeof(uint32_t), "rebalance");
        fbnd_whole(f, &a[k], w);
        memcpy(a[k].data, w, a[k].len * sizeof(uint32_t));
        free(w);
    }
}

/* Species s's clusters that change hands sent to their new owners (was[c], now[c]: each
 * cluster's rank under the old borders and the new ones, which cl has), its segments laid
 * out for the new share. count, hist, peak: its tables of all ranks; buf: room for its
 * messages both ways. */
static void move_species(sim *S, int s, const int *was, const int *now, const int *count,
                         const int *hist, const int *peak, char *buf)
{
    const clusters *cl = &S->cl;
    species *sp = &S->sp[s];
    const int size = comm_size(), me = comm_rank(), n = cl->n;
    const size_t unit = species_slot_bytes(sp);
    /* per rank: particles sent and received, then the place of each rank's message */
    size_t *sc = empic_calloc(4 * (size_t)size, sizeof(size_t), "rebalance"), *rc = sc + size;
    size_t *so = rc + size, *ro = so + size, ns = 0, nr = 0;
    size_t *at = empic_alloc((size_t)n * sizeof(size_t), "rebalance");
    for (int c = 0; c < n; c++) {
        if (was[c] == me && now[c] != me)
            sc[now[c]] += (size_t)count[c];
        if (now[c] == me && was[c] != me)
            rc[was[c]] += (size_t)count[c];
    }
    for (int r = 0; r < size; r++) {
        so[r] = ns;
        ro[r] = nr;
        ns += sc[r];
        nr += rc[r];
    }
    /* each moving cluster's place in its message: rank after rank, each rank's clusters in
     * order */
    for (int c = 0; c < n; c++) {
        if (was[c] == me && now[c] != me) {
            at[c] = so[now[c]];
            so[now[c]] += (size_t)count[c];
        }
        if (now[c] == me && was[c] != me) {
            at[c] = ro[was[c]];
            ro[was[c]] += (size_t)count[c];
        }
    }
    char *sb = buf, *rb = buf + ns * unit;
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < n; c++)
        if (was[c] == me && now[c] != me)
            species_pack(sp, c, sb + at[c] * unit);
    comm_alltoallv(sb, sc, rb, rc, unit);
    const char **from = empic_calloc((size_t)n, sizeof *from, "rebalance");
    for (int c = 0; c < n; c++)
        if (now[c] == me && was[c] != me)
            from[c] = rb + at[c] * unit;
    species_reshare(sp, cl, count, hist, peak, from);
    free(from);
    free(at);
    free(sc);
}

/* Bytes of field arrays with guards per entry of a share (emf.h's store and current sums,
 * the external fields, the averaged dumps' sums and the dumps' scratch as allocated now). */
static size_t field_bytes(const sim *S)
{
    const size_t navg = S->st.avg ? (size_t)avg_arrays(S->st.avg_q) : 0;
    size_t per = EMF_STORE * sizeof(float) + (S->f.acc ? 4 * sizeof(long long) : 0) +
                 (size_t)extfield_arrays(&S->d) * sizeof(float) + navg * sizeof(double);
    per += S->rho_sp ? (size_t)S->nsp * sizeof(float) : 0;
    per += S->ext_dump ? 6 * sizeof(float) : 0;
    per += S->avg_dump ? navg * sizeof(float) : 0;
    return per;
}

double reshare_load_bytes(const sim *S, const int *bx, const int *by, const int *count,
                          const size_t *unit)
{
    const clusters *cl = &S->cl;
    const int n = cl->n, me = comm_rank();
    double bytes = 0.0;
    for (int s = 0; s < S->d.nspecies; s++)
        for (int c = 0; c < n; c++)
            if (clusters_owner(cl, bx, by, c) == me)
                bytes += (1.0 + S->d.slack) * (double)unit[s] * count[(size_t)s * n + c];
    const rect now = cells_of(cl, bx, by, me);
    return bytes + (double)field_bytes(S) * (now.hi[0] - now.lo[0] + 2 * EMF_GUARD) *
                       (now.hi[1] - now.lo[1] + 2 * EMF_GUARD);
}

void reshare_plan_make(const sim *S, const int *bx, const int *by, reshare_plan *p)
{
    const clusters *cl = &S->cl;
    const int n = cl->n, nsp = S->nsp, me = comm_rank();
    memset(p, 0, sizeof *p);
    p->bx = empic_alloc((size_t)(cl->nrx + cl->nry + 2) * sizeof(int), "rebalance");
    p->by = p->bx + cl->nrx + 1;
    memcpy(p->bx, bx, (size_t)(cl->nrx + 1) * sizeof(int));
    memcpy(p->by, by, (size_t)(cl->nry + 1) * sizeof(int));
    /* the species' tables of all ranks (each cluster's entries are its owner's alone) */
    p->count = empic_alloc((size_t)nsp * n * 11 * sizeof(int), "rebalance");
    p->peak = p->count + (size_t)nsp * n;
    p->hist = p->peak + (size_t)nsp * n;
    for (int s = 0; s < nsp; s++) {
        memcpy(p->count + (size_t)s * n, S->sp[s].count, (size_t)n * sizeof(int));
        memcpy(p->peak + (size_t)s * n, S->sp[s].peak, (size_t)n * sizeof(int));
        memcpy(p->hist + (size_t)s * n * 9, S->sp[s].hist, (size_t)n * 9 * sizeof(int));
    }
    comm_sum_int(p->count, (size_t)nsp * n);
    comm_sum_int(p->hist, (size_t)nsp * n * 9);
    comm_max_int(p->peak, (size_t)nsp * n);
    /* this rank's new share as species_reshare lays it out */
    const rect now = cells_of(cl, bx, by, me);
    const size_t old_size = S->f.size;
    p->size = (size_t)(now.hi[0] - now.lo[0] + 2 * EMF_GUARD) *
              (size_t)(now.hi[1] - now.lo[1] + 2 * EMF_GUARD);
    const size_t navg = S->st.avg ? (size_t)avg_arrays(S->st.avg_q) : 0;
    double bytes = (double)field_bytes(S) * (double)p->size +
                   (double)(EMF_STATE * sizeof(float) + navg * sizeof(double)) *
                       (double)(old_size + p->size); /* the mesh's messages */
    unsigned char *own = empic_alloc((size_t)n, "rebalance");
    int *count = empic_alloc((size_t)n * 4 * sizeof(int), "rebalance");
    int *peak = count + n, *start = peak + n, *cap = start + n;
    double msg = 0.0; /* the largest species' messages */
    for (int c = 0; c < n; c++)
        own[c] = clusters_owner(cl, bx, by, c) == me;
    for (int s = 0; s < nsp; s++) {
        species w = S->sp[s]; /* its layout rule, on the new share's tables */
        w.own = own;
        w.peak = memcpy(peak, p->peak + (size_t)s * n, (size_t)n * sizeof(int));
        long long moved = 0;
        p->np[s] = 0;
        for (int c = 0; c < n; c++) {
            const int k = p->count[(size_t)s * n + c];
            count[c] = own[c] ? k : 0;
            p->np[s] += count[c];
            moved += own[c] != cl->own[c] ? k : 0;
        }
        p->alloc[s] = species_segments(&w, cl, count, NULL, NULL, start, cap);
        const double unit = (double)species_slot_bytes(&w);
        bytes += unit * (double)p->alloc[s];
        msg = (double)moved * unit > msg ? (double)moved * unit : msg;
    }
    p->msg = (size_t)msg;
    p->host_bytes = bytes + msg;
    free(count);
    free(own);
}

void reshare_plan_free(reshare_plan *p)
{
    free(p->bx);
    free(p->count);
    memset(p, 0, sizeof *p);
}

void reshare(sim *S, reshare_plan *p)
{
    clusters *cl = &S->cl;
    pic_state *st = &S->st;
    const int size = comm_size(), n = cl->n, nsp = S->nsp;
    rect *old = empic_alloc(2 * (size_t)size * sizeof(rect), "rebalance"), *new = old + size;
    int *obx = empic_alloc((size_t)(cl->nrx + cl->nry + 2) * sizeof(int), "rebalance");
    int *oby = obx + cl->nrx + 1;
    memcpy(obx, cl->bx, (size_t)(cl->nrx + 1) * sizeof(int));
    memcpy(oby, cl->by, (size_t)(cl->nry + 1) * sizeof(int));
    for (int r = 0; r < size; r++) {
        old[r] = cells_of(cl, obx, oby, r);
        new[r] = cells_of(cl, p->bx, p->by, r);
    }
    whole_boundaries(&S->f);
    comm_sum_double(st->flow, S->bal_n); /* flow, lost and gain, one allocation */
    move_fields(S, old, new);
    int *was = empic_alloc(2 * (size_t)n * sizeof(int), "rebalance"), *now = was + n;
    for (int c = 0; c < n; c++) {
        was[c] = clusters_owner(cl, obx, oby, c);
        now[c] = clusters_owner(cl, p->bx, p->by, c);
    }
    clusters_set_borders(cl, p->bx, p->by);
    /* one buffer for the messages of every species in turn: its pages faulted in once */
    char *buf = empic_alloc(p->msg, "rebalance");
    for (int s = 0; s < nsp; s++)
        move_species(S, s, was, now, p->count + (size_t)s * n, p->hist + (size_t)s * n * 9,
                     p->peak + (size_t)s * n, buf);
    free(buf);
    free(was);
    ebalsum_own(S);
    extfield_free(&S->ext);
    extfield_init(&S->ext, &S->d, &S->f, &st->ext);
    extfield_update(&S->ext, S->f.step, S->win.cells, &st->ext);
    free(S->rho_sp); /* the dumps' scratch, made again at the next dump */
    free(S->ext_dump);
    free(S->avg_dump);
    S->rho_sp = S->ext_dump = S->avg_dump = NULL;
    probes_share(S);
    sim_note_peak(S);
    reshare_plan_free(p);
    free(obx);
    free(old);
}
