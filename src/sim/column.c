/* column.c - the moving window's front column, now or one shift ahead (column.h). */
#include "column.h"
#include "empic.h"

#include <stdlib.h>
#include <string.h>

static void *column_main(void *arg)
{
    column *c = arg;
    const int i = c->d->nx - 1, stride = c->cl->ncy + 1;
    for (int s = 0; s < c->nsp; s++)
        c->n[s] = species_column(&c->sp[s], c->d, c->cl, i, c->ig, &c->col[s],
                                 c->add + s * stride);
    return NULL;
}

void column_make(column *c, const species *sp, int nsp, const deck *d, const clusters *cl,
                 long ig, int ahead)
{
    memset(c, 0, sizeof *c);
    c->sp = sp;
    c->nsp = nsp;
    c->d = d;
    c->cl = cl;
    c->ig = ig;
    c->add = empic_calloc((size_t)nsp * (cl->ncy + 1), sizeof(int), "injection");
    if (ahead && pthread_create(&c->thread, NULL, column_main, c) == 0)
        c->busy = 1;
    else
        column_main(c);
}

void column_wait(column *c)
{
    if (c->busy)
        pthread_join(c->thread, NULL);
    c->busy = 0;
}

void column_free(column *c)
{
    column_wait(c);
    if (c->add)
        for (int s = 0; s < c->nsp; s++)
            species_free(&c->col[s]);
    free(c->add);
    memset(c, 0, sizeof *c);
    c->ig = -1;
}
