/* column.h - the plasma of the moving window's front column (species_column of every
 * species). The host backend makes it when it injects; a device backend has each next one
 * made ahead on a second host thread while the device steps, since over several ranks the
 * thread that queues the device's work has no time to spare. The column depends only on
 * the deck and its lab position, so the particles are the same either way. */
#ifndef COLUMN_H
#define COLUMN_H

#include "deck.h"
#include "species.h"
#include <pthread.h>

typedef struct {
    species col[DECK_MAX_SPECIES]; /* species_column's particles per species */
    int *add;                      /* and its per-row counts, nsp x (ncy + 1) */
    double *energy;                /* and the energy they bring per row, nsp x ncy (ebal.h) */
    long long n[DECK_MAX_SPECIES]; /* particles per species */
    int nsp;
} column;

/* c (its contents overwritten) made for lab column ig of the grid's last cell column. */
void column_make(column *c, const species *sp, int nsp, const deck *d, const clusters *cl,
                 long ig);
/* Frees the particles; c is empty after. */
void column_free(column *c);

/* The second thread and the column it makes (zeroed: idle, no thread yet). */
typedef struct {
    column c;                     /* made by the thread (its own until made) */
    long ig;                      /* the lab column asked */
    species sp[DECK_MAX_SPECIES]; /* the species' settings, copied when asked */
    const deck *d;
    const clusters *cl;
    int nsp, asked, made, quit, started;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} column_ahead;

/* Column ig of sp's species asked of a's thread (started at the first call; made now when
 * none can be started), unless it was already. d and cl stay unchanged until it is
 * collected or dropped. */
void column_ask(column_ahead *a, const species *sp, int nsp, const deck *d,
                const clusters *cl, long ig);
/* The column asked for ig moved into c (its contents overwritten) once made: 1; 0 when none
 * was. */
int column_collect(column_ahead *a, long ig, column *c);
/* A column asked and not collected waited for and freed. */
void column_drop(column_ahead *a);
/* column_drop, then the thread stopped. */
void column_ahead_close(column_ahead *a);

#endif
