/* column.c - the moving window's front column (column.h). */
#include "column.h"
#include "empic.h"

#include <stdlib.h>
#include <string.h>

void column_make(column *c, const species *sp, int nsp, const deck *d, const clusters *cl,
                 long ig)
{
    const int i = d->nx - 1, stride = cl->ncy + 1;
    memset(c, 0, sizeof *c);
    c->nsp = nsp;
    c->ig = ig;
    c->add = empic_calloc((size_t)nsp * stride, sizeof(int), "injection");
    for (int s = 0; s < nsp; s++)
        c->n[s] = species_column(&sp[s], d, cl, i, ig, &c->col[s], c->add + s * stride);
}

void column_free(column *c)
{
    if (c->add)
        for (int s = 0; s < c->nsp; s++)
            species_free(&c->col[s]);
    free(c->add);
    memset(c, 0, sizeof *c);
    c->ig = -1;
}
