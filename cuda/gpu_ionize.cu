/* gpu_ionize.cu - field ionization on the device (the twin of src/cpu/cpu_ionize.c, rules in
 * include/ionize.h). Like the CPU it runs after the sort: every ion is in its cluster, so
 * its electrons go straight into the electron species' segment of that cluster, and E(n+1)
 * exists at x(n+1). k_ionize_scan, a block per cluster, bounds the cluster's field once for
 * every ionizing species: a cluster whose field is too weak for any level of a species
 * (ionize_quiet: the laser has not reached it) is not visited for it; the others go on the
 * species' list of work items, a chunk of ION_CHUNK ions each. k_ionize_charge, a block of
 * ION_CHUNK threads per item, draws each ion's new charge state (ionize_ion, the ion's own
 * stream), keeps its increment in a byte array, the chunk's count of electrons, and adds
 * it to the cluster's and the species' counts (integers: the same sums in any order); a
 * chunk that made electrons goes on the emission's list. The kernels' blocks stay resident
 * and walk the lists: the laser's clusters are a few hundred of thousands, and a block per
 * cluster of the box spent most of its time launching blocks that had nothing to do and the
 * rest on a few ions per multiprocessor. For an energy row, k_ionize_sums adds w z and w
 * over each cluster in a fixed order. The host reads the species' counters (and the sums)
 * once (the step's one wait, in gpu_ionize_end: sim.c calls it after the next step's B half
 * step is queued, unless it needs the step's sums), re-lays an electron species when a
 * cluster lacks room (gpu_relayout, the sort's global rearrangement), and k_ionize_emit
 * appends each listed chunk's electrons in the ions' slot order, after those of the chunks
 * before it (a block-wide prefix sum of the increments). Ionization costs the species
 * without it nothing. */
#include "gpu_internal.h"
#include "ionize.h"

#include <string.h>

#define FULL 0xffffffffu
#define ION_CHUNK 256   /* ions a work item, threads a block of k_ionize_charge and _emit */
#define SCAN_THREADS 128 /* a block of k_ionize_scan: one cluster */
#define ION_GROUP 4      /* species a launch of k_ionize_charge or _emit takes, at most */

/* A species' counters: electrons made in the step, whether a cluster of its electrons
 * lacks room for them, its work items and the clusters to emit, and the blocks of the
 * launch that walks them done (the last one clears the list's count for the next step). */
typedef struct {
    int events, grow;
    int nitems, items_done;
    int nemit, emit_done;
    int pad[2];
} ion_count;

/* What gpu_state.ion_tab holds for n ionizing species: first what the host reads back (the
 * counters, and the sums: 2 nc doubles a species), then per species the electrons made per
 * cluster and its chunks that made any still to emit, the chunks' counts of electrons (one
 * per ION_CHUNK slots: a segment starts on a multiple of 32 slots, so chunk q of the cluster
 * at s0 keeps its count at s0 / 32 + q ION_CHUNK / 32, apart from every other chunk's), and
 * the work items (cluster, chunk) of the draws and of the emission. */
typedef struct {
    size_t back, bytes; /* bytes the host reads, all */
    ion_count *cnt;
    double *sums[DECK_MAX_SPECIES];
    int *add[DECK_MAX_SPECIES], *pend[DECK_MAX_SPECIES], *cne[DECK_MAX_SPECIES];
    int2 *items[DECK_MAX_SPECIES], *emits[DECK_MAX_SPECIES];
} ion_layout;

/* One ionizing species' launch: its particles and cluster table, the electrons' arrays
 * and table, its tables in gpu_state.ion_tab, the field and the draws' keys. */
typedef struct {
    ionize_table t;
    gpu_parts ion, el;
    const int *start, *count;     /* the ions' */
    const int *estart, *ecap;
    int *ecount;
    uint8_t *dz;
    ion_count *cnt;
    int *add, *pend, *cne;
    const int2 *items;
    int2 *emits;
    double *sums;                 /* per cluster: sum w z, sum w */
    const float *e[3];
    const float *xe[3];           /* the external E's arrays (NULL where uniform) */
    float ext[3];                 /* its uniform values */
    int off, stride;
    unsigned long long seed;
    unsigned species;
    long long step;
    long window_cells;
} kionize;

