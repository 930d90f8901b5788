/* whole.c - the whole run on rank 0, and a rank's share of a whole state (whole.h).
 *
 * Fields travel as each rank's rectangle of the whole array: its cells, and the guards of
 * the box edges next to them (every entry of the whole array, guards included, belongs to
 * the rank holding the nearest cell), so rank 0 alone holds the whole box. Particles travel
 * cluster by cluster in cluster order, so rank 0 lays them out as one rank would hold them.
 * The boundary memories (thin whole-box strips on every rank) are summed as 32-bit patterns
 * over the ranks, each entry non-zero on one rank only. */
#include "whole.h"
#include "average.h"
#include "comm.h"
#include "empic.h"
#include "fbnd.h"
#include "pml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The rectangle of the whole array (guards included) that rank r holds: columns
 * [b[0], b[1]), rows [b[2], b[3]) (global indices), at 4 r in the table of every rank. */
static int *rank_boxes(const clusters *cl, const emf *f, int size)
{
    const int G = EMF_GUARD;
    int *b = empic_alloc(4 * (size_t)size * sizeof(int), "fields collected on rank 0");
    for (int r = 0; r < size; r++) { /* the box edges' guards go with the cells beside them */
        int *q = b + 4 * r;
        clusters_cells_of(cl, r, q);
        q[0] -= q[0] == 0 ? G : 0;
        q[1] += q[1] == f->nx ? G : 0;
        q[2] -= q[2] == 0 ? G : 0;
        q[3] += q[3] == f->ny ? G : 0;
    }
    return b;
}

/* This rank's rectangle (box) of its array a of esz-byte entries collected into the whole
 * array dst of w on rank 0 (w and dst unused elsewhere). */
static void collect_entries(const emf *f, const void *a, const emf *w, void *dst,
                            const int *box, size_t esz)
{
    const int me = comm_rank(), size = comm_size();
    const int *m = box + 4 * me, cols = m[1] - m[0];
    size_t *bytes = empic_alloc((size_t)size * sizeof(size_t), "fields collected on rank 0"), total = 0;
    for (int r = 0; r < size; r++)
        total += bytes[r] = (size_t)(box[4 * r + 1] - box[4 * r]) *
                            (size_t)(box[4 * r + 3] - box[4 * r + 2]) * esz;
    char *mine = empic_alloc(bytes[me] ? bytes[me] : 1, "fields collected on rank 0");
    for (int j = m[2]; j < m[3]; j++)
        memcpy(mine + (size_t)(j - m[2]) * cols * esz,
               (const char *)a + (size_t)emf_idx(f, m[0], j) * esz, (size_t)cols * esz);
    char *all = me == 0 ? empic_alloc(total ? total : 1, "fields collected on rank 0") : NULL;
    comm_gather(mine, bytes[me], all, bytes);
    const char *p = all;
    for (int r = 0; me == 0 && r < size; r++) {
        const int *q = box + 4 * r, n = q[1] - q[0];
        for (int j = q[2]; j < q[3]; j++, p += (size_t)n * esz)
            memcpy((char *)dst + (size_t)emf_idx(w, q[0], j) * esz, p, (size_t)n * esz);
    }
    free(all);
    free(mine);
    free(bytes);
}

static void collect_array(const emf *f, const float *a, const emf *w, float *dst,
                          const int *box)
{
    collect_entries(f, a, w, dst, box, sizeof(float));
}

/* n arrays of esz-byte entries one after the other (src on f's layout), collected into
 * arrays on w's layout that it returns on rank 0 (NULL elsewhere). */
static void *collect_arrays(const emf *f, const void *src, const emf *w, const int *box,
                            int n, size_t esz, const char *what)
{
    char *dst = comm_rank() == 0 ? empic_alloc((size_t)n * w->size * esz, what) : NULL;
    for (int k = 0; k < n; k++)
        collect_entries(f, (const char *)src + (size_t)k * f->size * esz, w,
                        dst ? dst + (size_t)k * w->size * esz : NULL, box, esz);
    return dst;
}

/* The same for a boundary memory of n floats where own(k) says which entries this rank
 * holds. */
static void collect_memory(float *p, size_t n, const emf *f, int axis, int first, int depth,
                          int len, int mur)
{
    uint32_t *bits = empic_calloc(n, sizeof(uint32_t), "boundaries collected on rank 0");
    for (size_t k = 0; k < n; k++) {
        int i, j;
        if (mur) { /* 4 rows of len entries along the edge (pml.h: mur_save) */
            int t = (int)(k % (size_t)len);
            i = axis ? t : first;
            j = axis ? first : t;
        } else {
            const pml_strip L = {axis, first, depth, len};
            pml_strip_cell(&L, (int)k, &i, &j);
        }
        if (emf_owns(f, i, j))
            memcpy(&bits[k], &p[k], 4);
    }
    comm_sum_int((int *)bits, n);
    memcpy(p, bits, n * sizeof(float));
    free(bits);
}

