/* column.h - the plasma of the moving window's front column (species_column of every
 * species): on a device backend made as soon as the window has moved, while the device
 * pushes and sorts (the host is idle then), on the host backend when it is injected; the
 * column depends only on the deck and its lab position, so the particles are the same
 * either way. */
#ifndef COLUMN_H
#define COLUMN_H

#include "deck.h"
#include "species.h"

typedef struct {
    species col[DECK_MAX_SPECIES]; /* species_column's particles per species */
    int *add;                      /* and its per-row counts, nsp x (ncy + 1) */
    long long n[DECK_MAX_SPECIES]; /* particles per species */
    long ig;                       /* the lab column they fill; -1: none made */
    int nsp;
} column;

/* c (zeroed or freed) made for lab column ig of the grid's last cell column. */
void column_make(column *c, const species *sp, int nsp, const deck *d, const clusters *cl,
                 long ig);
/* Frees the particles; c is empty (ig = -1) after. */
void column_free(column *c);

#endif
