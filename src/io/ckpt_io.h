/* ckpt_io.h - the HDF5 and checksum helpers of the checkpoint files (checkpoint.c): a sequence
 * of calls that stops at the first failure and keeps HDF5's innermost message, and the hash of
 * the whole file kept in its user block. A file of several ranks is shared (h5par.h): the
 * calls are collective, each rank writing its part, and the hash is made and checked by all
 * ranks together, each over its share of the file's blocks. */
#ifndef CKPT_IO_H
#define CKPT_IO_H

#include "h5par.h"

#include <hdf5.h>
#include <stddef.h>

#define CK_CHUNK ((hsize_t)1 << 20)
#define CK_USERBLOCK 512 /* bytes before the HDF5 data: magic text and the file's hash */

/* The first failure of a sequence of calls (later calls then do nothing) and the innermost
 * HDF5 message about it (e.g. the system's "No space left on device"). shared: a file that
 * the ranks write together, whose failures they agree on (ck_agree) before every dataset. */
typedef struct {
    int err;
    char what[96];
    char cause[256];
    int shared;
} ck_io;

/* Note the first failure (what failed, HDF5's innermost message). */
void ck_fail(ck_io *io, const char *what);
/* Shared: a failure of any rank made every rank's, with the lowest failing rank's message
 * (collective); nothing otherwise. */
void ck_agree(ck_io *io);
/* Datasets: 1-D, chunked, Fletcher-32 checksums (put: n values from buf, rank 0's on a shared
 * file; put_part: this rank's part of the n values); read back whole (get, len). */
void ck_put(ck_io *io, hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n,
            const void *buf);
void ck_put_part(ck_io *io, hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n,
                 const h5part *part, const void *buf);
long long ck_len(hid_t loc, const char *name);
void ck_get(ck_io *io, hid_t loc, const char *name, hid_t mtype, size_t n, void *buf);
/* Part of a 1-D dataset of `total` values: `count` blocks of `block` values, the first at
 * `first`, each `stride` values after the one before (a rectangle of a row-major 2-D array,
 * or one run when count = 1), one after the other into buf. */
void ck_get_slab(ck_io *io, hid_t loc, const char *name, hid_t mtype, size_t total,
                 size_t first, size_t stride, size_t count, size_t block, void *buf);
void ck_put_i64(ck_io *io, hid_t loc, const char *name, long long v);
long long ck_get_i64(ck_io *io, hid_t loc, const char *name);
void ck_put_f64(ck_io *io, hid_t loc, const char *name, size_t n, const double *v);
void ck_put_i32(ck_io *io, hid_t loc, const char *name, size_t n, const int *v);
void ck_put_text(ck_io *io, hid_t loc, const char *name, const char *text, size_t len);
char *ck_get_text(ck_io *io, hid_t loc, const char *name); /* malloc'ed, NUL-terminated */
hid_t ck_group(ck_io *io, hid_t loc, const char *name, int create);
void ck_close_group(hid_t g);
/* The file's hash: a 64-bit hash of each block of CK_HASH_BLOCK bytes after the user block,
 * then of those hashes in order, so that ranks can hash their shares of the blocks. */
#define CK_HASH_BLOCK ((size_t)4 << 20)
/* Write the checksum of a checkpoint file image of len bytes into its first CK_USERBLOCK
 * bytes, as the writer does; the reader refuses a file whose checksum differs. */
void checkpoint_seal(char *image, size_t len);
/* The same for the file at path, written by the ranks (io->shared: collective, each rank
 * hashing its share of the blocks and syncing its view of the file, rank 0 writing the user
 * block and syncing it). 0, or -1 with the reason in io (on every rank). */
int ck_seal_file(const char *path, ck_io *io);
/* 0 when the file's hash matches its user block; else -1 with the reason in io (shared:
 * collective, each rank reading its share of the blocks; the same answer on every rank). */
int ck_sum_check(const char *path, ck_io *io);

#endif
