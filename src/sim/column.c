/* column.c - the moving window's front column, now or ahead on a second thread (column.h). */
#include "column.h"
#include "ebal.h"
#include "empic.h"

#include <stdlib.h>
#include <string.h>

void column_make(column *c, const species *sp, int nsp, const deck *d, const clusters *cl,
                 long ig)
{
    const int i = d->nx - 1, stride = cl->ncy + 1;
    memset(c, 0, sizeof *c);
    c->nsp = nsp;
    c->add = empic_calloc((size_t)nsp * stride, sizeof(int), "injection");
    c->energy = empic_calloc((size_t)nsp * cl->ncy, sizeof(double), "injection");
    for (int s = 0; s < nsp; s++) {
        const species *col = &c->col[s];
        int *add = c->add + s * stride;
        c->n[s] = species_column(&sp[s], d, cl, i, ig, &c->col[s], add);
        for (int cy = 0, p = 0; cy < cl->ncy; cy++) /* in particle order */
            for (int q = 0; q < add[cy]; q++, p++)
                c->energy[s * cl->ncy + cy] +=
                    ebal_particle(col->w[p], col->ux[p], col->uy[p], col->uz[p]);
    }
}

void column_free(column *c)
{
    if (c->add)
        for (int s = 0; s < c->nsp; s++)
            species_free(&c->col[s]);
    free(c->add);
    free(c->energy);
    memset(c, 0, sizeof *c);
}

/* The thread: one column per request, until quit. */
static void *ahead_main(void *arg)
{
    column_ahead *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->quit && !(a->asked && !a->made))
            pthread_cond_wait(&a->cond, &a->lock);
        if (a->quit)
            break;
        const long ig = a->ig;
        pthread_mutex_unlock(&a->lock);
        column_make(&a->c, a->sp, a->nsp, a->d, a->cl, ig);
        pthread_mutex_lock(&a->lock);
        a->made = 1;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* Waits for the column asked, if any (the lock held). */
static void ahead_wait(column_ahead *a)
{
    while (a->asked && !a->made)
        pthread_cond_wait(&a->cond, &a->lock);
}

void column_ask(column_ahead *a, const species *sp, int nsp, const deck *d,
                const clusters *cl, long ig)
{
    if (!a->started) {
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->cond, NULL);
        a->asked = a->made = a->quit = 0;
        if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
            pthread_mutex_destroy(&a->lock);
            pthread_cond_destroy(&a->cond);
            column_drop(a);
            column_make(&a->c, sp, nsp, d, cl, ig); /* no thread: collected as made */
            a->ig = ig;
            a->asked = a->made = 1;
            return;
        }
        a->started = 1;
    }
    if (a->asked && a->ig == ig)
        return; /* under way, or made */
    column_drop(a);
    pthread_mutex_lock(&a->lock);
    memcpy(a->sp, sp, (size_t)nsp * sizeof *sp);
    a->nsp = nsp;
    a->d = d;
    a->cl = cl;
    a->ig = ig;
    a->asked = 1;
    a->made = 0;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

int column_collect(column_ahead *a, long ig, column *c)
{
    if (a->started)
        pthread_mutex_lock(&a->lock);
    int got = a->asked && a->ig == ig;
    if (got) {
        ahead_wait(a);
        *c = a->c;
        memset(&a->c, 0, sizeof a->c);
        a->asked = a->made = 0;
    }
    if (a->started)
        pthread_mutex_unlock(&a->lock);
    if (!got)
        column_drop(a);
    return got;
}

void column_drop(column_ahead *a)
{
    if (a->started)
        pthread_mutex_lock(&a->lock);
    if (a->asked) {
        ahead_wait(a);
        column_free(&a->c);
        a->asked = a->made = 0;
    }
    if (a->started)
        pthread_mutex_unlock(&a->lock);
}

void column_ahead_close(column_ahead *a)
{
    column_drop(a);
    if (a->started) {
        pthread_mutex_lock(&a->lock);
        a->quit = 1;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->thread, NULL);
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->cond);
        a->started = 0;
    }
}
