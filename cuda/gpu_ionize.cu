/* gpu_ionize.cu - field ionization on the device (the twin of src/cpu/cpu_ionize.c, rules in
 * include/ionize.h). Like the CPU it runs after the sort: every ion is in its cluster, so
 * its electrons go straight into the electron species' segment of that cluster, and E(n+1)
 * exists at x(n+1). k_ionize_scan, a warp per cluster, bounds the cluster's field once for
 * every ionizing species: a cluster whose field is too weak for any level of a species
 * (ionize_quiet: the laser has not reached it) is not visited for it. Then two kernels of
 * one block per cluster of an ionizing species: k_ionize_charge draws each ion's new charge
 * state (ionize_ion, the ion's own stream), keeps its increment in a byte array and writes
 * the cluster's electron count (and, for an energy row, its sums of w z and w: reductions
 * in a fixed order, the same in every run). The host reads the counts of every species once
 * (the step's one wait, in gpu_ionize_end: sim.c calls it after the next step's B half step
 * is queued, unless it needs the step's sums), re-lays an electron species when a cluster
 * lacks room (gpu_relayout, the sort's global rearrangement), and k_ionize_emit appends the
 * electrons in the ions' slot order (a block-wide prefix sum of the increments). Ionization
 * costs the species without it nothing. */
#include "gpu_internal.h"
#include "ionize.h"

#include <string.h>

#define FULL 0xffffffffu

/* One ionizing species' launch: its particles and cluster table, the electrons' arrays
 * and table, its tables in gpu_state.ion_tab, the field and the draws' keys. */
typedef struct {
    ionize_table t;
    gpu_parts ion, el;
    const int *start, *count;     /* the ions' */
    const int *estart;
    int *ecount;
    uint8_t *dz;
    int *add;                     /* per cluster: electrons made */
    double *sums;                 /* per cluster: sum w z, sum w (when wanted) */
    const uint8_t *visit;         /* per cluster: k_ionize_scan's VISIT_ code */
    const float *e[3];
    const float *xe[3];           /* the external E's arrays (NULL where uniform) */
    float ext[3];                 /* its uniform values */
    int off, stride, want;        /* want: the sums */
    unsigned long long seed;
    unsigned species;
    long long step;
    long window_cells;
} kionize;

/* What k_ionize_charge does with a cluster of an ionizing species: nothing (no ion, or a
 * quiet field or every ion stripped to zmax, and no sums wanted; its outputs are written by
 * the scan), the sums alone, or the charge draws. */
enum { VISIT_NONE, VISIT_SUMS, VISIT_DRAW };

/* The field bound of every cluster, once for all ionizing species, whether it can ionize
 * a species' ions there (read where the field is not quiet for the initial state: behind
 * the laser the wake's field is strong enough for the lowest level, but the ions there are
 * stripped to zmax or to a state whose next level it cannot reach, and nothing is left to
 * draw), and the copies of the counts the host checks the electrons' room against (the
 * electron species' counts and capacities, the ions' counts) into the tables: a warp per
 * cluster. */
typedef struct {
    const float *e[3];
    const int *x0, *y0;
    int ncx, ncl, off, stride, n, want, bound; /* bound: no external E arrays */
    float ext[3];
    double quiet[DECK_MAX_SPECIES][IONIZE_LEVELS + 1]; /* per ionizing species: its table's */
    int z0[DECK_MAX_SPECIES], zmax[DECK_MAX_SPECIES];  /* initial and highest states */
    const uint8_t *z[DECK_MAX_SPECIES];    /* its charge states */
    const int *start[DECK_MAX_SPECIES], *count[DECK_MAX_SPECIES];
    const int *ecount[DECK_MAX_SPECIES], *ecap[DECK_MAX_SPECIES]; /* its electrons' */
    uint8_t *visit[DECK_MAX_SPECIES];
    int *add[DECK_MAX_SPECIES];
    double *sums[DECK_MAX_SPECIES];
} kscan;

