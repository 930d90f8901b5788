/* ckpt_io.c - the checkpoint files' HDF5 helpers and whole-file hash (ckpt_io.h). */
#include "ckpt_io.h"
#include "comm.h"
#include "empic.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


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

void ck_agree(ck_io *io)
{
    const int root = h5par_failed(&io->err, io->shared);
    if (root >= 0 && io->shared) {
        comm_bcast(io->what, sizeof io->what, root);
        comm_bcast(io->cause, sizeof io->cause, root);
    }
}

/* n values as a 1-D dataset (chunked, with checksums, when n > 0), this rank's part of
 * them from buf. */
void ck_put_part(ck_io *io, hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n,
                 const h5part *part, const void *buf)
{
    ck_agree(io);
    if (io->err)
        return;
    hsize_t dim = n, chunk = n < CK_CHUNK ? n : CK_CHUNK;
    hid_t sp = H5Screate_simple(1, &dim, NULL), pl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
    if (sp < 0 || pl < 0 ||
        (n > 0 && (H5Pset_chunk(pl, 1, &chunk) < 0 || H5Pset_fletcher32(pl) < 0)) ||
        (ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT)) < 0)
        ck_fail(io, name);
    ck_agree(io);
    if (!io->err && n > 0 && h5par_write(ds, mtype, part, buf, io->shared))
        ck_fail(io, name);
    if (ds >= 0)
        H5Dclose(ds);
    if (pl >= 0)
        H5Pclose(pl);
    if (sp >= 0)
        H5Sclose(sp);
}

void ck_put(ck_io *io, hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n,
            const void *buf)
{
    h5part p;
    h5slab s;
    h5par_root(&p, &s, n, 1, io->shared);
    ck_put_part(io, loc, name, ftype, mtype, n, &p, buf);
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
 * before HDF5 opens the file: FNV-1a of each block of CK_HASH_BLOCK bytes, then FNV-1a of
 * those hashes (8 bytes each, least significant first) in the order of the blocks. */
static const char CK_MAGIC[16] = "empic-ckpt-sum2";
#define CK_FNV0 0xcbf29ce484222325ULL

static uint64_t ck_fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) /* FNV-1a */
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* The hash of the blocks' hashes h[0..nb). */
static uint64_t ck_combine(const long long *h, size_t nb)
{
    uint64_t k = CK_FNV0;
    for (size_t b = 0; b < nb; b++) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)((uint64_t)h[b] >> (8 * i));
        k = ck_fnv(k, le, 8);
    }
    return k;
}

static size_t ck_blocks(size_t len)
{
    return len > CK_USERBLOCK ? (len - CK_USERBLOCK + CK_HASH_BLOCK - 1) / CK_HASH_BLOCK : 0;
}

/* The magic text and the hash into the user block head. */
static void ck_head(unsigned char *head, uint64_t h)
{
    memcpy(head, CK_MAGIC, sizeof CK_MAGIC);
    for (int b = 0; b < 8; b++)
        head[sizeof CK_MAGIC + b] = (unsigned char)(h >> (8 * b));
}

void checkpoint_seal(char *image, size_t n)
{
    if (n < CK_USERBLOCK)
        return;
    const size_t nb = ck_blocks(n);
    long long *h = empic_alloc((nb ? nb : 1) * sizeof *h, "checkpoint checksum");
    for (size_t b = 0; b < nb; b++) {
        const size_t at = CK_USERBLOCK + b * CK_HASH_BLOCK;
        const size_t len = n - at < CK_HASH_BLOCK ? n - at : CK_HASH_BLOCK;
        h[b] = (long long)ck_fnv(CK_FNV0, (const unsigned char *)image + at, len);
    }
    ck_head((unsigned char *)image, ck_combine(h, nb));
    free(h);
}

/* The hashes of the nb blocks of the file at path (len bytes) into h: this rank's share of
 * them hashed here (a run of consecutive blocks), the others' by their ranks (shared), all of
 * them summed onto every rank (each entry non-zero on one rank: the sum is exact). With
 * `sync`, this rank's view of the file is synced to disk too (its part of a parallel write).
 * 0, or -1 on every rank when a rank cannot read its share. */
