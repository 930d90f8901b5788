/* species.c - cluster partition, particle storage in cluster segments, initial load and the
 * global rearrangement of segments. */
#include "species.h"
#include "adk.h"
#include "comm.h"
#include "deck.h"
#include "empic.h"
#include "particle.h"
#include "rng.h"

#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* An even number of near-equal clusters of at most `want` cells over n cells. */
static int split_axis(int n, int want, int **first, int **of)
{
    int k = (n + want - 1) / want;
    k += k & 1;
    if (k < 2)
        k = 2;
    *first = empic_alloc((size_t)(k + 1) * sizeof(int), "cluster table");
    *of = empic_alloc((size_t)n * sizeof(int), "cluster table");
    int wmax = 0;
    for (int c = 0; c <= k; c++)
        (*first)[c] = (int)((long long)n * c / k);
    for (int c = 0; c < k; c++) {
        for (int i = (*first)[c]; i < (*first)[c + 1]; i++)
            (*of)[i] = c;
        int w = (*first)[c + 1] - (*first)[c];
        wmax = w > wmax ? w : wmax;
    }
    return k | (wmax << 16);
}


/* Rank r of p along an axis of n clusters: its pairs of clusters, split as evenly as the
 * pairs allow, as the range [*lo, *hi). */
static void rank_share(int n, int p, int r, int *lo, int *hi)
{
    *lo = 2 * (int)((long long)(n / 2) * r / p);
    *hi = 2 * (int)((long long)(n / 2) * (r + 1) / p);
}

/* The rank across side k of rank (rx, ry), or -1 (periodic: wrapped; one rank: itself). */
static int neighbour(const clusters *c, int k)
{
    const int axis = k / 2, step = k & 1 ? 1 : -1;
    int x = c->rx + (axis ? 0 : step), y = c->ry + (axis ? step : 0);
    if (axis ? (y < 0 || y >= c->nry) : (x < 0 || x >= c->nrx)) {
        if (!(axis ? c->periodic_y : c->periodic_x))
            return -1;
        x = (x + c->nrx) % c->nrx;
        y = (y + c->nry) % c->nry;
    }
    return x + y * c->nrx;
}

void clusters_set_borders(clusters *c, const int *bx, const int *by)
{
    memmove(c->bx, bx, (size_t)(c->nrx + 1) * sizeof(int));
    memmove(c->by, by, (size_t)(c->nry + 1) * sizeof(int));
    c->cx0 = c->bx[c->rx];
    c->cx1 = c->bx[c->rx + 1];
    c->cy0 = c->by[c->ry];
    c->cy1 = c->by[c->ry + 1];
    for (int k = 0; k < c->n; k++) {
        int cx = k % c->ncx, cy = k / c->ncx;
        c->own[k] = cx >= c->cx0 && cx < c->cx1 && cy >= c->cy0 && cy < c->cy1;
    }
}

/* The interval of borders b (n + 1 entries) that holds v. */
static int interval_of(const int *b, int n, int v)
{
    int r = 0;
    while (r < n - 1 && v >= b[r + 1])
        r++;
    return r;
}

int clusters_owner(const clusters *c, const int *bx, const int *by, int k)
{
    return interval_of(bx, c->nrx, k % c->ncx) + c->nrx * interval_of(by, c->nry, k / c->ncx);
}

/* Rank `rank` of an nrx x nry array, the split as even as the cluster pairs allow. */
static void set_share(clusters *c, int nrx, int nry, int rank)
{
    c->nrx = nrx;
    c->nry = nry;
    c->rx = rank % nrx;
    c->ry = rank / nrx;
    free(c->bx);
    free(c->by);
    c->bx = empic_alloc((size_t)(nrx + 1) * sizeof(int), "cluster table");
    c->by = empic_alloc((size_t)(nry + 1) * sizeof(int), "cluster table");
    for (int r = 0; r < nrx; r++)
        rank_share(c->ncx, nrx, r, &c->bx[r], &c->bx[r + 1]);
    for (int r = 0; r < nry; r++)
        rank_share(c->ncy, nry, r, &c->by[r], &c->by[r + 1]);
    clusters_set_borders(c, c->bx, c->by);
    for (int k = 0; k < 4; k++)
        c->nb[k] = neighbour(c, k);
}

void clusters_init(clusters *c, const deck *d)
{
    memset(c, 0, sizeof *c);
    int rx = split_axis(d->nx, d->cluster[0], &c->x0, &c->cx_of);
    int ry = split_axis(d->ny, d->cluster[1], &c->y0, &c->cy_of);
    c->ncx = rx & 0xffff;
    c->wmax = rx >> 16;
    c->ncy = ry & 0xffff;
    c->hmax = ry >> 16;
    c->n = c->ncx * c->ncy;
    c->periodic_x = d->fbnd[SIDE_XMIN] == FBND_PERIODIC;
    c->periodic_y = d->fbnd[SIDE_YMIN] == FBND_PERIODIC;
    c->own = empic_alloc((size_t)c->n, "cluster table");
    set_share(c, 1, 1, 0);
}

