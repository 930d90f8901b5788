/* util.c - error reporting and checked allocation. */
#include "empic.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int muted;
static int rank = -1; /* this rank in a run of several, shown in every message */
static void (*fatal_exit)(int);

void empic_mute(int on) { muted = on; }

void empic_ranks(int r, int n, void (*end_all)(int))
{
    rank = n > 1 ? r : -1;
    fatal_exit = end_all;
}

void empic_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (muted)
        return;
    fputs("empic: ", stderr);
    if (rank >= 0)
        fprintf(stderr, "rank %d: ", rank);
    if (file && line > 0)
        fprintf(stderr, "%s:%d: ", file, line);
    else if (file)
        fprintf(stderr, "%s: ", file);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* One rank's fatal error ends every rank of the run (the hook comm.c sets). */
void empic_exit(int code)
{
    if (fatal_exit)
        fatal_exit(code);
    fflush(stdout);
    exit(code);
}

void *empic_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        EMPIC_DIE("out of host memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *empic_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        EMPIC_DIE("out of host memory allocating %zu x %zu bytes for %s", n, size, what);
    return p;
}
