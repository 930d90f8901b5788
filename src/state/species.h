/* species.h - particles of one species in cluster segments (design.md §4), and their load. */
#ifndef SPECIES_H
#define SPECIES_H

#include "cluster.h"
#include "emf.h"
#include "ionize.h"
#include "kinds.h"
#include "pbnd.h"
#include "profile.h"
#include <stdint.h>
#include <stddef.h>

/* The cluster (tile) partition of the grid, shared by all species. Cluster counts are even
 * along each axis (the four-colour write-back and the bi-cluster pairs need it): the cells
 * are split as evenly as possible into an even number of clusters no wider than asked. */
typedef struct clusters {
    int ncx, ncy, n;     /* clusters along x, y and in all */
    int *x0, *y0;        /* first cell of each cluster column / row (ncx+1, ncy+1 entries) */
    int *cx_of, *cy_of;  /* cluster column of each cell column, row of each cell row */
    int wmax, hmax;      /* largest cluster width / height in cells */
    int periodic_x, periodic_y;
    /* This rank's share (design.md §12): cluster columns [cx0, cx1) and rows [cy0, cy1), an
     * even number of each, of rank (rx, ry) in an nrx x nry array (rank = rx + ry nrx); own[c] = 1
     * for its clusters; nb[side] the rank across each side (enum deck_side), itself across
     * a periodic side when the axis has one rank, -1 at a non-periodic edge. The tables of
     * the other clusters stay empty. The split is a tensor product: rank column r holds
     * cluster columns [bx[r], bx[r+1]) (nrx + 1 borders, even, from 0 to ncx), rank row r
     * cluster rows [by[r], by[r+1]), so that every rank has one rectangle and the neighbour
     * across a side shares its whole side; the load balancing moves the borders
     * (rebalance.h). */
    int nrx, nry, rx, ry, cx0, cx1, cy0, cy1;
    int *bx, *by;
    unsigned char *own;
    int nb[4];
} clusters;

/* The partition of d's grid, all of it owned by one rank. */
void clusters_init(clusters *c, const struct deck *d);
/* This rank's share among `size` ranks: d->ranks when given, else the nrx x nry split with
 * the shortest borders; with strips (GPU ranks) a split along one axis when one fits (each
 * rank then exchanges with two neighbours, not eight: faster on GPUs for every deck
 * measured, docs/performance.md). 0, or -1 after reporting an impossible split. */
int clusters_decompose(clusters *c, const struct deck *d, int size, int rank, int strips);
void clusters_free(clusters *c);
/* Borders bx (nrx + 1 entries) and by (nry + 1) of the same rank array: this rank's share
 * and own[] from them (the neighbours stay). */
void clusters_set_borders(clusters *c, const int *bx, const int *by);
/* The rank that holds cluster k under borders bx, by of c's rank array. */
int clusters_owner(const clusters *c, const int *bx, const int *by, int k);
static inline int cluster_id(const clusters *c, int cx, int cy) { return cx + cy * c->ncx; }
/* Several ranks: into h (every cluster's 9-bin migration histogram, this rank's filled) the
 * histograms of the ring of clusters around this rank's share, corners included, from the
 * ranks that hold them: all that sort_need (cluster.h) reads for this rank's clusters,
 * and what tells each rank how many leavers its neighbours send across a border (the sort
 * of both backends). */
void clusters_hist_halo(const clusters *cl, int *h);

/* Structure of arrays. Particle p sits in cell (cell_i(cell), cell_j(cell)) (cluster.h) at
 * offset (x, y) in [0,1); u = gamma v; w = density weight n/ppc; code = 4-bit migration code. */