/* The split of size ranks into nrx x nry with the shortest borders between ranks, each
 * rank at least 2 clusters along each axis; strips: only 1 x size or size x 1 (the x strips
 * on a tie). Returns 0 when none fits. */
static int shortest_split(const clusters *c, const deck *d, int size, int strips, int *nrx,
                          int *nry)
{
    long best = -1;
    for (int a = size; a >= 1; a--)
        if (size % a == 0 && a <= c->ncx / 2 && size / a <= c->ncy / 2 &&
            (!strips || a == 1 || a == size)) {
            long cut = (long)(size / a - 1) * d->nx + (long)(a - 1) * d->ny;
            if (best < 0 || cut < best)
                best = cut, *nrx = a, *nry = size / a;
        }
    return best >= 0;
}

int clusters_decompose(clusters *c, const deck *d, int size, int rank, int strips)
{
    int nrx = d->ranks[0], nry = d->ranks[1];
    empic_mute(rank != 0); /* the same verdict on every rank: rank 0 gives it */
    if (nrx > 0 && nry > 0) {
        if (nrx * nry != size) {
            empic_report(d->file, 0, "parallel.ranks = [%d, %d] needs %d MPI ranks; the run "
                         "has %d (mpirun -np %d, or change parallel.ranks)", nrx, nry, nrx * nry,
                         size, nrx * nry);
            empic_mute(0);
            return -1;
        }
    } else if (!(strips && shortest_split(c, d, size, 1, &nrx, &nry)) &&
               !shortest_split(c, d, size, 0, &nrx, &nry)) {
        nrx = size, nry = 1; /* reported below */
    }
    if (nrx > c->ncx / 2 || nry > c->ncy / 2) {
        empic_report(d->file, 0, "%d x %d ranks cannot split %d x %d clusters (each rank "
                     "needs at least 2 clusters along each axis): use fewer ranks, smaller "
                     "clusters (grid.cluster) or another parallel.ranks", nrx, nry, c->ncx, c->ncy);
        empic_mute(0);
        return -1;
    }
    empic_mute(0);
    set_share(c, nrx, nry, rank);
    return 0;
}

/* Histograms of the clusters c = cluster_id(lo..hi along the axis, at `at` across it)
 * between h and buf (9 ints each; `at` and lo..hi wrapped around the box). */
static void hist_line(const clusters *cl, int *h, int axis, int at, int lo, int hi, int *buf,
                      int out)
{
    const int n = axis ? cl->ncx : cl->ncy, across = axis ? cl->ncy : cl->ncx;
    for (int o = lo; o < hi; o++, buf += 9) {
        const int a = (at + across) % across, b = (o + n) % n;
        int *e = h + 9 * (size_t)(axis ? cluster_id(cl, b, a) : cluster_id(cl, a, b));
        memcpy(out ? buf : e, out ? e : buf, 9 * sizeof(int));
    }
}

void clusters_hist_halo(const clusters *cl, int *h)
{
    const int me = comm_rank();
    /* along x this rank's rows; along y its columns and the x ring's (the corners) */
    const int lo[2] = {cl->cy0, cl->cx0 - (cl->periodic_x || cl->cx0 > 0)};
    const int hi[2] = {cl->cy1, cl->cx1 + (cl->periodic_x || cl->cx1 < cl->ncx)};
    const int first[2] = {cl->cx0, cl->cy0}, last[2] = {cl->cx1 - 1, cl->cy1 - 1};
    const int most = (cl->ncx > cl->ncy ? cl->ncx : cl->ncy) + 2; /* a line and its ring */
    int *buf = empic_alloc(2 * 9 * (size_t)most * sizeof(int), "sort exchange");
    for (int axis = 0; axis < 2; axis++) {
        const int down = cl->nb[2 * axis], up = cl->nb[2 * axis + 1];
        const size_t m = 9 * (size_t)(hi[axis] - lo[axis]);
        if (down == me && up == me)
            continue; /* the axis is this rank's alone: its own histograms */
        /* the first line to the rank below, the line above from the rank above; then the
         * last line up, the line below from below */
        for (int d = 0; d < 2; d++) {
            const int to = d ? up : down, from = d ? down : up;
            const int send = d ? last[axis] : first[axis];
            const int into = d ? first[axis] - 1 : last[axis] + 1;
            hist_line(cl, h, axis, send, lo[axis], hi[axis], buf, 1);
            if (comm_sendrecv(buf, to >= 0 ? m * sizeof(int) : 0, to, buf + m, m * sizeof(int),
                              from, 50 + 2 * axis + d))
                hist_line(cl, h, axis, into, lo[axis], hi[axis], buf + m, 0);
        }
    }
    free(buf);
}