static int ck_hash_file(const char *path, size_t len, long long *h, size_t nb, int shared,
                        int sync)
{
    const int size = shared ? comm_size() : 1, me = shared ? comm_rank() : 0;
    const size_t b0 = nb * (size_t)me / (size_t)size, b1 = nb * (size_t)(me + 1) / (size_t)size;
    memset(h, 0, nb * sizeof *h);
    int fd = open(path, O_RDONLY | O_CLOEXEC), bad = fd < 0;
    unsigned char *buf = bad || b1 == b0 ? NULL : malloc(CK_HASH_BLOCK);
    bad = bad || (b1 > b0 && !buf);
    for (size_t b = b0; b < b1 && !bad; b++) {
        const size_t at = CK_USERBLOCK + b * CK_HASH_BLOCK;
        const size_t n = len - at < CK_HASH_BLOCK ? len - at : CK_HASH_BLOCK;
        size_t got = 0;
        while (got < n) {
            ssize_t r = pread(fd, buf + got, n - got, (off_t)(at + got));
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        bad = got != n;
        h[b] = (long long)ck_fnv(CK_FNV0, buf, n);
    }
    bad = bad || (sync && fsync(fd) != 0);
    if (fd >= 0)
        close(fd);
    free(buf);
    if (shared) {
        comm_max_int(&bad, 1);
        comm_sum_ll(h, nb);
    }
    return bad ? -1 : 0;
}

/* The file's length and its first CK_USERBLOCK bytes (rank 0's, on every rank when shared);
 * 0, or -1 when it has fewer. */
static int ck_read_head(const char *path, unsigned char *head, size_t *len, int shared)
{
    int ok = 0;
    if (!shared || comm_rank() == 0) {
        FILE *f = fopen(path, "rb");
        struct stat st;
        ok = f && fstat(fileno(f), &st) == 0 && fread(head, 1, CK_USERBLOCK, f) == CK_USERBLOCK;
        *len = ok ? (size_t)st.st_size : 0;
        if (f)
            fclose(f);
    }
    if (shared) {
        comm_bcast(&ok, sizeof ok, 0);
        comm_bcast(len, sizeof *len, 0);
        comm_bcast(head, CK_USERBLOCK, 0);
    }
    return ok ? 0 : -1;
}

int ck_seal_file(const char *path, ck_io *io)
{
    unsigned char head[CK_USERBLOCK];
    size_t len = 0;
    int bad = ck_read_head(path, head, &len, io->shared);
    const size_t nb = ck_blocks(len);
    long long *h = empic_alloc((nb ? nb : 1) * sizeof *h, "checkpoint checksum");
    bad = bad || ck_hash_file(path, len, h, nb, io->shared, 1);
    if (!bad && (!io->shared || comm_rank() == 0)) {
        ck_head(head, ck_combine(h, nb));
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bad = fd < 0 || pwrite(fd, head, sizeof CK_MAGIC + 8, 0) != sizeof CK_MAGIC + 8 ||
              fsync(fd) != 0;
        if (fd >= 0 && close(fd) != 0)
            bad = 1;
    }
    free(h);
    if (io->shared)
        comm_max_int(&bad, 1);
    if (bad && !io->err) {
        io->err = 1;
        snprintf(io->what, sizeof io->what, "the file's checksum");
        snprintf(io->cause, sizeof io->cause, "the written file cannot be read back or synced");
    }
    return bad ? -1 : 0;
}

/* 0 when the file's hash matches its user block; else -1 with the reason in io. */
int ck_sum_check(const char *path, ck_io *io)
{
    unsigned char head[CK_USERBLOCK], want[sizeof CK_MAGIC + 8];
    size_t len = 0;
    int ok = ck_read_head(path, head, &len, io->shared) == 0 &&
             !memcmp(head, CK_MAGIC, sizeof CK_MAGIC), tagged = ok;
    const size_t nb = ck_blocks(len);
    long long *h = empic_alloc((nb ? nb : 1) * sizeof *h, "checkpoint checksum");
    ok = ok && ck_hash_file(path, len, h, nb, io->shared, 0) == 0;
    if (ok) {
        ck_head(want, ck_combine(h, nb));
        ok = !memcmp(head, want, sizeof want);
    }
    free(h);
    if (!ok) {
        io->err = 1;
        snprintf(io->what, sizeof io->what, "%s", tagged ? "the file's checksum (damaged)"
                                                   : "its header (not an empic checkpoint of this "
                                                     "version, or cut short)");
    }
    return ok ? 0 : -1;
}