typedef struct {
    const struct deck_species *cfg; /* the deck's entry (host code only) */
    const char *name;
    int immobile;         /* loaded and counted in rho, never pushed */
    int bnd[4];           /* enum deck_pbnd per side */
    int index;            /* species number (RNG key) */
    unsigned long long seed; /* the deck's seed (RNG key of loads and thermal walls) */
    float q, m, qm;       /* charge, mass, charge/mass */
    double wbound;        /* largest weight the deck's profile gives (fixed-point deposit
                             scale of the GPU: from the deck, so a restart gets the same) */
    size_t alloc;         /* allocated slots */
    uint32_t *cell;
    float *x, *y, *ux, *uy, *uz, *w;
    uint8_t *code;
    uint64_t *id;         /* tracking id (0: not tracked), NULL when the species is untracked */
    int tracked;          /* diagnostics.tracks names this species: id allocated */
    /* Field ionization (design.md §14): the species' levels (ionize.h), NULL when it does
     * not ionize; then each particle carries its charge state z (charge q z with q = 1,
     * q/m = 1/m: the push, the deposit and rho use q z), from the deck's charge at load,
     * and each ionization puts an electron into species ion_to. */
    ionize_table *ion;
    uint8_t *z;           /* charge states (ion != NULL), else NULL */
    int z0, ion_to;
    int cold;             /* ion: loaded and injected at rest and in no collision, so that a
                             neutral atom stays at rest (no force moves it) */
    uint64_t id_max;      /* tracked: the largest id this run can give (the load and every
                             column the window brings), which sets the GPU's id width */
    int *start, *count, *cap; /* per cluster: segment start, particles, capacity */
    const unsigned char *own; /* clusters of this rank (clusters.own): the others get no
                                 segment */
    int *hist;            /* per cluster: 9 bins of migration codes from the last move */
    int *peak;            /* per cluster: the largest count a layout was made for */
    int window_ncx;       /* a moving window's cluster columns (species_segments), else 0 */
    long long np;         /* particles in all */
    double slack;
    long long rearrangements;
    profile_fault bad;    /* a bad density met by the load or an injection (reported by
                             species_init, or by the guards after an injection) */
} species;

/* Tracking: 1 when d tracks species `index` (diagnostics.tracks). */
int species_tracked(const struct deck *d, int index);
/* Species `index` of d with empty cluster tables (no particles, no arrays). */
void species_open(species *s, const struct deck *d, int index, const clusters *cl);
/* Load the species of d->species[index] (regular positions ppc per cell, weights from the
 * density profile, Philox thermal momenta plus relativistic drift) into this rank's
 * clusters; count: their counts (species_load_counts), or NULL to count them first. */
void species_init(species *s, const struct deck *d, int index, const clusters *cl,
                  const int *count);
/* The particles that species_init loads into each cluster of this rank (the others' 0);
 * returns the bytes of one of its particle slots (species_slot_bytes). */
size_t species_load_counts(const struct deck *d, int index, const clusters *cl, int *count);
void species_free(species *s);
/* Particle arrays of n slots (the ids too when tracked); the tables are the caller's. */
void species_alloc(species *s, size_t n);
/* The particle arrays resized to n slots, the first min(n, alloc) kept (realloc, which moves
 * a large array by remapping its pages: no copy, no fresh page but those it grows by). */
void species_resize(species *s, size_t n);
/* Segments for the counts in s->count (species_segments) and particle arrays behind them. */
void species_layout(species *s, const clusters *cl);
/* Copy particle a to slot b (all arrays); inline: the sort calls it per mover. */
static inline void species_copy(species *s, size_t b, size_t a)
{
    s->cell[b] = s->cell[a];
    s->x[b] = s->x[a];
    s->y[b] = s->y[a];
    s->ux[b] = s->ux[a];
    s->uy[b] = s->uy[a];
    s->uz[b] = s->uz[a];
    s->w[b] = s->w[a];
    s->code[b] = s->code[a];
    if (s->id)
        s->id[b] = s->id[a];
    if (s->z)
        s->z[b] = s->z[a];
}
/* The segment layout of n clusters that hold count[c] particles and need room for need[c]
 * during a sort (need may be NULL): each segment's start and capacity (slack of the larger
 * of both, or in a moving window of the count and the right neighbour's, or of s->peak[c]
 * up to half the mean count when that is more; after a sort's overflow (hist, the last
 * move's histograms) room for the cluster's gain to go on; at least need[c]; rounded to 32 slots so
 * that segments start aligned), s->peak raised to the counts laid out; returns the slots in
 * all. Stops the run when they exceed 2^31. */