/* Species that one launch takes: their items in turn, so that one species' draws or
 * emission do not wait for the other's last block. */
typedef struct {
    kionize s[ION_GROUP];
    int n;
} kion_group;

/* The field bound of every cluster, once for all ionizing species, whether it can ionize
 * a species' ions there (read where the field is not quiet for the initial state: behind
 * the laser the wake's field is strong enough for the lowest level, but the ions there are
 * stripped to zmax or to a state whose next level it cannot reach, and nothing is left to
 * draw): a block per cluster, a warp per species. It lists the clusters to draw as work
 * items and zeroes every cluster's electron and chunk counts and the species' counters. */
typedef struct {
    const float *e[3];
    const int *x0, *y0;
    int ncx, ncl, off, stride, n, bound; /* bound: no external E arrays */
    float ext[3];
    double quiet[DECK_MAX_SPECIES][IONIZE_LEVELS + 1]; /* per ionizing species: its table's */
    int z0[DECK_MAX_SPECIES], zmax[DECK_MAX_SPECIES];  /* initial and highest states */
    const uint8_t *z[DECK_MAX_SPECIES];    /* its charge states */
    const int *start[DECK_MAX_SPECIES], *count[DECK_MAX_SPECIES];
    ion_count *cnt;
    int *add[DECK_MAX_SPECIES], *pend[DECK_MAX_SPECIES];
    int2 *items[DECK_MAX_SPECIES];
} kscan;

__global__ void __launch_bounds__(SCAN_THREADS) k_ionize_scan(const __grid_constant__ kscan a)
{
    __shared__ float wm[SCAN_THREADS / 32][3];
    const int c = blockIdx.x, lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (c == 0 && threadIdx.x < a.n)
        a.cnt[threadIdx.x].events = a.cnt[threadIdx.x].grow = 0;
    int ions = 0; /* species with ions here */
    for (int k = 0; k < a.n; k++)
        ions += a.count[k][c] > 0;
    float m[3] = {0.0f, 0.0f, 0.0f};
    if (ions && a.bound) { /* the largest |E_c| over the tile */
        const cluster_tile t = cluster_tile_of(a.x0, a.y0, a.ncx, c);
        for (int q = threadIdx.x; q < t.w * t.h; q += SCAN_THREADS) {
            const int k = a.off + t.i0 + q % t.w + (t.j0 + q / t.w) * a.stride;
            for (int d = 0; d < 3; d++)
                m[d] = fmaxf(m[d], fabsf(a.e[d][k]));
        }
        for (int d = 0; d < 3; d++) {
            for (int o = 16; o > 0; o >>= 1)
                m[d] = fmaxf(m[d], __shfl_xor_sync(FULL, m[d], o));
            if (lane == 0)
                wm[wid][d] = m[d];
        }
        __syncthreads();
        for (int d = 0; d < 3; d++)
            for (int w = 0; w < SCAN_THREADS / 32; w++)
                m[d] = fmaxf(m[d], wm[w][d]);
    }
    for (int k = wid; k < a.n; k += SCAN_THREADS / 32) { /* a warp per species */
        const int n = a.count[k][c], s0 = a.start[k][c];
        if (lane == 0)
            a.add[k][c] = a.pend[k][c] = 0;
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
        if (zlo >= a.zmax[k] || (a.bound && ionize_quiet(a.quiet[k][zlo], m, a.ext)))
            continue;
        const int chunks = (n + ION_CHUNK - 1) / ION_CHUNK;
        int at = 0;
        if (lane == 0)
            at = atomicAdd(&a.cnt[k].nitems, chunks);
        at = __shfl_sync(FULL, at, 0);
        for (int q = lane; q < chunks; q += 32)
            a.items[k][at + q] = make_int2(c, q);
    }
}

/* Where a group's items of species k begin in the launch's walk: first[k] (first[n]: all). */
__device__ __forceinline__ void group_first(const kion_group &g, int emit, int *first)
{
    first[0] = 0;
    for (int k = 0; k < ION_GROUP; k++)
        first[k + 1] = first[k] + (k < g.n ? (emit ? g.s[k].cnt->nemit : g.s[k].cnt->nitems) : 0);
}

/* Item it of the launch's walk (group_first's first[]): its species' arguments, and into *w
 * the item (cluster, chunk) of that species' list (emit: its emission list). */