void clusters_free(clusters *c)
{
    free(c->own);
    free(c->bx);
    free(c->by);
    free(c->x0);
    free(c->y0);
    free(c->cx_of);
    free(c->cy_of);
    memset(c, 0, sizeof *c);
}

void species_alloc(species *s, size_t n)
{
    s->alloc = n;
    s->cell = empic_alloc(n * sizeof(uint32_t), "particles");
    s->x = empic_alloc(n * sizeof(float), "particles");
    s->y = empic_alloc(n * sizeof(float), "particles");
    s->ux = empic_alloc(n * sizeof(float), "particles");
    s->uy = empic_alloc(n * sizeof(float), "particles");
    s->uz = empic_alloc(n * sizeof(float), "particles");
    s->w = empic_alloc(n * sizeof(float), "particles");
    s->code = empic_calloc(n, 1, "particles");
    s->id = s->tracked ? empic_calloc(n, sizeof(uint64_t), "particle ids") : NULL;
    s->z = s->ion ? empic_calloc(n, 1, "charge states") : NULL;
}

void species_resize(species *s, size_t n)
{
    s->cell = empic_realloc(s->cell, n * sizeof(uint32_t), "particles");
    s->x = empic_realloc(s->x, n * sizeof(float), "particles");
    s->y = empic_realloc(s->y, n * sizeof(float), "particles");
    s->ux = empic_realloc(s->ux, n * sizeof(float), "particles");
    s->uy = empic_realloc(s->uy, n * sizeof(float), "particles");
    s->uz = empic_realloc(s->uz, n * sizeof(float), "particles");
    s->w = empic_realloc(s->w, n * sizeof(float), "particles");
    s->code = empic_realloc(s->code, n, "particles");
    if (s->id)
        s->id = empic_realloc(s->id, n * sizeof(uint64_t), "particles");
    if (s->z)
        s->z = empic_realloc(s->z, n, "particles");
    s->alloc = n;
}

static void species_release(species *s)
{
    free(s->cell);
    free(s->x);
    free(s->y);
    free(s->ux);
    free(s->uy);
    free(s->uz);
    free(s->w);
    free(s->code);
    free(s->id);
    free(s->z);
}

/* The first bad density of a load or injection: kept for the caller to report. */
static void note_bad(species *s, double x, double y, double v)
{
#pragma omp critical(species_bad)
    if (!s->bad.found) {
        s->bad.found = 1;
        s->bad.what = "density";
        s->bad.x = x;
        s->bad.y = y;
        s->bad.value = v;
    }
}

/* The largest weight n(x,y)/ppc of the species' profile: exact for uniform and piecewise
 * profiles, the largest value on a 65 x 65 lattice over the box for a formula (an estimate:
 * the fixed-point deposit it scales has 2^30 of headroom). */
static double weight_bound(const deck_species *c, const deck *d)
{
    double m = 1.0;
    if (c->profile == PROFILE_PIECEWISE) {
        const deck_pwl *pw[2] = {&c->pwl_x, &c->pwl_y};
        for (int a = 0; a < 2; a++) {
            double f = pw[a]->n ? 0.0 : 1.0;
            for (int k = 0; k < pw[a]->n; k++)
                f = pw[a]->f[k] > f ? pw[a]->f[k] : f;
            m *= f;
        }
    } else if (c->profile == PROFILE_EXPR) {
        profile_eval p;
        profile_open(&p, c);
        m = 0.0;
        for (int b = 0; b <= 64; b++)
            for (int a = 0; a <= 64; a++) {
                double v = formula_eval(p.dens, a / 64.0 * d->nx * d->dx, b / 64.0 * d->ny * d->dy);
                m = v > m ? v : m;
            }
        profile_close(&p);
    }
    return fabs(c->n) * m / ((double)c->ppc[0] * c->ppc[1]);
}

/* Whether species `index` loads (and injects) its particles at rest and collides with
 * nothing: no thermal momentum, drifts that are the number 0. */
static int species_cold(const deck *d, int index)
{
    const deck_species *c = &d->species[index];
    for (int k = 0; k < 3; k++) {
        double v;
        if (c->uth[k] != 0.0 || !formula_number(c->drift[k], &v) || v != 0.0)
            return 0;
    }
    for (int k = 0; k < d->ncollisions; k++)
        if (d->collisions[k].species[0] == index || d->collisions[k].species[1] == index)
            return 0;
    return 1;
}

/* The largest weight of species `index`: its profile's, or for a species with no load that
 * ionization fills, the largest of the ion species that feed it (electron weight = ion
 * weight). */
static double species_wbound(const deck *d, int index)
{
    const deck_species *c = &d->species[index];
    if (c->ppc[0] > 0)
        return weight_bound(c, d);
    double b = 0.0;
    for (int k = 0; k < d->nspecies; k++)
        if (d->species[k].ionize && d->species[k].ion_electrons == index)
            b = fmax(b, species_wbound(d, k));
    return b;
}

