/* cpu_ionize.c - field ionization on the CPU. It runs after the sort (cycle step 7): every
 * ion is then in its cluster, so its electrons go straight into the electron species'
 * segment of that cluster, and the field E(n+1) at the ion's position x(n+1) exists. Two
 * passes over each cluster: the new charge states (ionize_ion, one stream per ion), then,
 * once the electron segments have room for them, the electrons in the ions' slot order. */
#include "cpu_ionize.h"
#include "comm.h"
#include "empic.h"
#include "ionize.h"

#include <stdlib.h>
#include <string.h>

/* Whether cluster c's ions all stay as they are (ionize_quiet): the largest |E_c| over its
 * tile against the levels of its lowest charge state; never with an external field given
 * as arrays. */
static int quiet_cluster(const species *s, const emf *f, const clusters *cl, int c,
                         const ext_fields *ext)
{
    if (ext->a[0] || ext->a[1] || ext->a[2])
        return 0;
    int zlo = s->ion->zmax;
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
        zlo = s->z[p] < zlo ? s->z[p] : zlo;
    if (zlo == s->ion->zmax)
        return 1; /* every ion stripped to zmax (or none) */
    const cluster_tile t = cluster_tile_of(cl->x0, cl->y0, cl->ncx, c);
    float m[3] = {0.0f, 0.0f, 0.0f};
    for (int j = t.j0; j < t.j0 + t.h; j++)
        for (int i = t.i0; i < t.i0 + t.w; i++)
            for (int k = 0; k < 3; k++)
                m[k] = fmaxf(m[k], fabsf(f->e[k][emf_idx(f, i, j)]));
    return ionize_quiet(s->ion->quiet[zlo], m, ext->u);
}

/* New charge states of cluster c's ions; their increments into dz. Returns the electrons
 * they give; with `sums`, the sums of w z and w into *zw, *w. */
static int charge_cluster(species *s, const emf *f, const clusters *cl, int c,
                          const ext_fields *ext, long long step, long window_cells, int sums,
                          uint8_t *dz, double *zw, double *w)
{
    int n = 0;
    double a = 0.0, b = 0.0;
    const int quiet = quiet_cluster(s, f, cl, c, ext);
    *zw = *w = 0.0;
    if (quiet && !sums)
        return 0;
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
        const int i = cell_i(s->cell[p]), j = cell_j(s->cell[p]);
        int z = s->z[p];
        if (!quiet && z < s->ion->zmax) { /* an ion stripped to zmax needs no field */
            const double e = ionize_field(f->e[0], f->e[1], f->e[2], ext->a, emf_idx(f, i, j),
                                          f->stride, s->x[p], s->y[p], ext->u);
            ionize_stream r = ionize_stream_of(s->seed, (unsigned)s->index,
                                               (uint32_t)(i + window_cells), (uint32_t)j,
                                               (uint32_t)(p - s->start[c]), step);
            z = ionize_ion(s->ion, z, e, &r);
        }
        if (!quiet) {
            dz[p] = (uint8_t)(z - s->z[p]);
            n += dz[p];
            s->z[p] = (uint8_t)z;
        }
        if (sums) {
            a += (double)s->w[p] * z;
            b += s->w[p];
        }
    }
    *zw = a;
    *w = b;
    return n;
}

/* The electrons of cluster c's ions (dz[p] of ion p), born at the ion with its momentum and
 * weight, after the electrons of cluster c in e. */
static void emit_cluster(const species *s, species *e, int c, const uint8_t *dz)
{
    size_t q = (size_t)e->start[c] + (size_t)e->count[c];
    for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
        for (int k = 0; k < dz[p]; k++, q++) {
            e->cell[q] = s->cell[p];
            e->x[q] = s->x[p];
            e->y[q] = s->y[p];
            e->ux[q] = s->ux[p];
            e->uy[q] = s->uy[p];
            e->uz[q] = s->uz[p];
            e->w[q] = s->w[p];
            e->code[q] = 0;
            if (e->id)
                e->id[q] = 0; /* untracked */
        }
    e->count[c] = (int)(q - (size_t)e->start[c]);
}

ionize_stats ionize_species(species *s, species *e, const emf *f, const clusters *cl,
                            const ext_fields *ext, long long step, long window_cells, int sums)
{
    ionize_stats st = {0, 0.0, 0.0};
    uint8_t *dz = empic_alloc(s->alloc ? s->alloc : 1, "ionization");
    int *add = empic_calloc((size_t)cl->n, sizeof(int), "ionization");
    /* per-cluster sums, added in cluster order: the same for any thread or rank count */
    double *sum = empic_calloc(2 * (size_t)cl->n, sizeof(double), "ionization");
    int grow = 0;
#pragma omp parallel for schedule(dynamic) reduction(| : grow)
    for (int c = 0; c < cl->n; c++) {
        if (!cl->own[c])
            continue;
        add[c] = charge_cluster(s, f, cl, c, ext, step, window_cells, sums, dz, &sum[2 * c],
                                &sum[2 * c + 1]);
        grow |= e->count[c] + add[c] > e->cap[c];
    }
    if (grow) { /* room for every cluster's electrons: the global rearrangement */
        int *need = empic_alloc((size_t)cl->n * sizeof(int), "ionization");
        for (int c = 0; c < cl->n; c++)
            need[c] = ionize_room(e->count[c], add[c], s->count[c], s->z0, s->ion->zmax);
        species_relayout(e, cl, need, need, NULL);
        free(need);
    }
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++)
        if (add[c])
            emit_cluster(s, e, c, dz);
    if (sums)
        comm_sum_double(sum, 2 * (size_t)cl->n);
    for (int c = 0; c < cl->n; c++) {
        st.events += add[c];
        st.zw += sum[2 * c];
        st.w += sum[2 * c + 1];
    }
    free(sum);
    free(add);
    free(dz);
    return st;
}