/* Every rank's copy of the CPML and Mur memories made whole (each holds its cells). */
static void collect_fbnd(const emf *f, fbnd *b)
{
    for (int l = 0; l < b->nlayers; l++) {
        const pml_layer *L = &b->layer[l];
        for (int m = 0; m < 4; m++)
            collect_memory(L->psi[m], (size_t)L->n * L->len, f, L->axis, L->first, L->n,
                          L->len, 0);
    }
    for (int k = 0; k < 4; k++)
        if (b->mur_old[k]) { /* the rank of the node inside the edge holds the entry */
            const int axis = k / 2, N = axis ? f->ny : f->nx;
            collect_memory(b->mur_old[k], 4 * (size_t)(axis ? f->nx : f->ny), f, axis,
                          k & 1 ? N - 1 : 1, 0, axis ? f->nx : f->ny, 1);
        }
}

/* The CPML and Mur memories and clocks of src into dst (both whole-box sized, as every
 * rank holds them). */
static void copy_fbnd(fbnd *dst, const fbnd *src, const emf *f)
{
    dst->psi_step = src->psi_step;
    dst->shift = src->shift;
    for (int l = 0; l < dst->nlayers; l++)
        for (int m = 0; m < 4; m++)
            memcpy(dst->layer[l].psi[m], src->layer[l].psi[m],
                   (size_t)dst->layer[l].n * dst->layer[l].len * sizeof(float));
    for (int k = 0; k < 4; k++)
        if (dst->mur_old[k])
            memcpy(dst->mur_old[k], src->mur_old[k],
                   4 * (size_t)(k / 2 ? f->nx : f->ny) * sizeof(float));
}

/* W set up as a one-rank run of S's deck with nothing in it yet (fields zero, boundaries,
 * clusters). */
static void whole_empty(const sim *S, sim *W)
{
    *W = *S; /* the deck, counters and settings; the state below is W's own */
    W->energy = NULL;
    W->rho_sp = NULL;
    W->ext_dump = W->avg_dump = NULL;
    W->st.avg = NULL;
    memset(&W->ext, 0, sizeof W->ext);
    memset(&W->st.ext, 0, sizeof W->st.ext);
    memset(&W->out, 0, sizeof W->out);
    memset(&W->front, 0, sizeof W->front);
    clusters_init(&W->cl, &S->d);
    const int lo[2] = {0, 0}, hi[2] = {S->d.nx, S->d.ny};
    emf_init(&W->f, &S->d, lo, hi, W->cl.nb);
    W->f.fb = fbnd_new(&W->f, &S->d);
    W->f.step = S->f.step;
    W->f.rho_bg = S->f.rho_bg;
    W->f.acc_scale = S->f.acc_scale;
    memset(W->sp, 0, sizeof W->sp);
    W->st.f = &W->f;
    W->st.cl = &W->cl;
    W->st.sp = W->sp;
}

/* Every cluster's count and migration histogram of species sp, on every rank. */
static void species_tables(const species *sp, const clusters *cl, int *count, int *hist)
{
    memcpy(count, sp->count, (size_t)cl->n * sizeof(int));
    comm_sum_int(count, (size_t)cl->n); /* each rank holds zeros for the others' clusters */
    memcpy(hist, sp->hist, (size_t)cl->n * 9 * sizeof(int));
    comm_sum_int(hist, (size_t)cl->n * 9);
}

/* Species s of S whole on rank 0 (W's tables over all clusters): the particles of each
 * rank's clusters in cluster order, array by array, laid out there as one rank holds them. */