__global__ void __launch_bounds__(GPU_THREADS) k_ionize_scan(const __grid_constant__ kscan a)
{
    const int c = blockIdx.x * (GPU_THREADS / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (c >= a.ncl)
        return; /* the whole warp */
    int ions = 0; /* species with ions here */
    for (int k = 0; k < a.n; k++)
        ions += a.count[k][c] > 0;
    float m[3] = {0.0f, 0.0f, 0.0f};
    if (ions && a.bound) { /* the largest |E_c| over the tile */
        const cluster_tile t = cluster_tile_of(a.x0, a.y0, a.ncx, c);
        for (int q = lane; q < t.w * t.h; q += 32) {
            const int k = a.off + t.i0 + q % t.w + (t.j0 + q / t.w) * a.stride;
            for (int d = 0; d < 3; d++)
                m[d] = fmaxf(m[d], fabsf(a.e[d][k]));
        }
        for (int d = 0; d < 3; d++)
            for (int o = 16; o > 0; o >>= 1)
                m[d] = fmaxf(m[d], __shfl_xor_sync(FULL, m[d], o));
    }
    unsigned draw = 0; /* bit k: species k draws here */
    for (int k = 0; k < a.n; k++) {
        const int n = a.count[k][c], s0 = a.start[k][c];
        if (n == 0 || (a.bound && ionize_quiet(a.quiet[k][a.z0[k]], m, a.ext)))
            continue;
        unsigned low = 0xffffffffu; /* the lowest charge state, bytewise: 16 a lane (segments
                                       start on 32-slot multiples) */
        for (int q = 16 * lane; q < n; q += 16 * 32)
            if (q + 16 <= n) {
                const uint4 v = *(const uint4 *)(a.z[k] + s0 + q);
                low = __vminu4(__vminu4(low, v.x), __vminu4(v.y, __vminu4(v.z, v.w)));
            } else
                for (int r = q; r < n; r++)
                    low = min(low, (unsigned)a.z[k][s0 + r]);
        low = min(min(low & 0xffu, low >> 8 & 0xffu), min(low >> 16 & 0xffu, low >> 24));
        const int zlo = (int)__reduce_min_sync(FULL, low);
        if (zlo < a.zmax[k] && !(a.bound && ionize_quiet(a.quiet[k][zlo], m, a.ext)))
            draw |= 1u << k;
    }
    if (lane >= a.n)
        return;
    const int k = lane, n = a.count[k][c], nc = a.ncl;
    const int v = n == 0              ? VISIT_NONE
                  : (draw >> k) & 1u  ? VISIT_DRAW
                  : a.want            ? VISIT_SUMS
                                      : VISIT_NONE;
    a.visit[k][c] = (uint8_t)v;
    int *copy = a.add[k] + nc;
    copy[c] = a.ecount[k][c];
    copy[nc + c] = a.ecap[k][c];
    copy[2 * nc + c] = n;
    if (v == VISIT_NONE) {
        a.add[k][c] = 0;
        if (a.want)
            a.sums[k][2 * c] = a.sums[k][2 * c + 1] = 0.0;
    }
}

__global__ void __launch_bounds__(GPU_THREADS) k_ionize_charge(const __grid_constant__ kionize a)
{
    __shared__ double red[GPU_THREADS / 32];
    const int c = blockIdx.x, v = a.visit[c];
    if (v == VISIT_NONE)
        return; /* the whole block */
    const int n = a.count[c], s0 = a.start[c], quiet = v == VISIT_SUMS;
    double zw = 0.0, w = 0.0, ne = 0.0;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const int p = s0 + k, z0 = a.ion.z[p];
        int z = z0;
        if (!quiet && z0 < a.t.zmax) { /* an ion stripped to zmax needs no field */
            const uint32_t cell = a.ion.cell[p];
            const int i = cell_i(cell), j = cell_j(cell);
            const float2 xy = a.ion.xy[p];
            const double e = ionize_field(a.e[0], a.e[1], a.e[2], a.xe, a.off + i + j * a.stride,
                                          a.stride, xy.x, xy.y, a.ext);
            ionize_stream r = ionize_stream_of(a.seed, a.species, (uint32_t)(i + a.window_cells),
                                               (uint32_t)j, (uint32_t)k, a.step);
            z = ionize_ion(&a.t, z0, e, &r);
        }
        if (!quiet) {
            a.dz[p] = (uint8_t)(z - z0);
            a.ion.z[p] = (uint8_t)z;
            ne += z - z0;
        }
        if (a.want) {
            const float pw = a.ion.uzw[p].y;
            zw += (double)pw * z;
            w += pw;
        }
    }
    ne = gpu_block_sum(ne, red);
    if (a.want) {
        zw = gpu_block_sum(zw, red);
        w = gpu_block_sum(w, red);
    }
    if (threadIdx.x == 0) {
        a.add[c] = (int)ne;
        if (a.want) {
            a.sums[2 * c] = zw;
            a.sums[2 * c + 1] = w;
        }
    }
}