size_t species_segments(species *s, const clusters *cl, const int *count, const int *need,
                        const int *hist, int *start, int *cap);
/* n particles of s from slot `from` into slots of d from `to` (all arrays; the ids when d
 * tracks: then s does too). */
void species_copy_range(species *d, size_t to, const species *s, size_t from, size_t n);
/* Re-lay segments for clusters that hold count[c] and need room for need[c] during a sort
 * (global rearrangement; species_segments, with the last move's histograms hist when a
 * sort overflowed, else NULL). */
void species_relayout(species *s, const clusters *cl, const int *count, const int *need,
                      const int *hist);
/* Moving window: the particles of cell column i (all rows) as the initial load would have
 * put them in global column ig = i + cells moved (profiles at x = ig dx, RNG keyed by ig),
 * into the arrays of a fresh `out` (species_free it) in row order, add[cy] of them in
 * cluster row cy. Returns their number. */
long long species_column(const species *s, const struct deck *d, const clusters *cl, int i,
                         long ig, species *out, int *add);
/* Append col (species_column's particles of cell column i) to the clusters of that column,
 * relaying segments out when full; np is the caller's to update. */
void species_inject(species *s, const clusters *cl, int i, const species *col, const int *add);
/* Particle count check: every cluster's particles inside it, sum = np. Returns the number of
 * misplaced particles (0 when sound). */
long long species_misplaced(const species *s, const clusters *cl);
/* Whether cluster c lies on a side where species s has a non-periodic boundary. */
static inline int species_on_wall(const species *s, const clusters *cl, int c)
{
    return pbnd_edge_cluster(pbnd_sides(s->bnd), c % cl->ncx, c / cl->ncx, cl->ncx, cl->ncy);
}
/* The walls of species s in a box of nx x ny cells in the form of include/pbnd.h's rules
 * (both backends). */
void species_walls(const species *s, const clusters *cl, int nx, int ny, pbnd_walls *w);
/* The charge of particle p in units of e, times its weight: what it deposits. */
static inline float species_qw(const species *s, size_t p)
{
    return s->z ? s->q * (float)s->z[p] * s->w[p] : s->q * s->w[p];
}
/* Bytes of particle storage as allocated (slack included). */
double species_bytes(const species *s);
/* Bytes of one particle's slot (every array of s). */
size_t species_slot_bytes(const species *s);
/* Every per-particle array of s and its element size, in this order: cell, x, y, ux, uy, uz,
 * w, code, id, z (NULL where s has none: ids of an untracked species, charge states of one
 * that does not ionize). */
#define SPECIES_ARRAYS 10
enum { SPECIES_ID = 8 };
void species_array_table(const species *s, char *a[SPECIES_ARRAYS], size_t e[SPECIES_ARRAYS]);
/* The particles of cluster c array after array (cell, x, y, ux, uy, uz, w, code, then the
 * ids and charge states where s has them) into out; returns the bytes written (count[c]
 * times species_slot_bytes). */
size_t species_pack(const species *s, int c, char *out);
/* Another split (rebalance.h): s laid out anew for the clusters of cl->own, count[c] and
 * hist the tables of all ranks, peak the largest of theirs, in its own arrays resized; each
 * own cluster's particles moved from its old segment when from[c] is NULL (this rank held
 * the cluster before), else copied from the block species_pack made of it; np is then this
 * rank's count. */
void species_reshare(species *s, const clusters *cl, const int *count, const int *hist,
                     const int *peak, const char *const *from);
/* The fixed-point scale of the current and charge sums of both backends (emf.acc_scale),
 * from the deck (the same after a restart): the largest contribution one particle makes to
 * a node in a step is below max |q| w_max times max(1, dx/dt, dy/dt) (Jx, Jy: q w dx/dt
 * times a move below one cell; Jz: q w |v_z| < q w; rho: q w). */
float species_acc_scale(const species *sp, int nsp, const emf *f);

#endif