__device__ __forceinline__ const kionize &group_item(const kion_group &g, const int *first,
                                                    int it, int emit, int2 *w)
{
    int k = 0;
    while (it >= first[k + 1])
        k++;
    const kionize &a = g.s[k];
    *w = (emit ? a.emits : a.items)[it - first[k]];
    return a;
}

/* The last of a launch's blocks to get here (every block's thread 0 calls it once) clears
 * the lists' counts for the next step: every block has read them. */
__device__ __forceinline__ void group_done(const kion_group &g, int emit)
{
    __threadfence();
    int *done = emit ? &g.s[0].cnt->emit_done : &g.s[0].cnt->items_done;
    if (atomicAdd(done, 1) == (int)gridDim.x - 1) {
        for (int k = 0; k < g.n; k++)
            *(emit ? &g.s[k].cnt->nemit : &g.s[k].cnt->nitems) = 0;
        *done = 0;
    }
}

__global__ void __launch_bounds__(ION_CHUNK, 4)
    k_ionize_charge(const __grid_constant__ kion_group g)
{
    __shared__ int red[ION_CHUNK / 32];
    int first[ION_GROUP + 1];
    group_first(g, 0, first);
    for (int it = blockIdx.x; it < first[g.n]; it += gridDim.x) {
        int2 w;
        const kionize &a = group_item(g, first, it, 0, &w);
        const int c = w.x, n = a.count[c], s0 = a.start[c], k = w.y * ION_CHUNK + threadIdx.x;
        int d = 0;
        if (k < n) {
            const int p = s0 + k, z0 = a.ion.z[p];
            int z = z0;
            if (z0 < a.t.zmax) { /* an ion stripped to zmax needs no field */
                const uint32_t cell = a.ion.cell[p];
                const int i = cell_i(cell), j = cell_j(cell);
                const float2 xy = a.ion.xy[p];
                const double e = ionize_field(a.e[0], a.e[1], a.e[2], a.xe,
                                              a.off + i + j * a.stride, a.stride, xy.x, xy.y,
                                              a.ext);
                ionize_stream r = ionize_stream_of(a.seed, a.species,
                                                   (uint32_t)(i + a.window_cells), (uint32_t)j,
                                                   (uint32_t)k, a.step);
                z = ionize_ion(&a.t, z0, e, &r);
            }
            d = z - z0;
            a.dz[p] = (uint8_t)d;
            if (d)
                a.ion.z[p] = (uint8_t)z;
        }
        d = __reduce_add_sync(FULL, d);
        if ((threadIdx.x & 31) == 0)
            red[threadIdx.x >> 5] = d;
        __syncthreads();
        if (threadIdx.x == 0) {
            int made = 0;
            for (int q = 0; q < ION_CHUNK / 32; q++)
                made += red[q];
            a.cne[(s0 >> 5) + w.y * (ION_CHUNK / 32)] = made;
            if (made) {
                const int before = atomicAdd(&a.add[c], made);
                atomicAdd(&a.pend[c], 1);
                atomicAdd(&a.cnt->events, made);
                a.emits[atomicAdd(&a.cnt->nemit, 1)] = w;
                if (a.ecount[c] + before + made > a.ecap[c])
                    a.cnt->grow = 1;
            }
        }
        __syncthreads(); /* red free for the next item */
    }
    if (threadIdx.x == 0)
        group_done(g, 0);
}

/* Sum w z and sum w over each cluster's ions (an energy row): a block per cluster. */
__global__ void __launch_bounds__(GPU_THREADS) k_ionize_sums(const __grid_constant__ kionize a)
{
    __shared__ double red[GPU_THREADS / 32];
    const int c = blockIdx.x, n = a.count[c], s0 = a.start[c];
    double zw = 0.0, w = 0.0;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const float pw = a.ion.uzw[s0 + k].y;
        zw += (double)pw * a.ion.z[s0 + k];
        w += pw;
    }
    zw = gpu_block_sum(zw, red);
    w = gpu_block_sum(w, red);
    if (threadIdx.x == 0) {
        a.sums[2 * c] = zw;
        a.sums[2 * c + 1] = w;
    }
}

