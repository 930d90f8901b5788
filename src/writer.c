/* writer.c - the background dump writer (writer.h). */
#include "writer.h"

#include <stdio.h>
#include <string.h>

static void *writer_main(void *arg)
{
    writer *w = arg;
    w->rc = output_dump(w->dir, &w->fr);
    return NULL;
}

int writer_start(writer *w, const char *dir, const output_frame *fr)
{
    writer_wait(w);
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->fr = *fr;
    w->f = *fr->f;
    w->fr.f = &w->f;
    memcpy(w->sp, fr->sp, (size_t)fr->nspecies * sizeof *w->sp);
    w->fr.sp = w->sp;
    if (fr->rho_species) {
        memcpy(w->per, fr->rho_species, (size_t)fr->nspecies * sizeof *w->per);
        w->fr.rho_species = w->per;
    }
    w->rc = 0;
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
        return output_dump(w->dir, &w->fr);
    w->busy = 1;
    return 0;
}

int writer_wait(writer *w)
{
    if (!w->busy)
        return 0;
    pthread_join(w->thread, NULL);
    w->busy = 0;
    return w->rc;
}
