/* xdmf.h - XDMF 2 descriptions of the openPMD dumps, for ParaView (its Xdmf3 readers and the
 * legacy XDMF reader) and VisIt. */
#ifndef XDMF_H
#define XDMF_H

#include "h5out.h"
#include "frame.h"

/* Yee staggering classes; XDMF describes one rectilinear grid per class. */
enum { ST_NODE = 0, ST_X, ST_Y, ST_XY, ST_COUNT };
/* Offset of each class in cells, in (y, x) order (openPMD `position`). */
extern const double XDMF_ST_POS[ST_COUNT][2];

/* Write DIR/SERIES%08ld.xmf for the file just written (w lists its datasets) and refresh
 * DIR/series.xmf from every SERIES%08ld.xmf found next to its .h5. Both files are one
 * spatial collection of temporal collections, one per block (a staggering class or a
 * species), so that every reader shows the same block names at every time; and, for VisIt,
 * DIR/series_<block>.xmf with one block's series each. 0 or -1. */
int xdmf_dump(const char *dir, const char *series, const h5w *w, const output_frame *fr);
/* The tracks series keeps no .xmf per step: the XDMF text of a tracks step (xdmf_tracks,
 * malloc'd; output.c stores it in tracks.h5 as /xdmf_text/<step>) and DIR/series.xmf (and
 * series_<block>.xmf) refreshed with it (xdmf_tracks_series; after a restart the texts are
 * read back from tracks.h5). */
char *xdmf_tracks(const h5w *w, const output_frame *fr);
int xdmf_tracks_series(const char *dir, const output_frame *fr, const char *text);

#endif
