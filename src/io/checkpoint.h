/* checkpoint.h - restart files (design.md §9, OUTDIR/checkpoint/ckpt%08ld.h5).
 *
 * A checkpoint is taken between steps (E at n dt, B and u at (n - 1/2) dt, x at n dt) and
 * holds everything a bitwise-identical continuation on the same backend needs: the step, E,
 * B, J and rho with guards, rho_bg, every species' live particles with the cluster tables
 * (start, count, cap, hist), np and rearrangements, the phase timers and particle_steps, the
 * last energy diagnostic, the field clock, the CPML and Mur memories, the moving window's
 * position and the resolved deck text. It is written to a temporary name,
 * fsynced and renamed; the newest two of the run are kept; *.tmp files are never read.
 * When sim_run writes them: sim_after_step (sim.h). */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include "sim_state.h"

#define CHECKPOINT_VERSION 2

/* Write S's state from the host arrays (the caller fetches a device backend's state first) to
 * S->d.output/checkpoint/ckpt<step>.h5, then remove the run's older checkpoints except the
 * previous one. Collective: every rank writes its share. 0, or -1 after reporting (earlier
 * checkpoints are left untouched; the same on every rank). */
int checkpoint_write(sim *S);
/* The newest complete checkpoint for DIR: DIR itself when it is a file, else the newest
 * readable ckpt%08ld.h5 in DIR/checkpoint/ or in DIR. Its path goes to path, its step to
 * *step. Collective: the ranks check the files together, each its share. 0, or -1 after
 * reporting. */
int checkpoint_find(const char *dir, char *path, size_t len, long *step);
/* Load the deck stored in the checkpoint at path; diagnostics.output becomes the folder that
 * holds its checkpoint/ folder, or the checkpoint's own folder when that is not a run's
 * checkpoint/ (a folder of checkpoints copied out of their run). 0, or -1 after reporting. */
int checkpoint_read_deck(const char *path, deck *d);
/* Restart path of sim_init: S->d, S->cl, S->f and the backend are set up; fill the fields,
 * the species and the counters from the checkpoint at path, of any number of ranks: each
 * rank reads its own share only (its cells and guards, its clusters' particles). 0, or -1
 * after reporting. */
int checkpoint_load(sim *S, const char *path);
/* 1 when the checkpoint file at path belongs to the run in folder dir: it lies in
 * dir/checkpoint/, or is a copy of one there (the same hash, whatever its name). */
int checkpoint_of_run(const char *path, const char *dir);
/* The run folder of a checkpoint file (the folder that holds its checkpoint/ folder) into
 * out. 0, or -1 when path is not inside one. */
int checkpoint_run_dir(const char *path, char *out, size_t len);

#endif
