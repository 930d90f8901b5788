/* util.c - error reporting and checked allocation. */
#include "empic.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int muted;
static int rank = -1; /* this rank in a run of several, shown in every message */
static void (*fatal_exit)(int);
static void (*last_words)(void *);
static void *last_arg;
static pthread_t last_thread;

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
void empic_on_fatal(void (*fn)(void *), void *arg)
{
    last_words = fn;
    last_arg = arg;
    last_thread = pthread_self();
}

void empic_exit(int code)
{
    if (last_words && pthread_equal(pthread_self(), last_thread)) {
        void (*fn)(void *) = last_words;
        last_words = NULL; /* a failure inside fn ends the process at once */
        fn(last_arg);
    }
    if (fatal_exit)
        fatal_exit(code);
    /* no exit handlers: HDF5's would close a file left open by the failure, which may need
     * what ran out (the crash of an out-of-memory run at exit); every file that matters has
     * been written and closed, or is a temporary that the next start removes */
    fflush(NULL);
    _exit(code);
}

void *empic_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        empic_report(NULL, 0, "out of host memory allocating %zu bytes for %s", bytes, what);
        empic_exit(1);
    }
    return p;
}

void *empic_realloc(void *p, size_t bytes, const char *what)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) {
        empic_report(NULL, 0, "out of host memory resizing %s to %zu bytes", what, bytes);
        empic_exit(1);
    }
    return q;
}

void *empic_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        empic_report(NULL, 0, "out of host memory allocating %zu x %zu bytes for %s", n, size,
                     what);
        empic_exit(1);
    }
    return p;
}