static void collect_species(const sim *S, sim *W, int s)
{
    const species *sp = &S->sp[s];
    const clusters *cl = &S->cl;
    const int me = comm_rank(), size = comm_size();
    species *w = &W->sp[s];
    int *count = empic_alloc((size_t)cl->n * sizeof(int), "particles collected on rank 0");
    int *hist = empic_alloc((size_t)cl->n * 9 * sizeof(int), "particles collected on rank 0");
    species_tables(sp, cl, count, hist);
    size_t *per = empic_calloc((size_t)size, sizeof(size_t), "particles collected on rank 0");
    int *rank_of = empic_alloc((size_t)cl->n * sizeof(int), "particles collected on rank 0");
    for (int c = 0; c < cl->n; c++) {
        rank_of[c] = clusters_rank_of(cl, c);
        per[rank_of[c]] += (size_t)count[c];
    }
    if (me == 0) {
        memcpy(w->count, count, (size_t)cl->n * sizeof(int));
        memcpy(w->hist, hist, (size_t)cl->n * 9 * sizeof(int));
        species_layout(w, &W->cl);
        for (int c = 0; c < cl->n; c++)
            w->np += count[c];
        w->rearrangements = sp->rearrangements;
        w->bad = sp->bad;
    }
    void *src[10] = {sp->cell, sp->x, sp->y, sp->ux, sp->uy, sp->uz, sp->w, sp->code, sp->id,
                     sp->z};
    void *dst[10] = {w->cell, w->x, w->y, w->ux, w->uy, w->uz, w->w, w->code, w->id, w->z};
    const size_t esz[10] = {4, 4, 4, 4, 4, 4, 4, 1, 8, 1};
    char *stage = empic_alloc((per[me] ? per[me] : 1) * 8, "particles collected on rank 0");
    char *all = me == 0 ? empic_alloc((w->np ? (size_t)w->np : 1) * 8, "particles collected on rank 0") : NULL;
    size_t *bytes = empic_alloc((size_t)size * sizeof(size_t), "particles collected on rank 0");
    for (int k = 0; k < 10; k++) {
        if (!src[k]) /* no ids or charge states */
            continue;
        size_t o = 0, from = 0;
        for (int c = 0; c < cl->n; c++)
            if (cl->own[c]) {
                memcpy(stage + o * esz[k], (char *)src[k] + (size_t)sp->start[c] * esz[k],
                       (size_t)sp->count[c] * esz[k]);
                o += (size_t)sp->count[c];
            }
        for (int r = 0; r < size; r++)
            bytes[r] = per[r] * esz[k];
        comm_gather(stage, per[me] * esz[k], all, bytes);
        for (int r = 0; me == 0 && r < size; r++) /* rank r's clusters, in order */
            for (int c = 0; c < cl->n; c++)
                if (rank_of[c] == r) {
                    memcpy((char *)dst[k] + (size_t)w->start[c] * esz[k], all + from * esz[k],
                           (size_t)count[c] * esz[k]);
                    from += (size_t)count[c];
                }
    }
    free(bytes);
    free(all);
    free(stage);
    free(rank_of);
    free(per);
    free(hist);
    free(count);
}

void whole_collect(const sim *S, sim *W, int what)
{
    const int root = comm_rank() == 0;
    sim whole;
    memset(&whole, 0, sizeof whole);
    if (root)
        whole_empty(S, &whole);
    const emf *f = &S->f;
    emf *g = &whole.f;
    int *box = rank_boxes(&S->cl, f, comm_size());
    float *a[EMF_STATE], *b[EMF_STATE];
    emf_state(f, a);
    emf_state(g, b);
    for (int k = 0; k < EMF_STATE; k++)
        collect_array(f, a[k], g, b[k], box);
    if (S->rho_sp) {
        if (root)
            whole.rho_sp = empic_alloc((size_t)S->nsp * g->size * sizeof(float), "charge dumps");
        for (int s = 0; s < S->nsp; s++)
            collect_array(f, S->rho_sp + (size_t)s * f->size, g,
                         root ? whole.rho_sp + (size_t)s * g->size : NULL, box);
    }
    const int navg = avg_arrays(S->st.avg_q);
    if (what & WHOLE_EXT)
        whole.ext_dump = collect_arrays(f, S->ext_dump, g, box, 6, sizeof(float),
                                        "external field dumps");
    if (what & WHOLE_MEANS)
        whole.avg_dump = collect_arrays(f, S->avg_dump, g, box, navg, sizeof(float),
                                        "averaged field dumps");
    if (what & WHOLE_SUMS)
        whole.st.avg = collect_arrays(f, S->st.avg, g, box, navg, sizeof(double),
                                      "averaged field sums");
    free(box);
    if (f->fb) { /* every rank's copy made whole, then rank 0's taken */
        collect_fbnd(f, f->fb);
        if (root)
            copy_fbnd(g->fb, f->fb, f);
    }
    for (int s = 0; s < S->nsp; s++) { /* names and tables: a field dump names them too */
        if (root)
            species_open(&whole.sp[s], &S->d, s, &whole.cl);
        if (what & WHOLE_PARTICLES)
            collect_species(S, &whole, s);
    }
    if (root)
        *W = whole;
}

void whole_free(sim *W)
{
    for (int s = 0; s < W->nsp; s++)
        if (W->sp[s].start)
            species_free(&W->sp[s]);
    fbnd_free(W->f.fb);
    emf_free(&W->f);
    clusters_free(&W->cl);
    free(W->rho_sp);
    free(W->ext_dump);
    free(W->avg_dump);
    free(W->st.avg);
}