/* The electrons of each listed chunk, after the cluster's electrons and those of its chunks
 * before: a block per chunk in turn. The last chunk of a cluster to be done moves the
 * cluster's count on (every chunk of it has read the count by then). */
__global__ void __launch_bounds__(ION_CHUNK) k_ionize_emit(const __grid_constant__ kion_group g)
{
    __shared__ int warp_tot[ION_CHUNK / 32];
    int first[ION_GROUP + 1];
    group_first(g, 1, first);
    for (int it = blockIdx.x; it < first[g.n]; it += gridDim.x) {
        int2 w;
        const kionize &a = group_item(g, first, it, 1, &w);
        const int c = w.x, n = a.count[c], s0 = a.start[c];
        int at = a.estart[c] + a.ecount[c];
        for (int q = 0; q < w.y; q++)
            at += a.cne[(s0 >> 5) + q * (ION_CHUNK / 32)];
        const int k = w.y * ION_CHUNK + (int)threadIdx.x, p = s0 + k;
        const int d = k < n ? a.dz[p] : 0;
        int total;
        const int o = at + gpu_block_scan(d, warp_tot, &total);
        if (d) {
            gpu_part v = gpu_parts_get(a.ion, p);
            v.code = 0;
            v.id = 0; /* untracked */
            v.z = 0;
            for (int m = 0; m < d; m++)
                gpu_parts_put(a.el, o + m, v);
        }
        if (threadIdx.x == 0) { /* after the scan's barriers: every thread has read the count */
            __threadfence();
            if (atomicSub(&a.pend[c], 1) == 1)
                a.ecount[c] += a.add[c];
        }
    }
    if (threadIdx.x == 0)
        group_done(g, 1);
}

/* Where the tables of n ionizing species lie in a block at base (NULL: sizes only). */
static ion_layout ion_layout_of(const gpu_state *g, const int *ions, int n, char *base)
{
    ion_layout L;
    memset(&L, 0, sizeof L);
    const size_t nc = (size_t)g->ncl;
    size_t at = 0;
    L.cnt = (ion_count *)base;
    at += n * sizeof(ion_count);
    for (int k = 0; k < n; k++, at += 2 * nc * sizeof(double))
        L.sums[k] = (double *)(base + at);
    L.back = at;
    for (int k = 0; k < n; k++) {
        const size_t slots = (size_t)g->sp[ions[k]].slots;
        const size_t items = nc + slots / ION_CHUNK + 1; /* chunks of every cluster, at most */
        L.add[k] = (int *)(base + at);
        L.pend[k] = L.add[k] + nc;
        L.cne[k] = L.pend[k] + nc;
        at += (2 * nc + slots / 32 + 2) * sizeof(int);
        at = (at + 7) / 8 * 8;
        L.items[k] = (int2 *)(base + at);
        L.emits[k] = L.items[k] + items;
        at += 2 * items * sizeof(int2);
    }
    L.bytes = at;
    return L;
}

/* gpu_state.ion_tab with room for the tables of n species (cleared when new: the lists'
 * counts start at 0), h_ion_tab for what the host reads and the ion counts, electron counts
 * and capacities and electrons made per cluster of one species; ion_dz for their slots
 * (dz0[k]: the k-th species' first). */
static ion_layout ionize_scratch(gpu_state *g, const int *ions, int n, size_t *dz0)
{
    ion_layout L = ion_layout_of(g, ions, n, NULL);
    if (g->ion_tab_n < L.bytes) {
        if (g->ion_tab)
            cudaFree(g->ion_tab), cudaFreeHost(g->h_ion_tab);
        g->ion_tab = (char *)gpu_malloc(g, L.bytes, "ionization tables");
        GPU_CK(cudaMemsetAsync(g->ion_tab, 0, L.bytes, g->stream));
        GPU_CK(cudaMallocHost((void **)&g->h_ion_tab, L.bytes));
        g->ion_tab_n = L.bytes;
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
    return ion_layout_of(g, ions, n, g->ion_tab);
}

/* The draws gpu_ionize queued: the ionizing species, their launches, their tables and
 * whether sums are wanted, for gpu_ionize_end. */
struct gpu_ionq {
    int n, ions[DECK_MAX_SPECIES], sums;
    kionize a[DECK_MAX_SPECIES];
    int charge_sm, emit_sm; /* resident blocks per multiprocessor */
};

/* Blocks of k a launch keeps resident: as many as fit on the device at once (*per_sm: the
 * kernel's count per multiprocessor, found once). */
template <typename K>
static int resident_blocks(const gpu_state *g, K k, int threads, int *per_sm)
{
    if (!*per_sm) {
        GPU_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, threads, 0));
        *per_sm = *per_sm > 0 ? *per_sm : 1;
    }
    return *per_sm * g->nsm;
}

