/* writer.h - dumps written by a background thread. On the CUDA backend the host holds only
 * copies of the device state, which nothing changes between two fetches: a dump can then be
 * written by HDF5 while the GPU goes on stepping, so the time loop stalls only for the copy.
 * Whoever fetches from the device again or uses HDF5 (the next dump, in-code diagnostics,
 * checkpoints) waits for the writer first (sim_wait_writes). */
#ifndef WRITER_H
#define WRITER_H

#include "output.h"
#include <pthread.h>

typedef struct {
    pthread_t thread;
    int busy, rc;
    char dir[DECK_PATH_MAX];
    output_frame fr;                              /* with the copies below */
    emf f;
    species sp[DECK_MAX_SPECIES];
    const float *per[DECK_MAX_SPECIES];
} writer;

/* Write output_dump(dir, fr) in the background; the frame's structs (fields, species, the
 * per-species charge list) are copied, the arrays they point to must stay until writer_wait.
 * Falls back to writing at once (and returns its status) when no thread can be started. */
int writer_start(writer *w, const char *dir, const output_frame *fr);
/* Wait for the dump under way, if any; its status: 0, or -1 after it reported an error. */
int writer_wait(writer *w);

#endif