/* The tracking id of particle k (a + b ppx) of the ppc in cell (ig, j) of a grid of ny rows:
 * 1 + its place in the load order of the box and every column the window brings in. */
static uint64_t track_id(long ig, int j, int k, int ny, int ppc)
{
    return 1 + ((uint64_t)ig * (uint64_t)ny + (uint64_t)j) * (uint64_t)ppc + (uint64_t)k;
}

/* Visit the regular ppc positions of cell (i, j), in global column ig (i plus the cells the
 * moving window has moved: the x of the profiles and the RNG key); fill from slot `at` when
 * `fill`, else only count. The RNG is keyed by (seed, species, cell, particle in cell) with
 * cell = (ig mod nx) + j nx and the particle number carrying ig / nx in its high 16 bits, so
 * an injected column is new and the initial load (ig < nx) is keyed as always. Returns the
 * particles of the cell. */
static int load_cell(species *s, const deck *d, profile_eval *p, int i, int j, long ig,
                     size_t at, int fill)
{
    const deck_species *cfg = s->cfg;
    const int ppx = cfg->ppc[0], ppy = cfg->ppc[1];
    const int iso = cfg->uth[0] == cfg->uth[1] && cfg->uth[1] == cfg->uth[2];
    const uint32_t key = (uint32_t)(ig % d->nx) + (uint32_t)j * (uint32_t)d->nx,
                   wrap = (uint32_t)(ig / d->nx) << 16;
    int n = 0;
    for (int b = 0; b < ppy; b++)
        for (int a = 0; a < ppx; a++) {
            float ox = profile_offset(a, ppx), oy = profile_offset(b, ppy);
            double xp = (ig + (double)ox) * d->dx, yp = (j + (double)oy) * d->dy;
            double dens = profile_density(cfg, p, xp, yp);
            if (!(dens >= 0.0) && !fill) /* beyond what deck_load checked: stop, not skip */
                note_bad(s, xp, yp, dens);
            if (!(dens > 0.0))
                continue;
            if (fill) {
                size_t q = at + (size_t)n;
                rng_stream r;
                float u[3] = {0, 0, 0};
                double ud[3];
                rng_init(&r, d->seed, (unsigned)s->index, key,
                         (uint32_t)(a + b * ppx) | wrap);
                if (iso && cfg->uth[0] >= 0.5)
                    rng_juttner(&r, cfg->uth[0] * cfg->uth[0], u);
                else
                    for (int k = 0; k < 3; k++)
                        u[k] = cfg->uth[k] > 0.0 ? (float)cfg->uth[k] * rng_normal(&r)
                                                 : 0.0f;
                for (int k = 0; k < 3; k++)
                    ud[k] = p->drift[k] ? formula_eval(p->drift[k], xp, yp)
                                        : p->drift_const[k];
                rng_boost(u, ud);
                s->cell[q] = cell_pack(i, j);
                s->x[q] = ox;
                s->y[q] = oy;
                s->ux[q] = u[0];
                s->uy[q] = u[1];
                s->uz[q] = u[2];
                s->w[q] = (float)(dens / (ppx * ppy));
                s->code[q] = 0;
                if (s->z)
                    s->z[q] = (uint8_t)s->z0;
                if (s->id) { /* a share of tracks_fraction, its own Philox counter */
                    rng_init(&r, d->seed, (unsigned)s->index, key,
                             (uint32_t)(a + b * ppx) | wrap);
                    r.ctr.v[3] = 0x80000000u;
                    s->id[q] = rng_uniform(&r) <= d->tracks_fraction
                                   ? track_id(ig, j, a + b * ppx, d->ny, ppx * ppy)
                                   : 0;
                }
            }
            n++;
        }
    return n;
}

/* Every cell of cluster cl: filled from slot `at`, or only counted when at == (size_t)-1.
 * Returns the particles of the cluster. */
static int load_cluster(species *s, const deck *d, const clusters *c, int cl, profile_eval *p,
                        size_t at)
{
    const int cx = cl % c->ncx, cy = cl / c->ncx, fill = at != (size_t)-1;
    int n = 0;
    for (int j = c->y0[cy]; j < c->y0[cy + 1]; j++)
        for (int i = c->x0[cx]; i < c->x0[cx + 1]; i++)
            n += load_cell(s, d, p, i, j, i, fill ? at + (size_t)n : 0, fill);
    return n;
}

/* Segment capacity for `n` particles: n plus the slack fraction of n, or plus `more` when
 * that is more, plus a little for empty clusters, rounded to 32 slots so segments start
 * aligned. */
static int segment_capacity(const species *s, long long n, double more)
{
    const double room = (double)n * (1.0 + s->slack);
    long long c = (long long)ceil((double)n + more > room ? (double)n + more : room) + 32;
    c = (c + 31) / 32 * 32;
    if (c > 0x7fffffffLL)
        EMPIC_DIE("species %s: a cluster needs %lld particle slots; use smaller clusters",
                  s->name, c);
    return (int)c;
}