/* The arguments of ionizing species s, the k-th. */
static kionize charge_args(gpu_state *g, pic_state *st, int s, int k, long long step,
                           const ion_layout *L, uint8_t *dz)
{
    gpu_species *d = &g->sp[s], *e = &g->sp[d->ion_to];
    kionize a;
    memset(&a, 0, sizeof a);
    a.t = *d->ion;
    a.ion = gpu_parts_of(d);
    a.start = d->start;
    a.count = d->count;
    a.ecount = e->count;
    a.ecap = e->cap;
    a.dz = dz;
    a.cnt = L->cnt + k;
    a.add = L->add[k];
    a.pend = L->pend[k];
    a.emits = L->emits[k];
    a.cne = L->cne[k];
    a.items = L->items[k];
    a.sums = L->sums[k];
    for (int m = 0; m < 3; m++) {
        a.e[m] = g->e[m];
        a.xe[m] = g->ext[m];
        a.ext[m] = st->ext.u[m];
    }
    a.off = g->off;
    a.stride = g->stride;
    a.seed = st->sp[s].seed;
    a.species = (unsigned)s;
    a.step = step;
    a.window_cells = st->window_cells;
    return a;
}

/* Launch the group's emission (a no-op when empty), then empty it. */
static void emit_group(gpu_state *g, kion_group *grp)
{
    if (!grp->n)
        return;
    k_ionize_emit<<<resident_blocks(g, k_ionize_emit, ION_CHUNK, &g->ionq->emit_sm), ION_CHUNK,
                    0, g->stream>>>(*grp);
    GPU_LAUNCHED(g, "k_ionize_emit");
    grp->n = 0;
}

/* After every species' charge draws: species s's electrons (its arguments a, the k-th; H:
 * the tables on the host) into their species, re-laid out first where a cluster lacks room,
 * added to the emission's group grp (launched first where the host reads the device's
 * counts or re-lays a species); returns what s did. fresh: no species before s in this step
 * gave its electron species electrons, so the device's room check holds. */
