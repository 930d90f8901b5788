/* fileio.h - the one way empic puts files on disk: folders made with their parents, files
 * written whole under a temporary name and renamed (a reader never sees a partial file, a
 * failure never replaces a good one; checkpoints and run files fsynced, dumps flushed at
 * checkpoints and at the end), and the lock that keeps two runs out of one
 * output folder. Every function reports its failure (naming the file) through empic_report. */
#ifndef FILEIO_H
#define FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* mkdir -p; 0, or -1 after reporting (what: "output folder", ...). */
int fileio_mkdir_p(const char *dir, const char *what);
/* Write len bytes to path atomically: PATH.tmp, fsync, rename, fsync of the folder. The
 * temporary file is removed on failure. 0, or -1 after reporting. */
int fileio_write_atomic(const char *path, const void *data, size_t len);
/* The same without the two fsyncs, for the dumps (written every few steps: an fsync each made
 * the run wait for the disk): a reader still never sees a partial file; fileio_sync_all puts
 * them on disk at the next checkpoint and at the end of the run. */
int fileio_write_replace(const char *path, const void *data, size_t len);
/* PATH.tmp, the temporary name of path, into tmp (len bytes); 0, or -1 after reporting. */
int fileio_tmp_name(const char *path, char *tmp, size_t len);
/* Put PATH.tmp, written by other means (the ranks through MPI-IO, each syncing its part
 * when `sync`), in place: rename, then with `sync` fsync of the folder. The temporary file
 * is removed on failure. 0, or -1 after reporting. */
int fileio_commit_tmp(const char *path, int sync);
/* Flush everything written to the file system that holds dir to disk (syncfs), so that the
 * dumps written before a checkpoint or the end of a run survive a crash of the machine. 0, or
 * -1 after reporting (a write that failed on its way to the disk). */
int fileio_sync_all(const char *dir);
/* Open PATH.tmp for a file written as a stream (energy.csv); NULL after reporting. */
FILE *fileio_open_tmp(const char *path);
/* Finish a stream from fileio_open_tmp: flush, fsync, close, rename to path. A stream that
 * saw a write error is closed and left under its temporary name (nothing partial is
 * renamed). 0, or -1 after reporting. */
int fileio_finish(FILE *f, const char *path);
/* fsync of a folder, so that renames in it are on disk. */
void fileio_sync_dir(const char *dir);

/* Take the output folder dir: an exclusive lock (flock) on dir/.empic.lock, held while the
 * returned descriptor is open (close it, or exit). A folder locked by a running empic is
 * refused. A folder holding another run's files (run.cfg) is refused unless `overwrite`, or
 * `own` (a restart continuing the run that the folder holds). Makes the folder. Returns the
 * descriptor, or -1 after reporting. */
int fileio_lock_output(const char *dir, int own, int overwrite);
/* Remove the files an empic run leaves in dir (run.cfg, energy.csv, timing.json, and the
 * .h5/.xmf files of checkpoint/, data/, tracks/, phasespace/, probes/); others are left
 * alone. */
void fileio_clear_run(const char *dir);
/* Remove the temporary files (NAME.tmp of run.cfg, timing.json and the .h5/.xmf files of
 * checkpoint/, data/, tracks/, phasespace/) a killed run left in dir; energy.csv.tmp stays
 * for the restart to read. Call with the folder locked. */
void fileio_clear_tmp(const char *dir);

#endif
