/* util.c - error reporting and checked allocation. */
#include "comm.h"
#include "empic.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int muted;

void empic_mute(int on) { muted = on; }

void empic_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (muted)
        return;
    fputs("empic: ", stderr);
    if (comm_size() > 1)
        fprintf(stderr, "rank %d: ", comm_rank());
    if (file && line > 0)
        fprintf(stderr, "%s:%d: ", file, line);
    else if (file)
        fprintf(stderr, "%s: ", file);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* One rank's fatal error ends every rank of the run (comm.h). */
void empic_exit(int code) { comm_abort(code); }

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
