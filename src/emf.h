/* emf.h - the electromagnetic fields on the Yee mesh (CPU side), with guard cells. */
#ifndef EMF_H
#define EMF_H

#include "kinds.h"
#include <stddef.h>

#define EMF_GUARD 2 /* guard cells on every side: stencils and deposits one cell out */
#define EMF_STORE 11 /* arrays in emf.store: e[3], b[3], j[3], rho, tmp */

typedef struct {
    int nx, ny;          /* interior cells */
    int stride, rows;    /* row length and number of rows, guards included */
    size_t size;         /* entries per component */
    int off;             /* linear index of cell (0, 0) */
    double dx, dy, dt;
    int bnd[4];          /* enum deck_fbnd */
    int filter_passes, filter_compensate;
    float *e[3], *b[3], *j[3], *rho; /* components at their Yee points (particle.h) */
    float *store;        /* one allocation behind all arrays: EMF_STORE x size floats */
    float *tmp;          /* scratch for the filter */
    double rho_bg;       /* uniform neutralising background of a non-neutral periodic box */
    long step;           /* E is at t = step dt (sim_step counts) */
    struct fbnd *fb;     /* non-periodic boundaries and laser sources (fbnd.h, made and freed
                            by the caller), or NULL */
    int glo[2], ghi[2];  /* nodes [glo, ghi) along x, y where emf_gauss_max looks */
} emf;

void emf_init(emf *f, const struct deck *d);
void emf_free(emf *f);
static inline int emf_idx(const emf *f, int i, int j) { return f->off + i + j * f->stride; }

void emf_b_half(emf *f);                /* B -= dt/2 curl E in the interior */
void emf_e_advance(emf *f);             /* E += dt (curl B - J) in the interior */
/* Periodic copy into the guards; guards of non-periodic sides are left as they are. */
void emf_guard_fill(const emf *f, float *a);
/* Add guard deposits into the interior across periodic sides; drop them at the others. */
void emf_guard_fold(const emf *f, float *a);
void emf_current_finish(emf *f);        /* fold J, apply the deck's filter */
void emf_filter(emf *f, float *a);      /* the deck's binomial passes (+ compensator) */
void emf_zero(const emf *f, float *a);
/* Solve the periodic discrete Poisson problem so that div E = rho - mean(rho) exactly;
 * the mean is kept as rho_bg (a uniform neutralising background). A box with a non-periodic
 * side starts with E = 0 and rho_bg = 0 instead (right for a neutral plasma; a non-neutral
 * one then starts with its charge as the Gauss-law residual). */
void emf_poisson(emf *f, const float *rho);
double emf_energy_e(const emf *f);
double emf_energy_b(const emf *f);
/* max |div E - (rho - rho_bg)| over the nodes [glo, ghi) (all interior nodes of a periodic
 * box; edge nodes, PML layers and laser planes left out otherwise). */
double emf_gauss_max(const emf *f, const float *rho);

#endif
