/* output.h - openPMD 1.1.0 HDF5 dumps and XDMF descriptions (design.md §9). */
#ifndef OUTPUT_H
#define OUTPUT_H

#include "frame.h"

/* Write OUTDIR/data/data%08ld.h5 (+ its .xmf, and refresh the run's time-series .xmf), or
 * OUTDIR/tracks/tracks%08ld.h5 (+ .xmf) for a tracks frame. Particle samples keep the
 * deck's fraction within diagnostics.particles.region/energy; ids are written where tracked.
 * Returns 0, or -1 after reporting the failing file. Files are written under a temporary
 * name and renamed when complete. */
int output_dump(const char *outdir, const output_frame *fr);

#endif
