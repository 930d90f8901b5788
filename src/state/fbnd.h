/* fbnd.h - non-periodic field boundaries on the CPU: CPML absorbing layers of d.pml_cells
 * cells inside the box edge (include/pml.h), first-order Mur edges, and the laser sources
 * (lasers.h): their state, made and freed here; the CPU backend's updates are cpu_fbnd.h's,
 * the device's cuda/gpu_fbnd.cu.
 *
 * Edges: at a non-periodic side the guards are never filled by copy and currents deposited in
 * them are dropped (emf.c's fold), so nothing wraps. The boundary nodes are node 0 (interior storage)
 * and node nx (guard storage) along x, likewise along y. A PML side leaves the guards at zero
 * (the layer ends on a conducting wall, reached by 1e-5 of the wave after a round trip); a Mur
 * side sets the tangential E at the boundary node from the node inside. */
#ifndef FBND_H
#define FBND_H

#include "kinds.h"
#include "emf.h"
#include "ebal.h"
#include "lasers.h"
#include <stdint.h>

/* One CPML layer: cells [first, first+n) along `axis` (0: columns at x, 1: rows at y), all
 * cells along the other axis (len of them). Per depth cell l: b, c of the E points and of
 * the B points (full step each). psi[m][q], q = j * n + l for an x layer (row j) and
 * q = l * len + i for a y layer (column i); m = 0..3: x layer Ey, Ez, By, Bz terms; y layer
 * Ex, Ez, Bx, Bz terms. */
typedef struct {
    int axis, hi, n, first, len;
    float *eb, *ec, *bb, *bc;
    float *psi[4];
} pml_layer;

typedef struct fbnd {
    int bnd[4];                 /* enum deck_fbnd per side */
    int nlayers;
    pml_layer layer[4];
    float mur_m[2];             /* (dt - d)/(dt + d) along x, y */
    float *mur_old[4];          /* per Mur side: old edge and inner values of its two
                                   tangential components (4 lines of the side's length) */
    int nlasers;
    laser_src lasers[DECK_MAX_LASERS];
    long shift;                 /* cells the moving window has moved */
    long psi_step;              /* f->step of the last B psi update (one per step) */
} fbnd;

/* The boundary state of a deck (NULL when every side is periodic and there is no laser);
 * also sets f->glo/ghi, the nodes where Gauss's law is checked (layers, edges and laser
 * planes excluded). */
fbnd *fbnd_new(emf *f, const struct deck *d);
void fbnd_free(fbnd *b);
/* The energy balance region of a deck (ebal.h): the box less its PML layers and Mur edge
 * node lines, the same depths as the Gauss-law check's. */
ebal_region fbnd_region(const struct deck *d);
/* The state arrays of the non-periodic field boundaries (CPML memories psi of a layer, Mur
 * edge memories of a side), each over the whole box on every rank, of which each rank keeps
 * the entries of its own cells up to date. */
#define FBND_ARRAYS (4 * 4 + 4)
typedef struct {
    char name[16];   /* the checkpoint's dataset */
    float *data;
    size_t len;
    int layer, side; /* a CPML memory of layer `layer` (side -1), or the Mur memory of side */
} fbnd_array;

/* The boundary arrays of f into a (FBND_ARRAYS at most); returns their number (0 for a
 * periodic box). */
int fbnd_arrays(const emf *f, fbnd_array *a);
/* Boundary array a made whole into out (len entries): each entry from the rank that holds
 * its cell in f's split, as 32-bit patterns summed over the ranks (every entry non-zero on
 * one rank). Every rank calls it. */
void fbnd_whole(const emf *f, const fbnd_array *a, uint32_t *out);
/* Its exchange between ranks, after the layers' memories were shifted (also the CUDA
 * backend's, on host copies): the last column of this rank's cells and the guard column
 * beyond it from the rank on the right. */
void fbnd_shift_exchange(emf *f);

#endif
