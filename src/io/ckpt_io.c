/* ckpt_io.c - the checkpoint files' HDF5 helpers and whole-file hash (ckpt_io.h). */
#include "ckpt_io.h"
#include "empic.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static herr_t ck_walk(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n == 0 && e->desc)
        snprintf((char *)data, 256, "%s", e->desc);
    return 0;
}

void ck_fail(ck_io *io, const char *what)
{
    if (io->err)
        return;
    io->err = 1;
    snprintf(io->what, sizeof io->what, "%s", what);
    io->cause[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, ck_walk, io->cause);
    /* keep the system's words ("..., error message = 'No space left on device', ...") */
    char *m = strstr(io->cause, "error message = '"), *e;
    if (m && (e = strchr(m += 17, '\''))) {
        memmove(io->cause, m, (size_t)(e - m));
        io->cause[e - m] = '\0';
    }
    io->cause[strcspn(io->cause, "\n")] = '\0';
}

/* n values as a 1-D dataset (chunked, with checksums, when n > 0). */
void ck_put(ck_io *io, hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n,
                   const void *buf)
{
    if (io->err)
        return;
    hsize_t dim = n, chunk = n < CK_CHUNK ? n : CK_CHUNK;
    hid_t sp = H5Screate_simple(1, &dim, NULL), pl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
    if (sp < 0 || pl < 0 ||
        (n > 0 && (H5Pset_chunk(pl, 1, &chunk) < 0 || H5Pset_fletcher32(pl) < 0)) ||
        (ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT)) < 0 ||
        (n > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
        ck_fail(io, name);
    if (ds >= 0)
        H5Dclose(ds);
    if (pl >= 0)
        H5Pclose(pl);
    if (sp >= 0)
        H5Sclose(sp);
}

/* Number of values of a 1-D dataset, or -1. */
long long ck_len(hid_t loc, const char *name)
{
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT), sp = ds < 0 ? -1 : H5Dget_space(ds);
    hsize_t dim = 0;
    long long n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
        H5Sget_simple_extent_dims(sp, &dim, NULL) == 1)
        n = (long long)dim;
    if (sp >= 0)
        H5Sclose(sp);
    if (ds >= 0)
        H5Dclose(ds);
    return n;
}

/* Exactly n values of a 1-D dataset (checksums verified by HDF5). */
void ck_get(ck_io *io, hid_t loc, const char *name, hid_t mtype, size_t n, void *buf)
{
    if (io->err)
        return;
    if (ck_len(loc, name) != (long long)n) {
        ck_fail(io, name);
        return;
    }
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
    if (ds < 0 || (n > 0 && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
        ck_fail(io, name);
    if (ds >= 0)
        H5Dclose(ds);
}

void ck_get_slab(ck_io *io, hid_t loc, const char *name, hid_t mtype, size_t total,
                 size_t first, size_t stride, size_t count, size_t block, void *buf)
{
    if (io->err)
        return;
    if (ck_len(loc, name) != (long long)total || (count > 0 && first + (count - 1) * stride +
                                                                    block > total)) {
        ck_fail(io, name);
        return;
    }
    if (count == 0 || block == 0)
        return;
    hsize_t start = first, step = stride, n = count, len = block, all = count * block;
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT), fs = ds < 0 ? -1 : H5Dget_space(ds),
          ms = H5Screate_simple(1, &all, NULL);
    if (fs < 0 || ms < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, &step, &n, &len) < 0 ||
        H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf) < 0)
        ck_fail(io, name);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (ds >= 0)
        H5Dclose(ds);
}

void ck_put_i64(ck_io *io, hid_t loc, const char *name, long long v)
{
    int64_t x = v;
    ck_put(io, loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 1, &x);
}

long long ck_get_i64(ck_io *io, hid_t loc, const char *name)
{
    int64_t x = 0;
    ck_get(io, loc, name, H5T_NATIVE_INT64, 1, &x);
    return x;
}

