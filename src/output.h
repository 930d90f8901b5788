/* output.h - openPMD 1.1.0 HDF5 dumps and XDMF descriptions (design.md §9). */
#ifndef OUTPUT_H
#define OUTPUT_H

#include "kinds.h"
#include "emf.h"
#include "species.h"

typedef struct {
    const struct deck *d;
    const emf *f;             /* E at t, B at t, J at t - dt/2, interior cells written */
    const float *rho;         /* total charge density (emf layout), or NULL */
    const float *const *rho_species; /* per species (emf layout), or NULL */
    const species *sp;        /* the species */
    int nspecies;
    const clusters *cl;
    long step;
    double t;
    double x0, y0;            /* box origin (moves with the window) */
    int fields;               /* write the meshes selected by d->fields_quantities */
    int particles;            /* write the species selected by d->particles_species_mask */
    int tracks;               /* instead: the tracked particles (id != 0) of every tracked
                                 species into OUTDIR/tracks/tracks%08T.h5 (particles = 1) */
} output_frame;

/* Write OUTDIR/data/data%08ld.h5 (+ its .xmf, and refresh the run's time-series .xmf), or
 * OUTDIR/tracks/tracks%08ld.h5 (+ .xmf) for a tracks frame. Particle samples keep the
 * deck's fraction within diagnostics.particles.region/energy; ids are written where tracked.
 * Returns 0, or -1 after reporting the failing file. Files are written under a temporary
 * name and renamed when complete. */
int output_dump(const char *outdir, const output_frame *fr);

#endif
