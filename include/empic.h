/* empic.h - portability macro, precision, error reporting shared by every file. */
#ifndef EMPIC_H
#define EMPIC_H

#include <stddef.h>

/* Physics formulas are written once as inline functions that the C backend and the CUDA
 * kernels both call; this macro makes them device functions under nvcc. */
#ifdef __CUDACC__
#define EMPIC_HD static inline __host__ __device__
#else
#define EMPIC_HD static inline
#endif

/* Full unrolling of short fixed loops, so that the CPU vectoriser sees straight-line code. */
#if defined(__CUDA_ARCH__)
#define EMPIC_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define EMPIC_UNROLL _Pragma("GCC unroll 8")
#else
#define EMPIC_UNROLL
#endif

/* Index i in [-n, 2n) wrapped periodically into [0, n) (cells, clusters, guard images). */
EMPIC_HD int wrap_index(int i, int n) { return i < 0 ? i + n : (i >= n ? i - n : i); }

/* Accumulate v into *p: an atomic add in a CUDA kernel (threads of a block share the target),
 * a plain add on the CPU (each thread owns its target). */
#ifdef __CUDA_ARCH__
#define EMPIC_ACC(p, v) atomicAdd((p), (v))
#else
#define EMPIC_ACC(p, v) (*(p) += (v))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The one error-reporting function: prints "empic: FILE:LINE: message" (FILE/LINE may be
 * NULL/0 when there is no location) to stderr. */
void empic_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Silence empic_report (on = 1) or let it speak again: the ranks other than 0 while they
 * read the command line and the deck, whose errors rank 0 reports for all. */
void empic_mute(int on);

/* Set by comm_init: this rank r of n (messages name it when n > 1) and the function that ends
 * every rank of the run on a fatal error (empic_exit calls it; exit() without it). */
void empic_ranks(int r, int n, void (*end_all)(int));

/* Last words before a fatal error ends the process: fn(arg) runs once, first, when the
 * thread that set it calls empic_exit (a run's clean stop: energy.csv, timing.json and the
 * line naming the last checkpoint); fn = NULL clears it. */
void empic_on_fatal(void (*fn)(void *), void *arg);

/* Report and exit(1): for errors a run cannot recover from. */
#define EMPIC_DIE(...) (empic_report(__FILE__, __LINE__, __VA_ARGS__), empic_exit(1))
void empic_exit(int code) __attribute__((noreturn));

/* Allocation that dies with a clear message on failure. */
void *empic_alloc(size_t bytes, const char *what);
void *empic_calloc(size_t n, size_t size, const char *what);
/* p resized to bytes, its first bytes kept (realloc), or the run stopped. */
void *empic_realloc(void *p, size_t bytes, const char *what);

#ifdef __cplusplus
}
#endif
#endif