/* The count cluster c is laid out for: its count, or more when a sort needs more on the way
 * (it holds its arrivals from one side before its leavers go to the other), which marks a
 * filling cluster. In a moving window that need is the shift's column from the right
 * neighbour, steady traffic rather than growth (slack on it cost 5 % of decks/lwfa.cfg's
 * memory; species_segments keeps it as a floor): there the plasma drifts one cell left per
 * shift, so the cluster soon holds what its right neighbour holds, and gets room for that
 * (a filling cluster would otherwise overflow again every few shifts). */
static int layout_want(const species *s, int c, const int *count, const int *need)
{
    const int nx = s->window_ncx;
    const int more = nx ? ((c + 1) % nx ? count[c + 1] : 0) : need ? need[c] : 0;
    return count[c] > more ? count[c] : more;
}

/* A cluster that held more particles in an earlier layout (s->peak) keeps room for them,
 * scaled down when that room would exceed the slack of the rank's whole species: the
 * clusters by a laser-heated foil lose and regain their hot electrons by the hundred, and
 * where a plasma emptied a cluster it refills by amounts of its neighbours' size (in the
 * pair decks' Weibel cavities 30 % of a few hundred particles overflowed every few steps;
 * each overflow re-lays the whole species). After a sort's overflow (hist: the last move's
 * histograms) a cluster that gains particles also gets room for LAYOUT_STEPS more steps of
 * its gain, up to its count or half the mean count: the clusters that a hot plasma expands
 * into fill steadily from nothing, and with the slack alone one of them overflowed every
 * few steps (the foil's electrons on 4 GPUs: a re-layout of the whole species every 6
 * steps). (In a moving window the shift's traffic has its room from layout_want.) */
#define LAYOUT_STEPS 64
size_t species_segments(species *s, const clusters *cl, const int *count, const int *need,
                        const int *hist, int *start, int *cap)
{
    const int n = cl->n;
    double sum = 0.0, back = 0.0;
    int owned = 0;
    for (int c = 0; c < n; c++)
        if (!s->own || s->own[c]) {
            const int want = layout_want(s, c, count, need);
            sum += want;
            back += want < s->peak[c] ? s->peak[c] - want : 0;
            owned++;
        }
    const double half = owned > 0 ? 0.5 * sum / owned : 0.0;
    const double scale = back > s->slack * sum ? s->slack * sum / back : 1.0;
    size_t total = 0;
    for (int c = 0; c < n; c++) {
        const int want = layout_want(s, c, count, need);
        double more = want < s->peak[c] ? scale * (s->peak[c] - want) : 0.0;
        if (hist && !s->window_ncx) {
            const int gain = cluster_net_inflow(hist, c % cl->ncx, c / cl->ncx, cl->ncx, cl->ncy);
            more = fmax(more, fmin((double)LAYOUT_STEPS * gain, fmax(want, half)));
        }
        s->peak[c] = want > s->peak[c] ? want : s->peak[c];
        start[c] = (int)total;
        cap[c] = 0;
        if (!s->own || s->own[c]) {
            cap[c] = segment_capacity(s, want, more);
            const int floor = need ? (need[c] + 31) / 32 * 32 : 0;
            cap[c] = floor > cap[c] ? floor : cap[c];
        }
        total += (size_t)cap[c];
    }
    if (total > 0x7fffffffu)
        EMPIC_DIE("species %s: %zu particle slots exceed the 2^31 limit", s->name, total);
    return total;
}

void species_open(species *s, const deck *d, int index, const clusters *c)
{
    memset(s, 0, sizeof *s);
    s->cfg = &d->species[index];
    s->name = s->cfg->name;
    s->immobile = s->cfg->immobile;
    memcpy(s->bnd, s->cfg->bnd, sizeof s->bnd);
    s->index = index;
    s->seed = d->seed;
    s->q = (float)s->cfg->charge;
    s->m = (float)s->cfg->mass;
    s->qm = (float)(s->cfg->charge / s->cfg->mass);
    if (s->cfg->ionize) {
        s->ion = empic_alloc(sizeof *s->ion, "ionization table");
        adk_table(d, index, s->ion);
        s->z0 = (int)s->cfg->charge;
        s->ion_to = s->cfg->ion_electrons;
        s->cold = species_cold(d, index);
        s->q = 1.0f;
        s->qm = (float)(1.0 / s->cfg->mass);
    }
    s->slack = d->slack;
    s->wbound = species_wbound(d, index);
    s->tracked = species_tracked(d, index);
    s->window_ncx = d->window_enabled ? c->ncx : 0;
    if (s->tracked && s->cfg->ppc[0] > 0) { /* the last particle the run can load */
        const int ppc = s->cfg->ppc[0] * s->cfg->ppc[1];
        s->id_max = track_id(d->nx - 1 + profile_window_moves(d), d->ny - 1, ppc - 1, d->ny, ppc);
    }
    s->start = empic_calloc((size_t)c->n, sizeof(int), "cluster table");
    s->count = empic_calloc((size_t)c->n, sizeof(int), "cluster table");
    s->cap = empic_calloc((size_t)c->n, sizeof(int), "cluster table");
    s->hist = empic_calloc((size_t)c->n * 9, sizeof(int), "cluster table");
    s->peak = empic_calloc((size_t)c->n, sizeof(int), "cluster table");
    s->own = c->own;
}

