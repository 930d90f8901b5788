/* writer.h - dumps written by a background thread (one rank: several write each dump
 * together on the main thread, where MPI is called, h5par.h). On the CUDA backend the host
 * holds only copies of the device state, which nothing changes between two fetches: a dump
 * can then be written by HDF5 while the GPU goes on stepping, so the time loop stalls only
 * for the copy.
 * Whoever fetches from the device again or uses HDF5 (the next dump, in-code diagnostics,
 * checkpoints) waits for the writer first (sim_wait_writes); the steps in between only poll
 * it (writer_poll), so a tracks dump every few steps overlaps those steps. */
#ifndef WRITER_H
#define WRITER_H

#include "output.h"
#include <pthread.h>
#include <stdatomic.h>

#define WRITER_FRAMES 2 /* a step's tracks dump and its full dump */

typedef struct {
    output_frame fr;                              /* with the copies below */
    emf f;
    species sp[DECK_MAX_SPECIES];
    const float *per[DECK_MAX_SPECIES];
} writer_frame;

typedef struct {
    pthread_t thread;
    int busy, rc, nframes;
    atomic_int done;                              /* the thread has finished its frames */
    char dir[DECK_PATH_MAX];
    writer_frame frame[WRITER_FRAMES];
    /* arrays that live until the frames are written: the compacted tracked particles
     * (backend.fetch_tracked into `tracked`), released by writer_wait with release(ctx) */
    species tracked[DECK_MAX_SPECIES];
    void (*release)(void *ctx, species *tracked);
    void *release_ctx;
} writer;

/* Write output_dump(dir, fr[k]) for k = 0..n-1 in order in the background, stopping at the
 * first that fails; each frame's structs (fields, species, the per-species charge list) are
 * copied, the arrays they point to must stay until writer_wait. Falls back to writing at
 * once (and returns its status) when no thread can be started. */
int writer_start(writer *w, const char *dir, const output_frame *fr, int n);
/* Wait for the dump under way, if any, then release the tracked particles it held; its
 * status: 0, or -1 after it reported an error. */
int writer_wait(writer *w);
/* writer_wait when the dump under way has finished, else 0 at once. */
int writer_poll(writer *w);

#endif
