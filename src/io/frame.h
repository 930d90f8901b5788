/* frame.h - what one dump writes (output.c writes it as openPMD HDF5, xdmf.c describes it). */
#ifndef FRAME_H
#define FRAME_H

#include "emf.h"
#include "kinds.h"
#include "species.h"

typedef struct {
    const struct deck *d;
    const emf *f;             /* E at t, B at t, J at t - dt/2, interior cells written (this
                                 rank's) */
    const float *rho;         /* total charge density (emf layout), or NULL */
    const float *const *rho_species; /* per species (emf layout), or NULL */
    float *ext;               /* the external fields Ex, Ey, Ez, Bx, By, Bz at t (6 arrays of
                                 the emf layout: extfield_fill), or NULL */
    float *avg;               /* an averaged dump's means (fieldavg.h: the arrays of
                                 average.h's order, emf layout), or NULL */
    const species *sp;        /* the species */
    int nspecies;
    const clusters *cl;
    long step;
    double t;
    double x0, y0;            /* box origin (moves with the window) */
    int fields;               /* write the meshes selected by d->fields_quantities (with
                                 ext's records) */
    int particles;            /* write the species selected by d->particles_species_mask */
    int tracks;               /* instead: the tracked particles (id != 0) of every tracked
                                 species into OUTDIR/tracks/tracks%08T.h5 (particles = 1) */
    int shared;               /* every rank writes its share (its cells, its clusters'
                                 particles) into the one file with the others (h5par.h);
                                 0: this rank writes the whole run alone */
} output_frame;

#endif