/* The initial load's count of every cluster of this rank (the others' 0), without the
 * particles. */
static void count_load(species *s, const deck *d, const clusters *c)
{
#pragma omp parallel
    {
        profile_eval p;
        profile_open(&p, s->cfg);
#pragma omp for schedule(dynamic)
        for (int cl = 0; cl < c->n; cl++)
            s->count[cl] = c->own[cl] ? load_cluster(s, d, c, cl, &p, (size_t)-1) : 0;
        profile_close(&p);
    }
    if (s->bad.found)
        EMPIC_DIE("species %s: density = %g at (x, y) = (%.9g, %.9g), a load position; expected "
                  "a finite value >= 0 (the deck checks visited a subset of this large load)",
                  s->name, s->bad.value, s->bad.x, s->bad.y);
}

size_t species_load_counts(const deck *d, int index, const clusters *c, int *count)
{
    species s;
    species_open(&s, d, index, c);
    count_load(&s, d, c);
    memcpy(count, s.count, (size_t)c->n * sizeof(int));
    const size_t unit = species_slot_bytes(&s);
    species_free(&s);
    return unit;
}

void species_init(species *s, const deck *d, int index, const clusters *c, const int *count)
{
    species_open(s, d, index, c);
    if (count)
        for (int cl = 0; cl < c->n; cl++)
            s->count[cl] = c->own[cl] ? count[cl] : 0;
    else
        count_load(s, d, c);
    for (int cl = 0; cl < c->n; cl++)
        s->np += s->count[cl];
    species_layout(s, c);
#pragma omp parallel
    {
        profile_eval p;
        profile_open(&p, s->cfg);
#pragma omp for schedule(dynamic)
        for (int cl = 0; cl < c->n; cl++)
            if (c->own[cl])
                load_cluster(s, d, c, cl, &p, (size_t)s->start[cl]);
        profile_close(&p);
    }
}

void species_layout(species *s, const clusters *cl)
{
    species_alloc(s, species_segments(s, cl, s->count, NULL, NULL, s->start, s->cap));
}

void species_free(species *s)
{
    species_release(s);
    free(s->ion);
    free(s->start);
    free(s->count);
    free(s->cap);
    free(s->hist);
    free(s->peak);
    memset(s, 0, sizeof *s);
}

void species_array_table(const species *s, char *a[SPECIES_ARRAYS], size_t e[SPECIES_ARRAYS])
{
    char *const all[SPECIES_ARRAYS] = {(char *)s->cell, (char *)s->x,  (char *)s->y,
                                       (char *)s->ux,   (char *)s->uy, (char *)s->uz,
                                       (char *)s->w,    (char *)s->code, (char *)s->id,
                                       (char *)s->z};
    static const size_t size[SPECIES_ARRAYS] = {4, 4, 4, 4, 4, 4, 4, 1, 8, 1};
    for (int k = 0; k < SPECIES_ARRAYS; k++) {
        a[k] = all[k];
        e[k] = size[k];
    }
}

/* The arrays of s that it has with their element sizes, in species_pack's order; returns
 * their number. */
static int packed_arrays(const species *s, char *a[SPECIES_ARRAYS], size_t e[SPECIES_ARRAYS])
{
    char *all[SPECIES_ARRAYS];
    size_t size[SPECIES_ARRAYS];
    species_array_table(s, all, size);
    int n = 0;
    for (int k = 0; k < SPECIES_ARRAYS; k++)
        if (all[k]) {
            a[n] = all[k];
            e[n++] = size[k];
        }
    return n;
}

void species_copy_range(species *d, size_t to, const species *s, size_t from, size_t n)
{
    char *a[SPECIES_ARRAYS], *b[SPECIES_ARRAYS];
    size_t e[SPECIES_ARRAYS];
    const int na = packed_arrays(d, a, e);
    packed_arrays(s, b, e); /* the same arrays as d's */
    for (int k = 0; k < na; k++)
        memcpy(a[k] + to * e[k], b[k] + from * e[k], n * e[k]);
}