__global__ void __launch_bounds__(GPU_THREADS) k_ionize_emit(const __grid_constant__ kionize a)
{
    __shared__ int warp_tot[GPU_THREADS / 32];
    const int c = blockIdx.x, n = a.count[c], s0 = a.start[c];
    if (!a.add[c])
        return; /* the whole block: add[c] is the same for every thread */
    int at = a.estart[c] + a.ecount[c];
    for (int base = 0; base < n; base += blockDim.x) {
        const int k = base + (int)threadIdx.x, p = s0 + k;
        const int d = k < n ? a.dz[p] : 0;
        int total;
        const int q = at + gpu_block_scan(d, warp_tot, &total);
        if (d) {
            gpu_part v = gpu_parts_get(a.ion, p);
            v.code = 0;
            v.id = 0; /* untracked */
            v.z = 0;
            for (int m = 0; m < d; m++)
                gpu_parts_put(a.el, q + m, v);
        }
        at += total;
    }
    if (threadIdx.x == 0)
        a.ecount[c] = at - a.estart[c];
}

/* Per ionizing species and cluster: sum w z and sum w (doubles), then the electrons made,
 * the electron species' counts and capacities and the ions' counts (ints). */
static size_t table_bytes(int nc) { return (size_t)nc * (2 * sizeof(double) + 4 * sizeof(int)); }

/* gpu_state.ion_tab with room for the tables of n species and after them their visit codes
 * (device only), ion_dz for their slots (dz0[k]: the k-th species' first). */
static void ionize_scratch(gpu_state *g, const int *ions, int n, size_t *dz0)
{
    const size_t tab = n * (table_bytes(g->ncl) + g->ncl) + 64;
    if (g->ion_tab_n < tab) {
        if (g->ion_tab)
            cudaFree(g->ion_tab), cudaFreeHost(g->h_ion_tab);
        g->ion_tab = (char *)gpu_malloc(g, tab, "ionization tables");
        GPU_CK(cudaMallocHost((void **)&g->h_ion_tab, tab));
        g->ion_tab_n = tab;
    }
    size_t slots = 0;
    for (int k = 0; k < n; k++) {
        dz0[k] = slots;
        slots += g->sp[ions[k]].slots;
    }
    if (g->ion_dz_n < slots) {
        if (g->ion_dz)
            cudaFree(g->ion_dz);
        g->ion_dz = (uint8_t *)gpu_malloc(g, slots, "ionization increments");
        g->ion_dz_n = slots;
    }
}

