/* writer.c - the background dump writer (writer.h). */
#include "writer.h"

#include <stdio.h>
#include <string.h>

static int write_frames(writer *w)
{
    int rc = 0;
    for (int k = 0; k < w->nframes && !rc; k++)
        rc = output_dump(w->dir, &w->frame[k].fr);
    return rc;
}

static void *writer_main(void *arg)
{
    writer *w = arg;
    w->rc = write_frames(w);
    atomic_store_explicit(&w->done, 1, memory_order_release);
    return NULL;
}

static void copy_frame(writer_frame *c, const output_frame *fr)
{
    c->fr = *fr;
    c->f = *fr->f;
    c->fr.f = &c->f;
    memcpy(c->sp, fr->sp, (size_t)fr->nspecies * sizeof *c->sp);
    c->fr.sp = c->sp;
    if (fr->rho_species) {
        memcpy(c->per, fr->rho_species, (size_t)fr->nspecies * sizeof *c->per);
        c->fr.rho_species = c->per;
    }
}

int writer_start(writer *w, const char *dir, const output_frame *fr, int n)
{
    int before = 0; /* the caller waits before it fetches the frames' arrays */
    if (w->busy) {
        pthread_join(w->thread, NULL);
        w->busy = 0;
        before = w->rc;
    }
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->nframes = n < WRITER_FRAMES ? n : WRITER_FRAMES;
    for (int k = 0; k < w->nframes; k++)
        copy_frame(&w->frame[k], &fr[k]);
    w->rc = 0;
    atomic_store_explicit(&w->done, 0, memory_order_relaxed);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) /* writer_wait still */
        return write_frames(w) || before ? -1 : 0;            /* releases the tracked ones */
    w->busy = 1;
    return before;
}

int writer_wait(writer *w)
{
    int rc = 0;
    if (w->busy) {
        pthread_join(w->thread, NULL);
        w->busy = 0;
        rc = w->rc;
    }
    if (w->release) {
        w->release(w->release_ctx, w->tracked);
        w->release = NULL;
    }
    return rc;
}

int writer_poll(writer *w)
{
    if (w->busy && atomic_load_explicit(&w->done, memory_order_acquire))
        return writer_wait(w);
    return 0;
}