void species_relayout(species *s, const clusters *cl, const int *count, const int *need,
                      const int *hist)
{
    int *start = empic_alloc((size_t)cl->n * sizeof(int), "cluster table");
    int *cap = empic_alloc((size_t)cl->n * sizeof(int), "cluster table");
    size_t total = species_segments(s, cl, count, need, hist, start, cap);
    species old = *s;
    species_alloc(s, total > s->alloc ? total : s->alloc);
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++)
        species_copy_range(s, (size_t)start[c], &old, (size_t)old.start[c],
                           (size_t)old.count[c]);
    species_release(&old);
    memcpy(s->start, start, (size_t)cl->n * sizeof(int));
    memcpy(s->cap, cap, (size_t)cl->n * sizeof(int));
    free(start);
    free(cap);
    s->rearrangements++;
}

void species_inject(species *s, const clusters *cl, int i, const species *col, const int *add)
{
    const int cx = cl->cx_of[i];
    int grow = 0;
    for (int cy = 0; cy < cl->ncy; cy++)
        grow |= s->count[cluster_id(cl, cx, cy)] + add[cy] > s->cap[cluster_id(cl, cx, cy)];
    if (grow) {
        int *need = empic_alloc((size_t)cl->n * sizeof(int), "injection");
        for (int c = 0; c < cl->n; c++)
            need[c] = s->count[c] + (c % cl->ncx == cx ? add[c / cl->ncx] : 0);
        species_relayout(s, cl, need, need, NULL);
        free(need);
    }
    size_t from = 0;
    for (int cy = 0; cy < cl->ncy; cy++) {
        int c = cluster_id(cl, cx, cy);
        size_t at = (size_t)s->start[c] + (size_t)s->count[c], n = (size_t)add[cy];
        species_copy_range(s, at, col, from, n); /* a loaded column's codes are 0 */
        s->count[c] += add[cy];
        from += n;
    }
}

#define COLUMN_THREADS 4

long long species_column(const species *s, const deck *d, const clusters *cl, int i, long ig,
                         species *out, int *add)
{
    memset(out, 0, sizeof *out);
    out->cfg = s->cfg;
    out->name = s->name;
    out->immobile = s->immobile;
    memcpy(out->bnd, s->bnd, sizeof out->bnd);
    out->index = s->index;
    out->seed = s->seed;
    out->tracked = s->tracked;
    if (s->ion) { /* its own copy: species_free frees it */
        out->ion = empic_alloc(sizeof *out->ion, "ionization table");
        *out->ion = *s->ion;
    }
    out->z0 = s->z0;
    const int cx = cl->cx_of[i];
    int *from = empic_alloc((size_t)(cl->ncy + 1) * sizeof(int), "injection");
    /* this rank's clusters of the column, their rows counted, then filled at their offsets,
       the rows spread over a few threads (each particle keyed by its cell: the same whatever
       the threads; idle OpenMP threads spin on after a parallel region, and more of them
       would take the cores that a device backend's host threads need) */
#pragma omp parallel num_threads(COLUMN_THREADS)
    {
        profile_eval p;
        profile_open(&p, s->cfg);
#pragma omp for schedule(static)
        for (int cy = 0; cy < cl->ncy; cy++) {
            add[cy] = 0;
            if (cl->own[cluster_id(cl, cx, cy)])
                for (int j = cl->y0[cy]; j < cl->y0[cy + 1]; j++)
                    add[cy] += load_cell(out, d, &p, i, j, ig, 0, 0);
        }
#pragma omp single
        {
            from[0] = 0;
            for (int cy = 0; cy < cl->ncy; cy++)
                from[cy + 1] = from[cy] + add[cy];
            species_alloc(out, from[cl->ncy] > 0 ? (size_t)from[cl->ncy] : 1);
        }
#pragma omp for schedule(static)
        for (int cy = 0; cy < cl->ncy; cy++) {
            size_t at = (size_t)from[cy];
            for (int j = cl->y0[cy]; j < cl->y0[cy + 1] && add[cy]; j++)
                at += (size_t)load_cell(out, d, &p, i, j, ig, at, 1);
        }
        profile_close(&p);
    }
    out->np = from[cl->ncy];
    free(from);
    return out->np;
}

long long species_misplaced(const species *s, const clusters *cl)
{
    long long bad = 0, n = 0;
    for (int c = 0; c < cl->n; c++) {
        int cx = c % cl->ncx, cy = c / cl->ncx;
        n += s->count[c];
        if (s->count[c] > s->cap[c] || s->count[c] < 0)
            bad += 1;
        for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
            int i = cell_i(s->cell[p]), j = cell_j(s->cell[p]);
            if (i >= cl->x0[cl->ncx] || j >= cl->y0[cl->ncy]) {
                bad++;
                continue;
            }
            if (cl->cx_of[i] != cx || cl->cy_of[j] != cy || !(s->x[p] >= 0.0f) ||
                !(s->x[p] < 1.0f) || !(s->y[p] >= 0.0f) || !(s->y[p] < 1.0f))
                bad++;
        }
    }
    return bad + (n != s->np ? 1 : 0);
}

int species_tracked(const deck *d, int index)
{
    return d->tracks_every > 0 && ((d->tracks_species_mask >> index) & 1);
}