/* The charge draws of ionizing species s with its tables at tab (device). */
static kionize charge_launch(gpu_state *g, pic_state *st, int s, long long step, int sums,
                             char *tab, const uint8_t *visit, uint8_t *dz)
{
    gpu_species *d = &g->sp[s];
    const int nc = g->ncl;
    kionize a;
    memset(&a, 0, sizeof a);
    a.t = *d->ion;
    a.ion = gpu_parts_of(d);
    a.start = d->start;
    a.count = d->count;
    a.dz = dz;
    a.sums = (double *)tab;
    a.add = (int *)(a.sums + 2 * nc);
    for (int k = 0; k < 3; k++) {
        a.e[k] = g->e[k];
        a.xe[k] = g->ext[k];
        a.ext[k] = st->ext.u[k];
    }
    a.visit = visit;
    a.off = g->off;
    a.stride = g->stride;
    a.want = sums;
    a.seed = st->sp[s].seed;
    a.species = (unsigned)s;
    a.step = step;
    a.window_cells = st->window_cells;
    k_ionize_charge<<<nc, GPU_THREADS, 0, g->stream>>>(a);
    GPU_LAUNCHED(g, "k_ionize_charge");
    return a;
}

/* After every species' charge draws: species s's electrons (its launch a, its host tables
 * at htab) into their species, re-laid out first where a cluster lacks room; returns what s
 * did. fresh: its electron species' counts in htab are still those of the device (no
 * species before s in this step gave it electrons). */
