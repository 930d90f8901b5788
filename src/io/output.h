/* output.h - openPMD 1.1.0 HDF5 dumps and XDMF descriptions (design.md §9). */
#ifndef OUTPUT_H
#define OUTPUT_H

#include "frame.h"

#include <hdf5.h>

/* Write OUTDIR/data/data%08ld.h5 (+ its .xmf, and refresh the run's time-series .xmf), or
 * append the step to OUTDIR/tracks/tracks.h5 (one openPMD group-based file per run, closed
 * and so flushed after each step, holding the step's XDMF text too; and refresh
 * tracks/series.xmf) for a tracks frame. Particle samples keep the
 * deck's fraction within diagnostics.particles.region/energy; ids are written where tracked.
 * Returns 0, or -1 after reporting the failing file. Files are written under a temporary
 * name and renamed when complete. */
int output_dump(const char *outdir, const output_frame *fr);

/* Before a run's first tracks step (rank 0): a fresh run removes an earlier run's
 * OUTDIR/tracks/tracks.h5; a restart from step `first` keeps it and drops the steps >= first
 * (written after the checkpoint), so that the continued file equals a straight run's. 0, or
 * -1 after reporting. */
int output_tracks_begin(const char *outdir, long first, int restart);
/* Remove the groups (or datasets) named by a step >= first from group `group` of an open
 * file; 0 or -1. */
int output_drop_steps(hid_t file, const char *group, long first);

#endif