size_t species_slot_bytes(const species *s)
{
    char *a[SPECIES_ARRAYS];
    size_t e[SPECIES_ARRAYS], per = 0;
    const int na = packed_arrays(s, a, e);
    for (int k = 0; k < na; k++)
        per += e[k];
    return per;
}

double species_bytes(const species *s)
{
    return (double)species_slot_bytes(s) * (double)s->alloc;
}

size_t species_pack(const species *s, int c, char *out)
{
    char *a[SPECIES_ARRAYS];
    size_t e[SPECIES_ARRAYS], o = 0;
    const int na = packed_arrays(s, a, e);
    for (int k = 0; k < na; k++) {
        const size_t n = (size_t)s->count[c] * e[k];
        memcpy(out + o, a[k] + (size_t)s->start[c] * e[k], n);
        o += n;
    }
    return o;
}

/* species_pack's block of n particles into the slots of s from `at`. */
static void unpack(species *s, size_t at, const char *in, size_t n)
{
    char *a[SPECIES_ARRAYS];
    size_t e[SPECIES_ARRAYS];
    const int na = packed_arrays(s, a, e);
    for (int k = 0; k < na; k++) {
        memcpy(a[k] + at * e[k], in, n * e[k]);
        in += n * e[k];
    }
}

void species_reshare(species *s, const clusters *cl, const int *count, const int *hist,
                     const int *peak, const char *const *from)
{
    const int n = cl->n;
    int *start = empic_alloc((size_t)n * sizeof(int), "cluster table");
    int *cap = empic_alloc((size_t)n * sizeof(int), "cluster table");
    s->np = 0;
    for (int c = 0; c < n; c++) {
        const int mine = cl->own[c];
        s->count[c] = mine ? count[c] : 0;
        for (int b = 0; b < 9; b++)
            s->hist[9 * c + b] = mine ? hist[9 * c + b] : 0;
        s->peak[c] = peak[c];
        s->np += s->count[c];
    }
    const size_t total = species_segments(s, cl, s->count, NULL, NULL, start, cap);
    /* The clusters this rank keeps move from their old segments (s->start) to the new:
     * within the arrays when they have the slots (no fresh pages to fault in), else into new
     * arrays. Both layouts keep the clusters in order, so within the arrays a segment that
     * moves up can only land on the old segments of later clusters that move up too, and one
     * that moves down on those of earlier ones that move down: the first moved from the last
     * down, then the second from the first up, nothing is overwritten before it has moved.
     * The arrays in parallel. */
    species old = *s;
    const int grow = total > s->alloc;
    if (grow)
        species_alloc(s, total);
    char *a[SPECIES_ARRAYS], *o[SPECIES_ARRAYS];
    size_t e[SPECIES_ARRAYS];
    const int na = packed_arrays(s, a, e);
    packed_arrays(&old, o, e);
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < na; k++) {
        for (int c = n - 1; c >= 0; c--)
            if (cl->own[c] && !from[c] && start[c] > old.start[c])
                memmove(a[k] + (size_t)start[c] * e[k], o[k] + (size_t)old.start[c] * e[k],
                        (size_t)count[c] * e[k]);
        for (int c = 0; c < n; c++)
            if (cl->own[c] && !from[c] &&
                (start[c] < old.start[c] || (start[c] == old.start[c] && grow)))
                memmove(a[k] + (size_t)start[c] * e[k], o[k] + (size_t)old.start[c] * e[k],
                        (size_t)count[c] * e[k]);
    }
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < n; c++)
        if (cl->own[c] && from[c])
            unpack(s, (size_t)start[c], from[c], (size_t)count[c]);
    if (grow)
        species_release(&old);
    else if (total < s->alloc)
        species_resize(s, total);
    memcpy(s->start, start, (size_t)n * sizeof(int));
    memcpy(s->cap, cap, (size_t)n * sizeof(int));
    free(start);
    free(cap);
}

void species_walls(const species *s, const clusters *cl, int nx, int ny, pbnd_walls *w)
{
    for (int k = 0; k < 4; k++)
        w->bnd[k] = s->bnd[k];
    w->ncx = cl->ncx;
    w->ncy = cl->ncy;
    w->nx = nx;
    w->ny = ny;
    for (int k = 0; k < 3; k++)
        w->uth[k] = (float)s->cfg->uth[k];
    w->seed = s->seed;
    w->species = (unsigned)s->index;
}

float species_acc_scale(const species *sp, int nsp, const emf *f)
{
    double r = fmax(1.0, fmax(f->dx / f->dt, f->dy / f->dt)), bound = 0.0;
    for (int s = 0; s < nsp; s++)
        bound = fmax(bound, fabs((double)sp[s].q) * (sp[s].ion ? sp[s].ion->zmax : 1) *
                                sp[s].wbound * r);
    return fixed_scale(bound);
}
