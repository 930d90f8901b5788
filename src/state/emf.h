/* emf.h - the electromagnetic fields on the Yee mesh as the host holds them, with guard cells:
 * their arrays, guard fills and current folds (with the neighbour ranks), the initial Poisson
 * solve and the field diagnostics. The CPU backend's updates are cpu_fields.h's. */
#ifndef EMF_H
#define EMF_H

#include "kinds.h"
#include <stddef.h>

struct clusters;

#define EMF_GUARD 2 /* guard cells on every side: stencils and deposits one cell out */
#define EMF_STORE 11 /* arrays in emf.store: e[3], b[3], j[3], rho, tmp */

/* Indices (i, j) are global: cells 0..nx-1, 0..ny-1 of the whole box. A rank stores its
 * cells [i0, i1) x [j0, j1) (the whole box on one rank) with EMF_GUARD guard cells around
 * them, refilled from the ranks across each side (nb, as clusters.nb) or across a periodic
 * side. */
typedef struct {
    int nx, ny;          /* cells of the box */
    int i0, i1, j0, j1;  /* this rank's cells */
    int nb[4];           /* the rank across each side (enum deck_side), or -1 */
    int stride, rows;    /* row length and number of rows, guards included */
    size_t size;         /* entries per component */
    int off;             /* linear index of global cell (0, 0) (negative on most ranks) */
    double dx, dy, dt;
    int bnd[4];          /* enum deck_fbnd */
    int filter_passes, filter_compensate;
    float *e[3], *b[3], *j[3], *rho; /* components at their Yee points (particle.h) */
    float *store;        /* one allocation behind all arrays: EMF_STORE x size floats */
    float *tmp;          /* scratch for the filter */
    long long *acc;      /* fixed-point current and charge (4 x size) before emf_acc_finish */
    float acc_scale;     /* their scale (species_acc_scale) */
    double rho_bg;       /* uniform neutralising background of a non-neutral periodic box */
    long step;           /* E is at t = step dt (sim_step counts) */
    struct fbnd *fb;     /* non-periodic boundaries and laser sources (fbnd.h, made and freed
                            by the caller), or NULL */
    int glo[2], ghi[2];  /* nodes [glo, ghi) along x, y where emf_gauss_max looks */
} emf;

/* The fields of d's box; this rank holds cells [lo[0], hi[0]) x [lo[1], hi[1]) with the
 * neighbours nb (clusters_decompose). */
void emf_init(emf *f, const struct deck *d, const int lo[2], const int hi[2], const int nb[4]);
void emf_free(emf *f);
static inline int emf_idx(const emf *f, int i, int j) { return f->off + i + j * f->stride; }
/* The arrays that make the fields' state (checkpoints, the ranks' gather), in this order:
 * Ex, Ey, Ez, Bx, By, Bz, Jx, Jy, Jz, rho. */
#define EMF_STATE 10
static inline void emf_state(const emf *f, float *a[EMF_STATE])
{
    float *const all[EMF_STATE] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1],
                                   f->b[2], f->j[0], f->j[1], f->j[2], f->rho};
    for (int k = 0; k < EMF_STATE; k++)
        a[k] = all[k];
}

/* 1 when cell (i, j) is this rank's. */
static inline int emf_owns(const emf *f, int i, int j)
{
    return i >= f->i0 && i < f->i1 && j >= f->j0 && j < f->j1;
}

/* The guards filled from the cells they stand for (the neighbour rank's, or this rank's
 * across a periodic side); guards of non-periodic box edges are left as they are. */
void emf_guard_fill(const emf *f, float *a);
/* Half of it: along x (axis 0: this rank's rows) or y (axis 1: whole rows, after x). */
void emf_guard_axis(const emf *f, float *a, int axis);
/* Fixed-point deposits a (f->acc layout) finished: the guard deposits added into the cells
 * they belong to (on this rank or the neighbour's; dropped at non-periodic box edges), then
 * converted to floats into dst (guards zero). Integer sums: the same whatever the ranks. */
void emf_acc_finish(const emf *f, long long *a, float *dst);
/* Its fold along x (axis 0: every row) or y (axis 1: whole rows, after x), guards zeroed. */
void emf_acc_fold(const emf *f, long long *a, int axis);
void emf_zero(const emf *f, float *a);
/* Solve the periodic discrete Poisson problem so that div E = rho - mean(rho) exactly;
 * the mean is kept as rho_bg (a uniform neutralising background). A box with a non-periodic
 * side starts with E = 0 and rho_bg = 0 instead (right for a neutral plasma; a non-neutral
 * one then starts with its charge as the Gauss-law residual). */
void emf_poisson(emf *f, const float *rho);
double emf_energy_e(const emf *f, const struct clusters *cl);
double emf_energy_b(const emf *f, const struct clusters *cl);
/* max |div E - (rho - rho_bg)| over the nodes [glo, ghi) (all interior nodes of a periodic
 * box; edge nodes, PML layers and laser planes left out otherwise), on all ranks. The
 * energies are sums per cluster, then over the clusters in order: the same double on any
 * number of ranks and threads. */
double emf_gauss_max(const emf *f, const float *rho);

#endif