void ck_put_f64(ck_io *io, hid_t loc, const char *name, size_t n, const double *v)
{
    ck_put(io, loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, v);
}

void ck_put_i32(ck_io *io, hid_t loc, const char *name, size_t n, const int *v)
{
    ck_put(io, loc, name, H5T_STD_I32LE, H5T_NATIVE_INT, n, v);
}

void ck_put_text(ck_io *io, hid_t loc, const char *name, const char *text, size_t len)
{
    ck_put(io, loc, name, H5T_STD_U8LE, H5T_NATIVE_UINT8, len, text);
}

/* A text dataset as a NUL-terminated string (malloc'd), or NULL. */
char *ck_get_text(ck_io *io, hid_t loc, const char *name)
{
    long long n = io->err ? -1 : ck_len(loc, name);
    if (n < 0 || n > (16LL << 20)) { /* the deck text at most */
        ck_fail(io, name);
        return NULL;
    }
    char *t = empic_alloc((size_t)n + 1, "checkpoint text");
    ck_get(io, loc, name, H5T_NATIVE_UINT8, (size_t)n, t);
    t[n] = '\0';
    return t;
}

hid_t ck_group(ck_io *io, hid_t loc, const char *name, int create)
{
    if (io->err)
        return -1;
    hid_t g = create ? H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                     : H5Gopen2(loc, name, H5P_DEFAULT);
    if (g < 0)
        ck_fail(io, name);
    return g;
}

void ck_close_group(hid_t g)
{
    if (g >= 0)
        H5Gclose(g);
}

/* ---------------------------------------------------------------- whole-file checksum */

/* HDF5 checksums the data (Fletcher-32) but not, in the format it writes by default, the
 * metadata; a damaged object header can then mislead HDF5 itself. The user block at the
 * start of the file carries a magic text and a 64-bit hash of everything after it, checked
 * before HDF5 opens the file. */
static const char CK_MAGIC[16] = "empic-ckpt-sum1";

typedef struct {
    uint64_t h;
} ck_hash;

static void ck_hash_add(ck_hash *k, const unsigned char *p, size_t n)
{
    uint64_t h = k->h;
    for (size_t i = 0; i < n; i++) /* FNV-1a */
        h = (h ^ p[i]) * 0x100000001b3ULL;
    k->h = h;
}

void checkpoint_seal(char *image, size_t n)
{
    if (n < CK_USERBLOCK)
        return;
    ck_hash k = {0xcbf29ce484222325ULL};
    ck_hash_add(&k, (const unsigned char *)image + CK_USERBLOCK, n - CK_USERBLOCK);
    memcpy(image, CK_MAGIC, sizeof CK_MAGIC);
    for (int b = 0; b < 8; b++)
        image[sizeof CK_MAGIC + b] = (char)(k.h >> (8 * b));
}

/* 0 when the file's hash matches its user block; else -1 with the reason in io. */
int ck_sum_check(const char *path, ck_io *io)
{
    FILE *f = fopen(path, "rb");
    unsigned char head[CK_USERBLOCK], *buf = malloc((size_t)1 << 22);
    ck_hash k = {0xcbf29ce484222325ULL};
    size_t n;
    int ok = f && buf && fread(head, 1, CK_USERBLOCK, f) == CK_USERBLOCK &&
             !memcmp(head, CK_MAGIC, sizeof CK_MAGIC), tagged = ok;
    while (ok && (n = fread(buf, 1, (size_t)1 << 22, f)) > 0)
        ck_hash_add(&k, buf, n);
    ok = ok && !ferror(f);
    for (int b = 0; ok && b < 8; b++)
        ok = head[sizeof CK_MAGIC + b] == (unsigned char)(k.h >> (8 * b));
    if (f)
        fclose(f);
    free(buf);
    if (!ok) {
        io->err = 1;
        snprintf(io->what, sizeof io->what, "%s", tagged ? "the file's checksum (damaged)"
                                                   : "its header (not an empic checkpoint of this "
                                                     "version, or cut short)");
    }
    return ok ? 0 : -1;
}