static ionize_stats emit(gpu_state *g, pic_state *st, int s, kionize a, char *htab, int sums,
                         int fresh)
{
    gpu_species *d = &g->sp[s], *e = &g->sp[d->ion_to];
    const int nc = g->ncl;
    double *h_sums = (double *)htab;
    int *h_add = (int *)(h_sums + 2 * nc), *h_ecnt = h_add + nc;
    if (!fresh) { /* after the emission (and re-layout) of the species before, in the stream */
        GPU_CK(cudaMemcpyAsync(h_ecnt, e->count, (size_t)nc * sizeof(int),
                               cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaMemcpyAsync(h_ecnt + nc, e->cap, (size_t)nc * sizeof(int),
                               cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaStreamSynchronize(g->stream));
    }
    ionize_stats out = {0, 0.0, 0.0};
    int grow = 0;
    for (int c = 0; c < nc; c++) {
        out.events += h_add[c];
        grow |= h_ecnt[c] + h_add[c] > h_ecnt[nc + c];
    }
    if (grow) { /* room for every cluster's electrons: the global rearrangement */
        int *need = (int *)empic_alloc((size_t)nc * sizeof(int), "ionization");
        for (int c = 0; c < nc; c++)
            need[c] = ionize_room(h_ecnt[c], h_add[c], h_ecnt[2 * nc + c], st->sp[s].z0,
                                  d->ion->zmax);
        gpu_relayout(g, st, d->ion_to, need, need, NULL);
        free(need);
        g->room_valid = 0;
    }
    if (out.events) {
        a.el = gpu_parts_of(e); /* after a re-layout: its new arrays */
        a.estart = e->start;
        a.ecount = e->count;
        k_ionize_emit<<<nc, GPU_THREADS, 0, g->stream>>>(a);
        GPU_LAUNCHED(g, "k_ionize_emit");
    }
    if (sums) {
        comm_sum_double(h_sums, 2 * (size_t)nc); /* per cluster, then in cluster order */
        for (int c = 0; c < nc; c++) {
            out.zw += h_sums[2 * c];
            out.w += h_sums[2 * c + 1];
        }
    }
    return out;
}

/* The draws gpu_ionize queued: the ionizing species, their launches and whether sums are
 * wanted, for gpu_ionize_end. */
struct gpu_ionq {
    int n, ions[DECK_MAX_SPECIES], sums;
    kionize a[DECK_MAX_SPECIES];
};

/* Every ionizing species' charge draws and one read-back of all their tables, queued; the
 * next push's rest flags after them. With sums (an energy row), gpu_ionize_end at once
 * (returns 1); else 0: the host's wait for the tables comes later (gpu_ionize_end, called
 * after the next step's B half step is queued, so that it runs meanwhile). */
int gpu_ionize(void *ctx, pic_state *st, long long step, int sums, ionize_stats *out)
{
    gpu_state *g = (gpu_state *)ctx;
    if (!g->ionq)
        g->ionq = (struct gpu_ionq *)empic_calloc(1, sizeof *g->ionq, "ionization");
    struct gpu_ionq *iq = g->ionq;
    int *ions = iq->ions, n = 0;
    for (int s = 0; s < g->nsp; s++)
        if (g->sp[s].ion)
            ions[n++] = s;
    iq->n = n;
    iq->sums = sums;
    if (!n)
        return 1;
    size_t dz0[DECK_MAX_SPECIES];
    ionize_scratch(g, ions, n, dz0);
    gpu_fields_join(g); /* E(n+1) */
    const int nc = g->ncl;
    const size_t tb = table_bytes(nc);
    uint8_t *visit = (uint8_t *)g->ion_tab + n * tb;
    kscan q;
    memset(&q, 0, sizeof q);
    for (int d = 0; d < 3; d++) {
        q.e[d] = g->e[d];
        q.ext[d] = st->ext.u[d];
    }
    q.x0 = g->x0;
    q.y0 = g->y0;
    q.ncx = g->ncx;
    q.ncl = nc;
    q.off = g->off;
    q.stride = g->stride;
    q.n = n;
    q.want = sums;
    q.bound = !g->ext[0] && !g->ext[1] && !g->ext[2];
    for (int k = 0; k < n; k++) {
        double *tab = (double *)(g->ion_tab + k * tb);
        memcpy(q.quiet[k], g->sp[ions[k]].ion->quiet, sizeof q.quiet[k]);
        q.z0[k] = st->sp[ions[k]].z0;
        q.zmax[k] = g->sp[ions[k]].ion->zmax;
        q.z[k] = g->sp[ions[k]].z;
        q.start[k] = g->sp[ions[k]].start;
        q.count[k] = g->sp[ions[k]].count;
        q.ecount[k] = g->sp[g->sp[ions[k]].ion_to].count;
        q.ecap[k] = g->sp[g->sp[ions[k]].ion_to].cap;
        q.visit[k] = visit + (size_t)k * nc;
        q.sums[k] = tab;
        q.add[k] = (int *)(tab + 2 * nc);
    }
    const int warps = GPU_THREADS / 32; /* untimed: the "other" phase, as on the CPU */
    k_ionize_scan<<<(nc + warps - 1) / warps, GPU_THREADS, 0, g->stream>>>(q);
    GPU_LAUNCHED(g, "k_ionize_scan");
    for (int k = 0; k < n; k++)
        iq->a[k] = charge_launch(g, st, ions[k], step, sums, g->ion_tab + k * tb, q.visit[k],
                                 g->ion_dz + dz0[k]);
    GPU_CK(cudaMemcpyAsync(g->h_ion_tab, g->ion_tab, n * tb, cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaEventRecord(g->ion_ready, g->stream));
    gpu_rest_flags(g); /* the next push's, while the host waits */
    g->ion_open = 1;
    if (!sums)
        return 0;
    gpu_ionize_end(ctx, st, out);
    return 1;
}

/* The host's one wait for the tables, then each species' electrons in species order. */
void gpu_ionize_end(void *ctx, pic_state *st, ionize_stats *out)
{
    gpu_state *g = (gpu_state *)ctx;
    const struct gpu_ionq *iq = g->ionq;
    const size_t tb = table_bytes(g->ncl);
    const double w0 = gpu_trace_now(g);
    GPU_CK(cudaEventSynchronize(g->ion_ready));
    gpu_trace_wait(g, "wait-ionize", w0);
    unsigned given = 0; /* electron species given electrons so far */
    for (int k = 0; k < iq->n; k++) {
        const int s = iq->ions[k], to = g->sp[s].ion_to;
        out[s] = emit(g, st, s, iq->a[k], g->h_ion_tab + k * tb, iq->sums,
                      !((given >> to) & 1u));
        given |= out[s].events ? 1u << to : 0u;
    }
    g->ion_open = 0;
}
