/* cpu_deposit.h - the CPU move and current deposit of one cluster: particle.h's move rule
 * (Kong's pieces, wrap, migration) in vectorised loops, a move that stays in its cell taking
 * only its one piece, then the pieces added to the cluster's tile in particle order: bitwise
 * the current of the rule applied particle by particle. */
#ifndef CPU_DEPOSIT_H
#define CPU_DEPOSIT_H

#include "cluster.h"
#include "particle.h"
#include "species.h"

/* What the move of one cluster needs: the species' per-step constants, the cluster and its
 * current tile (cluster.h), the grid (cell indices wrap periodically). */
typedef struct {
    move_step ms;
    cluster_tile T;
    int nx, ny;
} deposit_frame;

/* Move particles [start, end) of s by one step at their u(n+1/2), add their current to the
 * planar tile jx, jy, jz (zero on entry; it must hold one cell below and two above the
 * cluster in each axis), write their migration codes and the 9-bin histogram hist. */
void deposit_cluster(species *s, int start, int end, const deposit_frame *fr, float *jx,
                     float *jy, float *jz, int hist[9]);

/* The same in parts, so that each part can follow the push of the same particles while they
 * are in cache: deposit_begin, deposit_range over consecutive ranges of the cluster's
 * particles in order, deposit_end (the tile is complete after it). A deposit_run holds the
 * buffers of one thread. */
typedef struct deposit_run deposit_run;
deposit_run *deposit_run_new(void);
void deposit_run_free(deposit_run *d);
void deposit_begin(deposit_run *d, const deposit_frame *fr, float *jx, float *jy, float *jz,
                   int hist[9]);
void deposit_range(deposit_run *d, species *s, int start, int end);
void deposit_end(deposit_run *d);

/* A build for less than AVX-512 on x86-64 (MARCH=x86-64-v3: the portable bundle) also holds
 * AVX-512 (x86-64-v4) instances of the particle loops; a build for AVX-512 has them as its
 * own. */
#if defined(__x86_64__) && !defined(__AVX512F__)
#define CPU_AVX512_INSTANCE 1
#endif

/* Whether the particle loops (move and deposit, push) run their AVX-512 instances, compiled
 * for x86-64-v4 whatever the build's -march (a build for AVX-512 has only its own): where
 * the processor has it, the faster of the two as the CPU backend measures it on the first
 * steps (cpu_simd_take), unless EMPIC_CPU_SIMD in the environment says base (the build's own
 * instruction set) or avx512. The results are bitwise the same either way. */
int cpu_avx512(void);
/* 1 where both instances can run and the environment leaves the choice to a measurement. */
int cpu_simd_measured(void);
/* The instance from now on, where cpu_simd_measured (else nothing changes). */
void cpu_simd_take(int avx512);

#endif