static ionize_stats emit(gpu_state *g, pic_state *st, int s, int k, kionize a,
                         const ion_layout *H, int sums, int fresh, kion_group *grp)
{
    gpu_species *d = &g->sp[s], *e = &g->sp[d->ion_to];
    const int nc = g->ncl;
    ionize_stats out = {H->cnt[k].events, 0.0, 0.0};
    int grow = H->cnt[k].grow;
    if (out.events && (grow || !fresh)) { /* the tables: each cluster's room */
        int *h_add = (int *)(g->h_ion_tab + H->back), *h_ecnt = h_add + nc;
        const size_t b = (size_t)nc * sizeof(int);
        emit_group(g, grp);
        GPU_CK(cudaMemcpyAsync(h_add, a.add, b, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaMemcpyAsync(h_ecnt, e->count, b, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaMemcpyAsync(h_ecnt + nc, e->cap, b, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaMemcpyAsync(h_ecnt + 2 * nc, d->count, b, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaStreamSynchronize(g->stream));
        grow = 0;
        for (int c = 0; c < nc; c++)
            grow |= h_ecnt[c] + h_add[c] > h_ecnt[nc + c];
        if (grow) { /* room for every cluster's electrons: the global rearrangement */
            int *need = (int *)empic_alloc((size_t)nc * sizeof(int), "ionization");
            for (int c = 0; c < nc; c++)
                need[c] = ionize_room(h_ecnt[c], h_add[c], h_ecnt[2 * nc + c], st->sp[s].z0,
                                      d->ion->zmax);
            gpu_relayout(g, st, d->ion_to, need, need, NULL);
            free(need);
            g->room_valid = 0;
        }
    }
    if (out.events) {
        a.el = gpu_parts_of(e); /* after a re-layout: its new arrays */
        a.estart = e->start;
        a.ecount = e->count;
        grp->s[grp->n++] = a;
        if (grp->n == ION_GROUP)
            emit_group(g, grp);
    }
    if (sums) {
        double *h = H->sums[k];
        comm_sum_double(h, 2 * (size_t)nc); /* per cluster, then in cluster order */
        for (int c = 0; c < nc; c++) {
            out.zw += h[2 * c];
            out.w += h[2 * c + 1];
        }
    }
    return out;
}


/* Every ionizing species' charge draws and one read-back of their counters (and sums),
 * queued; the next push's rest flags after them. With sums (an energy row),
 * gpu_ionize_end at once (returns 1); else 0: the host's wait for the counters comes later
 * (gpu_ionize_end, called after the next step's B half step is queued, so that it runs
 * meanwhile). */
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
    const ion_layout L = ionize_scratch(g, ions, n, dz0);
    gpu_fields_join(g); /* E(n+1) */
    const int nc = g->ncl;
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
    q.bound = !g->ext[0] && !g->ext[1] && !g->ext[2];
    q.cnt = L.cnt;
    for (int k = 0; k < n; k++) {
        memcpy(q.quiet[k], g->sp[ions[k]].ion->quiet, sizeof q.quiet[k]);
        q.z0[k] = st->sp[ions[k]].z0;
        q.zmax[k] = g->sp[ions[k]].ion->zmax;
        q.z[k] = g->sp[ions[k]].z;
        q.start[k] = g->sp[ions[k]].start;
        q.count[k] = g->sp[ions[k]].count;
        q.add[k] = L.add[k];
        q.pend[k] = L.pend[k];
        q.items[k] = L.items[k];
    }
    k_ionize_scan<<<nc, SCAN_THREADS, 0, g->stream>>>(q); /* untimed: the "other" phase, as on the CPU */
    GPU_LAUNCHED(g, "k_ionize_scan");
    kion_group grp;
    memset(&grp, 0, sizeof grp);
    for (int k = 0; k < n; k++) {
        grp.s[grp.n++] = iq->a[k] = charge_args(g, st, ions[k], k, step, &L, g->ion_dz + dz0[k]);
        if (grp.n == ION_GROUP || k == n - 1) {
            k_ionize_charge<<<resident_blocks(g, k_ionize_charge, ION_CHUNK, &iq->charge_sm),
                              ION_CHUNK, 0, g->stream>>>(grp);
            GPU_LAUNCHED(g, "k_ionize_charge");
            grp.n = 0;
        }
    }
    for (int k = 0; sums && k < n; k++) {
        k_ionize_sums<<<nc, GPU_THREADS, 0, g->stream>>>(iq->a[k]);
        GPU_LAUNCHED(g, "k_ionize_sums");
    }
    const size_t back = sums ? L.back : n * sizeof(ion_count);
    GPU_CK(cudaMemcpyAsync(g->h_ion_tab, g->ion_tab, back, cudaMemcpyDeviceToHost, g->stream));
    GPU_CK(cudaEventRecord(g->ion_ready, g->stream));
    gpu_rest_flags(g); /* the next push's, while the host waits */
    g->ion_open = 1;
    if (!sums)
        return 0;
    gpu_ionize_end(ctx, st, out);
    return 1;
}

/* The host's one wait for the counters, then each species' electrons in species order. */
void gpu_ionize_end(void *ctx, pic_state *st, ionize_stats *out)
{
    gpu_state *g = (gpu_state *)ctx;
    const struct gpu_ionq *iq = g->ionq;
    const double w0 = gpu_trace_now(g);
    GPU_CK(cudaEventSynchronize(g->ion_ready));
    gpu_trace_wait(g, "wait-ionize", w0);
    const ion_layout H = ion_layout_of(g, iq->ions, iq->n, g->h_ion_tab);
    unsigned given = 0; /* electron species given electrons so far */
    kion_group grp;
    memset(&grp, 0, sizeof grp);
    for (int k = 0; k < iq->n; k++) {
        const int s = iq->ions[k], to = g->sp[s].ion_to;
        out[s] = emit(g, st, s, k, iq->a[k], &H, iq->sums, !((given >> to) & 1u), &grp);
        given |= out[s].events ? 1u << to : 0u;
    }
    emit_group(g, &grp);
    g->ion_open = 0;
}
