/* checkpoint.c - restart files (design.md §9): writing, finding, loading, and the continuation
 * of energy.csv after a restart.
 *
 * File layout (HDF5, every dataset 1-D, chunked with Fletcher-32 checksums, and a hash of the
 * whole file in its user block, so that a damaged file is refused on reading):
 *   /version /step /backend /nspecies /clusters[ncx, ncy] /deck (run.cfg text, bytes)
 *   /run/     particle_steps wall_s phase_s[6] en_step en_e en_b en_gauss en_kin[nspecies]
 *             window_cells (cells the moving window has moved), balance (the energy
 *             balance's sums of all ranks: flow, lost, gain as sim_state.h lays them out)
 *   /fields/  shape[rows, stride] ex ey ez bx by bz jx jy jz rho (whole arrays with guards)
 *             rho_bg step (E at step dt, the lasers' clock)
 *             with non-periodic sides or lasers: fbnd_psi_step fbnd_shift, psi<layer>_<m>
 *             (CPML memories), mur<side> (Mur edge memories); coefficients and laser
 *             geometry come from the deck
 *             inside a window of the averaged field dumps (fieldavg.h): avg (its sums, the
 *             arrays of average.h's order one after the other, float64 with guards) and
 *             avg_held (the samples they hold)
 *   /species/<s>/ name np alloc rearrangements start count cap peak hist[9 n]
 *             cell x y ux uy uz w code (the live particles, cluster after cluster), and id
 *             (uint64 tracking ids) for a species of diagnostics.tracks, charge_state
 *             (uint8) for an ionizing species
 * Slots outside the live segments hold no state (not stored, not read back). Several ranks
 * write the one file together (h5par.h), each its share: its rectangle of the field arrays,
 * its clusters' particles; the tables summed over the ranks, with the segment layout of the
 * counts (a one-rank run stores its own). A restart on several ranks reads each rank's share
 * only: its cells with their guards (one strided selection), the particles of its clusters
 * (one run of the stored cluster order per cluster row, found from the counts). */
#include "checkpoint.h"
#include "average.h"
#include "ckpt_io.h"
#include "comm.h"
#include "fieldavg.h"
#include "empic.h"
#include "fbnd.h"
#include "fileio.h"
#include "h5out.h"
#include "memory.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_PATH (DECK_PATH_MAX + 64)

/* ---------------------------------------------------------------- file names */

/* 1 when name is ckpt<digits>.h5 (*tmp = 0) or ckpt<digits>.h5.tmp (*tmp = 1). */
static int ckpt_name(const char *name, long *step, int *tmp)
{
    if (strncmp(name, "ckpt", 4) != 0)
        return 0;
    const char *p = name + 4, *q = p;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q - p < 8 || q - p > 18)
        return 0;
    *step = strtol(p, NULL, 10);
    *tmp = !strcmp(q, ".h5.tmp");
    return *tmp || !strcmp(q, ".h5");
}

/* The run folder of a checkpoint file RUN/checkpoint/ckpt*.h5 into out; 0, or -1 when the
 * file does not sit in a folder named checkpoint. */
int checkpoint_run_dir(const char *path, char *out, size_t len)
{
    char buf[CK_PATH];
    snprintf(buf, sizeof buf, "%s", path);
    char *sl = strrchr(buf, '/');
    if (!sl)
        return -1;
    *sl = '\0';
    char *sl2 = strrchr(buf, '/');
    if (strcmp(sl2 ? sl2 + 1 : buf, "checkpoint") != 0)
        return -1;
    if (!sl2)
        snprintf(out, len, ".");
    else if (sl2 == buf)
        snprintf(out, len, "/");
    else {
        *sl2 = '\0';
        snprintf(out, len, "%s", buf);
    }
    return 0;
}

/* The first CK_USERBLOCK bytes of a file (a checkpoint's hash), 0 when it has them. */
static int user_block(const char *path, char *head)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, CK_USERBLOCK, f) : 0;
    if (f)
        fclose(f);
    return n == CK_USERBLOCK ? 0 : -1;
}

int checkpoint_of_run(const char *path, const char *dir)
{
    char buf[CK_PATH + 300], mine[CK_PATH + 16];
    struct stat a, b;
    snprintf(buf, sizeof buf, "%s", path);
    char *sl = strrchr(buf, '/');
    if (sl)
        *sl = '\0';
    else
        snprintf(buf, sizeof buf, ".");
    snprintf(mine, sizeof mine, "%s/checkpoint", dir);
    if (stat(buf, &a) == 0 && stat(mine, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return 1;
    /* a copy: the run folder holds a checkpoint with the same hash */
    char want[CK_USERBLOCK], head[CK_USERBLOCK];
    DIR *dd = opendir(mine);
    if (!dd || user_block(path, want)) {
        if (dd)
            closedir(dd);
        return 0;
    }
    int same = 0;
    for (struct dirent *e; !same && (e = readdir(dd));) {
        snprintf(buf, sizeof buf, "%s/%s", mine, e->d_name);
        same = !strncmp(e->d_name, "ckpt", 4) && !user_block(buf, head) &&
               !memcmp(want, head, CK_USERBLOCK);
    }
    closedir(dd);
    return same;
}

/* Remove the checkpoints in dir except keep (just written) and prev (the run's previous one,
 * written or restarted from), and any leftover temporary file. */
static void prune(const char *dir, const char *keep, const char *prev)
{
    struct stat ps, st;
    int have_prev = prev[0] && stat(prev, &ps) == 0;
    DIR *dd = opendir(dir);
    if (!dd)
        return;
    struct dirent *e;
    char p[CK_PATH + 300];
    while ((e = readdir(dd))) {
        long step;
        int tmp;
        if (!ckpt_name(e->d_name, &step, &tmp))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!strcmp(p, keep))
            continue;
        if (!tmp && have_prev && stat(p, &st) == 0 && st.st_dev == ps.st_dev &&
            st.st_ino == ps.st_ino)
            continue;
        unlink(p);
    }
    closedir(dd);
}

/* ---------------------------------------------------------------- writing */

typedef struct {
    const char *name;
    void *a;
    size_t size;
    hid_t ftype, mtype;
} ck_array;

/* The particle arrays of s (with the tracking ids and the charge states where s has them);
 * returns their number. */
static int species_arrays(species *s, ck_array a[10])
{
    const ck_array t[10] = {
        {"cell", s->cell, 4, H5T_STD_U32LE, H5T_NATIVE_UINT32},
        {"x", s->x, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"y", s->y, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"ux", s->ux, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"uy", s->uy, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"uz", s->uz, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"w", s->w, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
        {"code", s->code, 1, H5T_STD_U8LE, H5T_NATIVE_UINT8},
        {"id", s->id, 8, H5T_STD_U64LE, H5T_NATIVE_UINT64},
        {"charge_state", s->z, 1, H5T_STD_U8LE, H5T_NATIVE_UINT8}};
    int n = 0;
    for (int k = 0; k < 10; k++)
        if (t[k].a)
            a[n++] = t[k];
    return n;
}

static long long live_particles(const species *s, int ncl)
{
    long long n = 0;
    for (int c = 0; c < ncl; c++)
        n += s->count[c];
    return n;
}

/* A species' tables as the file keeps them, of every cluster: count and hist (summed over
 * the ranks: each holds its own clusters'), num (count as the runs of h5par_runs take it),
 * np, and the segment layout that a one-rank restart from the file takes: the run's own on
 * one rank, else the layout of its counts (species_segments). */
typedef struct {
    int *count, *hist, *start, *cap, *peak;
    long long *num, np, alloc;
} ck_tables;

static void tables_of(const species *s, const clusters *cl, int shared, ck_tables *t)
{
    const size_t n = (size_t)cl->n;
    t->count = empic_alloc(n * 13 * sizeof(int), "checkpoint tables");
    t->start = t->count + n;
    t->cap = t->start + n;
    t->peak = t->cap + n;
    t->hist = t->peak + n;
    t->num = empic_alloc(n * sizeof(long long), "checkpoint tables");
    memcpy(t->count, s->count, n * sizeof(int));
    memcpy(t->hist, s->hist, n * 9 * sizeof(int));
    for (size_t c = 0; shared && c < n; c++) /* the GPU keeps its neighbours' border lines */
        if (!cl->own[c])
            t->count[c] = 0, memset(t->hist + 9 * c, 0, 9 * sizeof(int));
    if (shared) {
        comm_sum_int(t->count, n);
        comm_sum_int(t->hist, n * 9);
    }
    t->np = 0;
    for (size_t c = 0; c < n; c++)
        t->np += t->num[c] = t->count[c];
    if (shared) { /* the load's layout of these counts, as one rank lays them */
        species w = *s;
        w.own = NULL;
        w.peak = memset(t->peak, 0, n * sizeof(int));
        t->alloc = (long long)species_segments(&w, cl, t->count, NULL, NULL, t->start, t->cap);
    } else {
        memcpy(t->start, s->start, n * sizeof(int));
        memcpy(t->cap, s->cap, n * sizeof(int));
        memcpy(t->peak, s->peak, n * sizeof(int));
        t->alloc = (long long)s->alloc;
    }
}

/* The species' tables and its live particles, cluster after cluster: this rank's, where
 * its clusters lie among all (one run per cluster row of its share). */
static void write_species(ck_io *io, hid_t g, species *s, const clusters *cl)
{
    const int ncl = cl->n;
    ck_tables t;
    tables_of(s, cl, io->shared, &t);
    ck_put_text(io, g, "name", s->cfg->name, strlen(s->cfg->name));
    ck_put_i64(io, g, "np", t.np);
    ck_put_i64(io, g, "alloc", t.alloc);
    ck_put_i64(io, g, "rearrangements", s->rearrangements);
    ck_put_i32(io, g, "start", (size_t)ncl, t.start);
    ck_put_i32(io, g, "count", (size_t)ncl, t.count);
    ck_put_i32(io, g, "cap", (size_t)ncl, t.cap);
    ck_put_i32(io, g, "peak", (size_t)ncl, t.peak);
    ck_put_i32(io, g, "hist", (size_t)ncl * 9, t.hist);
    h5slab *run = empic_alloc((size_t)(cl->cy1 - cl->cy0) * sizeof *run, "checkpoint staging");
    size_t mine = 0;
    const h5part part = {h5par_runs(cl, t.num, 1, run, &mine), run, {0, 0}, NULL};
    char *stage = empic_alloc((mine ? mine : 1) * 8, "checkpoint staging");
    ck_array a[10];
    const int na = species_arrays(s, a);
    for (int k = 0; k < na; k++) { /* (every rank: after a failure too) */
        size_t o = 0;
        for (int c = 0; c < ncl; c++) { /* this rank's clusters hold its particles */
            memcpy(stage + o * a[k].size, (char *)a[k].a + (size_t)s->start[c] * a[k].size,
                   (size_t)s->count[c] * a[k].size);
            o += (size_t)s->count[c];
        }
        ck_put_part(io, g, a[k].name, a[k].ftype, a[k].mtype, (size_t)t.np, &part, stage);
    }
    free(stage);
    free(run);
    free(t.num);
    free(t.count);
}

/* Bytes a dataset of n values of e bytes takes: whole chunks once it is chunked in several. */
static size_t chunked(size_t n, size_t e)
{
    return (n > CK_CHUNK ? (n + CK_CHUNK - 1) / CK_CHUNK * CK_CHUNK : n) * e;
}

/* Bytes the file will take, a little more: the core driver's first allocation, so that it
 * never grows (a growth would add a whole second step). One rank. */
static size_t image_estimate(const sim *S)
{
    size_t b = ((size_t)4 << 20) + 10 * chunked(S->f.size, sizeof(float));
    if (fieldavg_held(&S->d, S->step))
        b += chunked((size_t)avg_arrays(S->st.avg_q) * S->f.size, sizeof(double));
    fbnd_array fa[FBND_ARRAYS];
    const int n = fbnd_arrays(&S->f, fa);
    for (int k = 0; k < n; k++)
        b += chunked(fa[k].len, sizeof(float));
    for (int s = 0; s < S->nsp; s++) {
        size_t live = (size_t)live_particles(&S->sp[s], S->cl.n);
        b += 7 * chunked(live, 4) + chunked(live, 1) + (S->sp[s].id ? chunked(live, 8) : 0) +
             (S->sp[s].z ? chunked(live, 1) : 0) +
             (size_t)S->cl.n * 12 * 4 + 65536;
    }
    return (b + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
}

/* The run's counters and clocks (group run; the timers are rank 0's). */
static void write_run(ck_io *io, hid_t file, const sim *S)
{
    hid_t g = ck_group(io, file, "run", 1);
    ck_put_i64(io, g, "particle_steps", S->particle_steps);
    ck_put_f64(io, g, "wall_s", 1, &S->wall_s);
    ck_put_f64(io, g, "phase_s", PH_COUNT, S->st.phase_s);
    ck_put_i64(io, g, "en_step", S->en_step);
    ck_put_f64(io, g, "en_e", 1, &S->en_e);
    ck_put_f64(io, g, "en_b", 1, &S->en_b);
    ck_put_f64(io, g, "en_gauss", 1, &S->en_gauss);
    ck_put_f64(io, g, "en_kin", (size_t)S->nsp, S->en_kin);
    ck_put_i64(io, g, "window_cells", S->win.cells);
    if (S->bal_ck) /* the energy balance's sums of all ranks (sim.c) */
        ck_put_f64(io, g, "balance", S->bal_n, S->bal_ck);
    ck_close_group(g);
}

/* This rank's rectangle of n whole arrays with guards stored one after the other (the file's
 * and f's layouts): its cells and, with edges, the guards of the box edges next to them,
 * array k's in file[k] and, of n arrays of f's, in src[k] (slabs of 1-D datasets). */
static void field_boxes(const emf *f, int n, int edges, h5slab *file, h5slab *src)
{
    const int G = EMF_GUARD, e = edges ? G : 0;
    const hsize_t stride = (hsize_t)f->nx + 2 * G, whole = stride * (hsize_t)(f->ny + 2 * G);
    const int lo[2] = {f->i0 - (f->i0 == 0 ? e : 0), f->j0 - (f->j0 == 0 ? e : 0)};
    const int hi[2] = {f->i1 + (f->i1 == f->nx ? e : 0), f->j1 + (f->j1 == f->ny ? e : 0)};
    const hsize_t ni = (hsize_t)(hi[0] - lo[0]), nj = (hsize_t)(hi[1] - lo[1]);
    for (int k = 0; k < n; k++) {
        const h5slab a = {{(hsize_t)k * whole + (hsize_t)(lo[1] + G) * stride +
                               (hsize_t)(lo[0] + G), 0}, {stride, 1}, {nj, 1}, {ni, 1}};
        const h5slab b = {{(hsize_t)k * f->size + (hsize_t)emf_idx(f, lo[0], lo[1]), 0},
                          {(hsize_t)f->stride, 1}, {nj, 1}, {ni, 1}};
        file[k] = a;
        src[k] = b;
    }
}

/* The fields with their guards (group fields): each rank's rectangle of the whole arrays
 * (field_boxes); the averaged dumps' sums inside a window; the boundary memories. */
static void write_fields(ck_io *io, hid_t file, const sim *S)
{
    const emf *f = &S->f;
    const char *fname[EMF_STATE] = {"ex", "ey", "ez", "bx", "by", "bz", "jx", "jy", "jz", "rho"};
    float *fa[EMF_STATE];
    emf_state(f, fa);
    const int G = EMF_GUARD, shape[2] = {f->ny + 2 * G, f->nx + 2 * G};
    const size_t whole = (size_t)shape[0] * (size_t)shape[1];
    const int navg = avg_arrays(S->st.avg_q);
    h5slab box[AVG_COUNT], src[AVG_COUNT];
    field_boxes(f, 1, 1, box, src);
    const h5part part = {1, box, {f->size, 1}, src};
    hid_t g = ck_group(io, file, "fields", 1);
    ck_put_i32(io, g, "shape", 2, shape);
    for (int k = 0; k < EMF_STATE; k++)
        ck_put_part(io, g, fname[k], H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, whole, &part, fa[k]);
    ck_put_f64(io, g, "rho_bg", 1, &f->rho_bg);
    ck_put_i64(io, g, "step", f->step);
    const long held = fieldavg_held(&S->d, S->step);
    if (held) { /* the cells' sums (their guards' are read by nothing; the file's stay 0) */
        field_boxes(f, navg, 0, box, src);
        const h5part sums = {navg, box, {(size_t)navg * f->size, 1}, src};
        ck_put_part(io, g, "avg", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (size_t)navg * whole,
                    &sums, S->st.avg);
        ck_put_i64(io, g, "avg_held", held);
    }
    if (f->fb) {
        fbnd_array a[FBND_ARRAYS];
        const int n = fbnd_arrays(f, a);
        ck_put_i64(io, g, "fbnd_psi_step", f->fb->psi_step);
        ck_put_i64(io, g, "fbnd_shift", f->fb->shift);
        for (int k = 0; k < n; k++) {
            uint32_t *whole = io->shared ? empic_alloc(a[k].len * 4 + 4, "checkpoint staging")
                                         : NULL;
            if (whole)
                fbnd_whole(f, &a[k], whole);
            ck_put(io, g, a[k].name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, a[k].len,
                   whole ? (const void *)whole : a[k].data);
            free(whole);
        }
    }
    ck_close_group(g);
}

/* The checkpoint's datasets into the open file (every rank its part of a shared one; the
 * deck is rank 0's text). */
static void write_content(ck_io *io, hid_t file, sim *S)
{
    ck_put_i64(io, file, "version", CHECKPOINT_VERSION);
    ck_put_i64(io, file, "step", S->step);
    ck_put_i64(io, file, "backend", S->backend);
    ck_put_i64(io, file, "nspecies", S->nsp);
    const int ncl[2] = {S->cl.ncx, S->cl.ncy};
    ck_put_i32(io, file, "clusters", 2, ncl);
    char *text = NULL;
    size_t tlen = 0;
    if (!io->shared || comm_rank() == 0) {
        FILE *m = open_memstream(&text, &tlen);
        if (!m)
            EMPIC_DIE("out of host memory writing a checkpoint");
        deck_write(&S->d, m);
        fclose(m);
    }
    if (io->shared)
        comm_bcast(&tlen, sizeof tlen, 0);
    ck_put_text(io, file, "deck", text, tlen);
    free(text);

    write_run(io, file, S);
    write_fields(io, file, S);
    hid_t g = ck_group(io, file, "species", 1);
    for (int s = 0; s < S->nsp; s++) {
        char name[16];
        snprintf(name, sizeof name, "%d", s);
        hid_t gs = ck_group(io, g, name, 1);
        write_species(io, gs, &S->sp[s], &S->cl);
        ck_close_group(gs);
    }
    ck_close_group(g);
}

/* One rank: the whole checkpoint built in memory (HDF5 core driver, no backing store), so
 * that no half-written HDF5 file can exist: the disk sees one plain write of the finished
 * image. Returns the image (malloc'd, *len bytes), or NULL with io->err set. */
static char *build_image(sim *S, const char *name, ck_io *io, size_t *len)
{
    if (h5out_room(image_estimate(S))) {
        ck_fail(io, "allocating the file image");
        return NULL;
    }
    hid_t fapl = h5par_fapl(0, image_estimate(S)), fcpl = H5Pcreate(H5P_FILE_CREATE), file = -1;
    /* the user block (ignored by HDF5) takes the checksum of the whole file: ck_sum */
    if (fapl >= 0 && fcpl >= 0 && H5Pset_userblock(fcpl, CK_USERBLOCK) >= 0)
        file = H5Fcreate(name, H5F_ACC_TRUNC, fcpl, fapl);
    if (fcpl >= 0)
        H5Pclose(fcpl);
    if (file < 0)
        ck_fail(io, "creating the file"); /* before any other call clears the error stack */
    if (fapl >= 0)
        H5Pclose(fapl);
    if (file < 0)
        return NULL;
    write_content(io, file, S);
    char *image = NULL;
    ssize_t n = -1;
    if (!io->err && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
        ck_fail(io, "flushing the file");
    if (!io->err && (n = H5Fget_file_image(file, NULL, 0)) <= 0)
        ck_fail(io, "the file image");
    /* the image leaves out the user block: it goes in front (zeroed, then the checksum) */
    if (!io->err && (!(image = calloc(1, (size_t)n + CK_USERBLOCK)) ||
                     H5Fget_file_image(file, image + CK_USERBLOCK, (size_t)n) != n))
        ck_fail(io, "copying the file image");
    if (H5Fclose(file) < 0)
        ck_fail(io, "closing the file");
    if (io->err) {
        free(image);
        return NULL;
    }
    *len = (size_t)n + CK_USERBLOCK;
    checkpoint_seal(image, *len);
    return image;
}

/* Several ranks: the checkpoint written by all of them together under its temporary name
 * (MPI-IO), each its share, then sealed (every rank hashing and syncing its share of the
 * file) and renamed by rank 0, which reports a failure. 0, or -1 on every rank. */
static int write_shared(sim *S, const char *path, ck_io *io)
{
    char tmp[CK_PATH + 8];
    const int root = comm_rank() == 0;
    hid_t fapl = h5par_fapl(1, 0), fcpl = H5Pcreate(H5P_FILE_CREATE), file = -1;
    if (fileio_tmp_name(path, tmp, sizeof tmp) == 0 && fapl >= 0 && fcpl >= 0 &&
        H5Pset_userblock(fcpl, CK_USERBLOCK) >= 0)
        file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl);
    if (file < 0)
        ck_fail(io, "creating the file");
    if (fcpl >= 0)
        H5Pclose(fcpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    ck_agree(io);
    if (file >= 0) {
        write_content(io, file, S);
        ck_agree(io);
        if (H5Fclose(file) < 0)
            ck_fail(io, "closing the file");
        ck_agree(io);
    }
    if (!io->err)
        ck_seal_file(tmp, io);
    int rc = io->err ? -1 : 0;
    if (root && rc) {
        unlink(tmp);
        empic_report(path, 0, "cannot write the checkpoint: HDF5 failed at %s%s%s", io->what,
                     io->cause[0] ? ": " : "", io->cause);
    } else if (root) {
        rc = fileio_commit_tmp(path, 1);
    }
    comm_bcast(&rc, sizeof rc, 0);
    return rc;
}

int checkpoint_write(sim *S)
{
    char dir[DECK_PATH_MAX + 16], path[DECK_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/checkpoint", S->d.output);
    snprintf(path, sizeof path, "%s/ckpt%08ld.h5", dir, S->step);
    const char *prev = S->checkpoint_last[0] ? S->checkpoint_last : NULL;
    const int shared = h5par_shared(), root = !shared || comm_rank() == 0;
    double t0 = omp_get_wtime();
    ck_io io = {.shared = shared};
    size_t len = 0;
    char *image = NULL;
    int bad = root ? fileio_mkdir_p(dir, "checkpoint folder") != 0 : 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (shared)
        comm_bcast(&bad, sizeof bad, 0);
    /* the dumps before it to disk first (fileio_write_replace; every rank its view) */
    if (!bad && fileio_sync_all(S->d.output))
        S->io_failed = 1;
    if (bad)
        ;
    else if (shared)
        bad = write_shared(S, path, &io) != 0;
    else if (!(image = build_image(S, path, &io, &len))) {
        /* built in host memory (no file yet): a failure there is a failure to allocate */
        empic_report(path, 0, "cannot build the checkpoint: HDF5 failed at %s%s%s; the file is "
                     "built in host memory first (%.0f MiB), which ran short", io.what,
                     io.cause[0] ? ": " : "", io.cause, image_estimate(S) / 1048576.0);
        bad = 1;
    } else { /* temporary name, fsync, rename; the temporary file is removed on failure */
        bad = fileio_write_atomic(path, image, len) != 0;
    }
    free(image);
    if (bad) {
        if (root)
            empic_report(path, 0, "checkpoint not written; %s%s",
                         prev ? "the previous checkpoint is intact: "
                              : "no earlier checkpoint of this run exists",
                         prev ? prev : "");
        return -1;
    }
    if (root)
        prune(dir, path, S->checkpoint_last);
    snprintf(S->checkpoint_last, sizeof S->checkpoint_last, "%s", path);
    if (!S->quiet) {
        struct stat st;
        double mb = stat(path, &st) == 0 ? st.st_size / 1048576.0 : 0.0;
        fprintf(stderr, "%scheckpoint %s (%.1f MiB, %.2f s)%s\n",
                isatty(STDERR_FILENO) ? "\r" : "", path, mb, omp_get_wtime() - t0,
                isatty(STDERR_FILENO) ? "\033[K" : "");
    }
    return 0;
}

/* ---------------------------------------------------------------- finding and reading */

static hid_t open_ro(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
}

/* The walk over a file's datasets that reads every value back (HDF5 verifies the chunks'
 * checksums), each rank its share: the chunks of all datasets numbered in the walk's order,
 * chunk k read by rank k mod ranks. */
typedef struct {
    ck_io *io;
    int rank, ranks;
    size_t next; /* the number of the next chunk */
} ck_walk;

/* Values [first, first + n) of dataset ds (1-D, or whole when not) into buf. */
static int read_values(hid_t ds, hid_t mt, int rank1, hsize_t first, hsize_t n, void *buf)
{
    hid_t fs = rank1 ? H5Dget_space(ds) : H5S_ALL, ms = rank1 ? H5Screate_simple(1, &n, NULL)
                                                             : H5S_ALL;
    int bad = (rank1 && (fs < 0 || ms < 0 ||
                         H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, NULL, &n, NULL) < 0)) ||
              H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf) < 0;
    if (rank1 && ms >= 0)
        H5Sclose(ms);
    if (rank1 && fs >= 0)
        H5Sclose(fs);
    return bad ? -1 : 0;
}

/* This rank's chunks of dataset `name` of loc read back. */
static herr_t verify_object(hid_t loc, const char *name, const H5O_info_t *info, void *data)
{
    ck_walk *v = data;
    if (info->type != H5O_TYPE_DATASET)
        return 0;
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t ft = ds < 0 ? -1 : H5Dget_type(ds), sp = ds < 0 ? -1 : H5Dget_space(ds);
    hid_t pl = ds < 0 ? -1 : H5Dget_create_plist(ds);
    hid_t mt = ft < 0 ? -1 : H5Tget_native_type(ft, H5T_DIR_ASCEND);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    const int rank1 = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1;
    hsize_t chunk = (hsize_t)(n > 0 ? n : 1); /* a dataset of one chunk, or several */
    if (rank1 && pl >= 0 && H5Pget_layout(pl) == H5D_CHUNKED && H5Pget_chunk(pl, 1, &chunk) < 1)
        chunk = 0;
    size_t tsize = mt < 0 ? 0 : H5Tget_size(mt);
    void *buf = n >= 0 && chunk > 0 && tsize > 0 && tsize <= 16 &&
                        (size_t)chunk < ((size_t)1 << 40) / tsize
                    ? malloc((size_t)chunk * tsize + 1)
                    : NULL;
    int bad = !buf;
    for (hsize_t at = 0; !bad && at < (hsize_t)n; at += chunk, v->next++)
        if ((int)(v->next % (size_t)v->ranks) == v->rank)
            bad = read_values(ds, mt, rank1, at, (hsize_t)n - at < chunk ? (hsize_t)n - at : chunk,
                              buf) != 0;
    if (bad)
        ck_fail(v->io, name);
    free(buf);
    if (mt >= 0)
        H5Tclose(mt);
    if (pl >= 0)
        H5Pclose(pl);
    if (ft >= 0)
        H5Tclose(ft);
    if (sp >= 0)
        H5Sclose(sp);
    if (ds >= 0)
        H5Dclose(ds);
    return v->io->err ? -1 : 0;
}

/* 0 when path is a checkpoint of this version whose every dataset reads back intact (HDF5
 * checksums of data and metadata); its step in *step. Else -1 with what failed in why.
 * Collective over the ranks: each checks its share of the file (ck_sum_check, ck_walk), and
 * all agree. */
static int verify(const char *path, long *step, char *why, size_t len)
{
    ck_io io = {.shared = h5par_shared()};
    ck_walk walk = {&io, io.shared ? comm_rank() : 0, io.shared ? comm_size() : 1, 0};
    hid_t f = ck_sum_check(path, &io) ? -1 : open_ro(path);
    if (f < 0) {
        ck_fail(&io, "opening the file");
    } else {
        long long v = ck_get_i64(&io, f, "version");
        *step = (long)ck_get_i64(&io, f, "step");
        if (!io.err && v != CHECKPOINT_VERSION)
            ck_fail(&io, "version (another version of empic)");
        if (!io.err && H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, verify_object, &walk,
                                 H5O_INFO_BASIC) < 0)
            ck_fail(&io, "walking the file");
        H5Fclose(f);
    }
    ck_agree(&io);
    snprintf(why, len, "%s%s%s", io.what, io.cause[0] ? ": " : "", io.cause);
    return io.err ? -1 : 0;
}

static int cmp_desc(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? 1 : (x > y ? -1 : 0);
}

int checkpoint_find(const char *dir, char *path, size_t len, long *step)
{
    struct stat st;
    if (stat(dir, &st)) {
        empic_report(dir, 0, "--restart: cannot open: %s", strerror(errno));
        return -1;
    }
    char why[400];
    if (S_ISREG(st.st_mode)) {
        if (verify(dir, step, why, sizeof why)) {
            empic_report(dir, 0, "--restart: not an intact empic checkpoint (version %d): %s; "
                         "give its folder to fall back on an older one", CHECKPOINT_VERSION,
                         why);
            return -1;
        }
        snprintf(path, len, "%s", dir);
        return 0;
    }
    char cdir[CK_PATH], p[CK_PATH + 300];
    snprintf(cdir, sizeof cdir, "%s/checkpoint", dir);
    if (stat(cdir, &st) || !S_ISDIR(st.st_mode))
        snprintf(cdir, sizeof cdir, "%s", dir);
    DIR *dd = opendir(cdir);
    if (!dd) {
        empic_report(cdir, 0, "--restart: cannot read the folder: %s", strerror(errno));
        return -1;
    }
    size_t n = 0, cap = 16;
    long *steps = empic_alloc(cap * sizeof *steps, "checkpoint list");
    struct dirent *e;
    while ((e = readdir(dd))) {
        long s;
        int tmp;
        if (!ckpt_name(e->d_name, &s, &tmp) || tmp)
            continue;
        if (n == cap && !(steps = realloc(steps, (cap *= 2) * sizeof *steps)))
            EMPIC_DIE("out of host memory listing checkpoints");
        steps[n++] = s;
    }
    closedir(dd);
    qsort(steps, n, sizeof *steps, cmp_desc);
    int rc = -1;
    for (size_t k = 0; k < n && rc; k++) {
        long s = -1;
        snprintf(p, sizeof p, "%s/ckpt%08ld.h5", cdir, steps[k]);
        if (verify(p, &s, why, sizeof why) == 0 && s == steps[k]) {
            snprintf(path, len, "%s", p);
            *step = s;
            rc = 0;
        } else {
            empic_report(p, 0, "--restart: skipping this file: not an intact checkpoint (%s)",
                         why[0] ? why : "its step differs from its name");
        }
    }
    free(steps);
    if (rc)
        empic_report(cdir, 0, "--restart: no intact checkpoint (ckpt<step>.h5) here; "
                              "checkpoints are written every diagnostics.checkpoint.every "
                              "steps and when a run is stopped by SIGINT or SIGTERM");
    return rc;
}

int checkpoint_read_deck(const char *path, deck *d)
{
    ck_io io = {0};
    hid_t f = open_ro(path);
    if (f < 0) {
        empic_report(path, 0, "cannot open the checkpoint");
        return -1;
    }
    char *text = ck_get_text(&io, f, "deck");
    H5Fclose(f);
    if (io.err) {
        free(text);
        empic_report(path, 0, "the checkpoint holds no readable deck");
        return -1;
    }
    const char *td = getenv("TMPDIR");
    char tmpl[CK_PATH];
    snprintf(tmpl, sizeof tmpl, "%s/empic-deck-XXXXXX", td && *td ? td : "/tmp");
    int fd = mkstemp(tmpl);
    size_t len = strlen(text), done = 0;
    while (fd >= 0 && done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    free(text);
    if (fd < 0 || done < len || close(fd)) {
        empic_report(tmpl, 0, "cannot write the stored deck to a temporary file: %s",
                     strerror(errno));
        if (fd >= 0)
            unlink(tmpl);
        return -1;
    }
    int rc = deck_load(tmpl, d);
    unlink(tmpl);
    if (rc) {
        empic_report(path, 0, "the deck stored in this checkpoint does not load");
        return -1;
    }
    snprintf(d->file, sizeof d->file, "%s", path);
    char run[CK_PATH];
    /* the run folder the checkpoint lies in (wherever it was moved), else the checkpoint's
     * own folder: never the stored path, which is relative to where the run started */
    if (checkpoint_run_dir(path, run, sizeof run) != 0) {
        snprintf(run, sizeof run, "%s", path);
        char *sl = strrchr(run, '/');
        if (!sl)
            snprintf(run, sizeof run, ".");
        else
            sl[sl == run] = '\0'; /* "/ckpt.h5" -> "/" */
    }
    if (strlen(run) < sizeof d->output)
        memcpy(d->output, run, strlen(run) + 1);
    return 0;
}

/* The cluster tables of species s (every cluster's) from group g, checked against each
 * other; the slots they lay out into *alloc. */
static void read_tables(ck_io *io, hid_t g, sim *S, int s, long long *alloc)
{
    species *sp = &S->sp[s];
    const int ncl = S->cl.n;
    species_open(sp, &S->d, s, &S->cl);
    char *name = ck_get_text(io, g, "name");
    if (!io->err && strcmp(name, sp->cfg->name) != 0)
        ck_fail(io, "name (species differ from the deck's)");
    free(name);
    sp->np = ck_get_i64(io, g, "np");
    *alloc = ck_get_i64(io, g, "alloc");
    sp->rearrangements = ck_get_i64(io, g, "rearrangements");
    ck_get(io, g, "start", H5T_NATIVE_INT, (size_t)ncl, sp->start);
    ck_get(io, g, "count", H5T_NATIVE_INT, (size_t)ncl, sp->count);
    ck_get(io, g, "cap", H5T_NATIVE_INT, (size_t)ncl, sp->cap);
    if (ck_len(g, "peak") == ncl) /* the layout's memory (species_segments) */
        ck_get(io, g, "peak", H5T_NATIVE_INT, (size_t)ncl, sp->peak);
    else /* a checkpoint from before it was kept */
        memcpy(sp->peak, sp->count, (size_t)ncl * sizeof(int));
    ck_get(io, g, "hist", H5T_NATIVE_INT, (size_t)ncl * 9, sp->hist);
    if (io->err)
        return;
    long long live = 0;
    for (int c = 0; c < ncl; c++) {
        if (sp->count[c] < 0 || sp->count[c] > sp->cap[c] || sp->start[c] < 0 ||
            (long long)sp->start[c] + sp->cap[c] > *alloc) {
            ck_fail(io, "cluster tables (inconsistent)");
            return;
        }
        live += sp->count[c];
    }
    if (*alloc < 0 || *alloc > 0x7fffffffLL || live != sp->np)
        ck_fail(io, "np (inconsistent with the cluster tables)");
}

/* One rank holds the whole run: the particle arrays in the checkpoint's own segment layout
 * (alloc slots), so that the continuation lays segments out as the run that was not
 * stopped would. The live particles are stored in cluster order. */
static void read_whole(ck_io *io, hid_t g, species *sp, int ncl, long long alloc)
{
    char src[64];
    double avail = memory_available(src, sizeof src);
    if (avail > 0 &&
        (double)alloc * (29.0 + (sp->tracked ? 8.0 : 0.0) + (sp->ion ? 1.0 : 0.0)) > avail) {
        ck_fail(io, "alloc (more particle slots than the memory available)");
        return;
    }
    species_alloc(sp, (size_t)alloc);
    const size_t live = (size_t)sp->np;
    char *stage = empic_alloc(live * 8, "checkpoint staging");
    ck_array a[10];
    const int na = species_arrays(sp, a);
    for (int k = 0; k < na && !io->err; k++) {
        ck_get(io, g, a[k].name, a[k].mtype, live, stage);
        size_t o = 0;
        for (int c = 0; c < ncl && !io->err; c++) {
            memcpy((char *)a[k].a + (size_t)sp->start[c] * a[k].size, stage + o * a[k].size,
                   (size_t)sp->count[c] * a[k].size);
            o += (size_t)sp->count[c];
        }
    }
    free(stage);
}

/* One rank of several: only the particles of this rank's clusters are read (a run of the
 * stored cluster order per cluster row of its share), into segments laid out for its
 * counts as the load lays them. */
static void read_share(ck_io *io, hid_t g, species *sp, const clusters *cl)
{
    const int ncl = cl->n;
    size_t *off = empic_alloc((size_t)ncl * sizeof(size_t), "checkpoint staging");
    size_t o = 0, total = (size_t)sp->np, mine = 0;
    for (int c = 0; c < ncl; c++) {
        off[c] = o;
        o += (size_t)sp->count[c];
        if (cl->own[c])
            mine += (size_t)sp->count[c];
        else
            sp->count[c] = 0, memset(sp->hist + 9 * c, 0, 9 * sizeof(int));
        sp->start[c] = sp->cap[c] = sp->peak[c] = 0;
    }
    sp->np = (long long)mine;
    species_layout(sp, cl);
    char *stage = empic_alloc(mine * 8, "checkpoint staging");
    ck_array a[10];
    const int na = species_arrays(sp, a);
    for (int k = 0; k < na && !io->err; k++) {
        for (int cy = cl->cy0; cy < cl->cy1 && !io->err; cy++) {
            const int c0 = cluster_id(cl, cl->cx0, cy), c1 = cluster_id(cl, cl->cx1 - 1, cy);
            const size_t n = off[c1] + (size_t)sp->count[c1] - off[c0];
            ck_get_slab(io, g, a[k].name, a[k].mtype, total, off[c0], n, 1, n, stage);
            for (int c = c0; c <= c1; c++)
                memcpy((char *)a[k].a + (size_t)sp->start[c] * a[k].size,
                       stage + (off[c] - off[c0]) * a[k].size, (size_t)sp->count[c] * a[k].size);
        }
    }
    free(stage);
    free(off);
}

/* Species s from group g: its tables, then its particles, all of them (one rank) or those
 * of this rank's clusters. */
static void read_species(ck_io *io, hid_t g, sim *S, int s)
{
    species *sp = &S->sp[s];
    const clusters *cl = &S->cl;
    long long alloc = 0;
    read_tables(io, g, S, s, &alloc);
    if (io->err)
        return;
    if (cl->nrx * cl->nry == 1)
        read_whole(io, g, sp, cl->n, alloc);
    else
        read_share(io, g, sp, cl);
    if (!io->err && species_misplaced(sp, cl) != 0)
        ck_fail(io, "particles (some outside their clusters)");
}

/* Inside a window of the averaged dumps at step: their sums from group g (fields), this
 * rank's share (its cells and guards of the whole arrays). */
static void read_avg(ck_io *io, hid_t g, sim *S, long step)
{
    const long held = fieldavg_held(&S->d, step);
    if (!held)
        return;
    if (!io->err && ck_get_i64(io, g, "avg_held") != held)
        ck_fail(io, "fields/avg_held (not the samples of the deck's averaging window)");
    const emf *f = &S->f;
    const size_t whole = (size_t)(f->ny + 2 * EMF_GUARD) * (f->nx + 2 * EMF_GUARD);
    const size_t stride = (size_t)f->nx + 2 * EMF_GUARD;
    const int n = avg_arrays(S->st.avg_q);
    for (int k = 0; k < n; k++)
        ck_get_slab(io, g, "avg", H5T_NATIVE_DOUBLE, n * whole,
                    k * whole + (size_t)f->j0 * stride + f->i0, stride, f->rows, f->stride,
                    S->st.avg + (size_t)k * f->size);
}

int checkpoint_load(sim *S, const char *path)
{
    ck_io io = {0};
    hid_t f = open_ro(path);
    if (f < 0) {
        empic_report(path, 0, "cannot open the checkpoint");
        return -1;
    }
    long step = (long)ck_get_i64(&io, f, "step");
    long long nsp = ck_get_i64(&io, f, "nspecies"), backend = ck_get_i64(&io, f, "backend");
    int ncl[2] = {0, 0}, shape[2] = {0, 0};
    ck_get(&io, f, "clusters", H5T_NATIVE_INT, 2, ncl);
    if (!io.err && (nsp != S->nsp || ncl[0] != S->cl.ncx || ncl[1] != S->cl.ncy))
        ck_fail(&io, "nspecies/clusters (not those of the deck)");
    if (!io.err && S->d.steps < step) {
        H5Fclose(f);
        empic_report(path, 0, "the run is to end at step %ld, before this checkpoint's step "
                     "%ld; give --steps N with N >= %ld", S->d.steps, step, step);
        return -1;
    }

    hid_t g = ck_group(&io, f, "run", 0);
    S->particle_steps = ck_get_i64(&io, g, "particle_steps");
    ck_get(&io, g, "wall_s", H5T_NATIVE_DOUBLE, 1, &S->wall_s);
    if (ck_len(g, "phase_s") == PH_COUNT - 1) { /* a checkpoint from before "exchange" */
        ck_get(&io, g, "phase_s", H5T_NATIVE_DOUBLE, PH_COUNT - 1, S->st.phase_s);
        S->st.phase_s[PH_OTHER] = S->st.phase_s[PH_EXCHANGE];
        S->st.phase_s[PH_EXCHANGE] = 0.0;
    } else {
        ck_get(&io, g, "phase_s", H5T_NATIVE_DOUBLE, PH_COUNT, S->st.phase_s);
    }
    S->en_step = (long)ck_get_i64(&io, g, "en_step");
    ck_get(&io, g, "en_e", H5T_NATIVE_DOUBLE, 1, &S->en_e);
    ck_get(&io, g, "en_b", H5T_NATIVE_DOUBLE, 1, &S->en_b);
    ck_get(&io, g, "en_gauss", H5T_NATIVE_DOUBLE, 1, &S->en_gauss);
    ck_get(&io, g, "en_kin", H5T_NATIVE_DOUBLE, (size_t)S->nsp, S->en_kin);
    S->win.cells = (long)ck_get_i64(&io, g, "window_cells");
    /* the energy balance's sums (a checkpoint from before them: from zero) */
    if (ck_len(g, "balance") == (long long)S->bal_n)
        ck_get(&io, g, "balance", H5T_NATIVE_DOUBLE, S->bal_n, S->st.flow);
    ck_close_group(g);

    emf *fl = &S->f;
    const char *fname[EMF_STATE] = {"ex", "ey", "ez", "bx", "by", "bz", "jx", "jy", "jz", "rho"};
    float *fa[EMF_STATE];
    emf_state(fl, fa);
    g = ck_group(&io, f, "fields", 0);
    ck_get(&io, g, "shape", H5T_NATIVE_INT, 2, shape);
    const int G = EMF_GUARD, rows = fl->ny + 2 * G, stride = fl->nx + 2 * G;
    if (!io.err && (shape[0] != rows || shape[1] != stride))
        ck_fail(&io, "fields/shape (not the deck's grid)");
    for (int k = 0; k < EMF_STATE; k++) /* this rank's cells and guards, of the whole grid */
        ck_get_slab(&io, g, fname[k], H5T_NATIVE_FLOAT, (size_t)rows * stride,
                    (size_t)fl->j0 * stride + fl->i0, stride, fl->rows, fl->stride, fa[k]);
    ck_get(&io, g, "rho_bg", H5T_NATIVE_DOUBLE, 1, &fl->rho_bg);
    fl->step = (long)ck_get_i64(&io, g, "step");
    read_avg(&io, g, S, step);
    if (fl->fb) {
        fbnd_array a[FBND_ARRAYS];
        const int n = fbnd_arrays(fl, a);
        fl->fb->psi_step = (long)ck_get_i64(&io, g, "fbnd_psi_step");
        fl->fb->shift = (long)ck_get_i64(&io, g, "fbnd_shift");
        for (int k = 0; k < n; k++)
            ck_get(&io, g, a[k].name, H5T_NATIVE_FLOAT, a[k].len, a[k].data);
    }
    ck_close_group(g);

    g = ck_group(&io, f, "species", 0);
    for (int s = 0; s < S->nsp && !io.err; s++) {
        char name[16];
        snprintf(name, sizeof name, "%d", s);
        hid_t gs = ck_group(&io, g, name, 0);
        read_species(&io, gs, S, s);
        ck_close_group(gs);
    }
    ck_close_group(g);
    H5Fclose(f);
    if (io.err && (strstr(io.cause, "memory") || strstr(io.cause, "alloc"))) {
        empic_report(path, 0, "cannot restart from this checkpoint: out of host memory reading "
                     "%s (%s)", io.what, io.cause);
        return -1;
    }
    if (io.err) {
        empic_report(path, 0, "cannot restart from this checkpoint: %s%s%s (damaged, or made "
                     "by another version); an older one may be in the same folder",
                     io.what, io.cause[0] ? ": " : "", io.cause);
        return -1;
    }
    if (backend != S->backend)
        empic_report(path, 0, "note: checkpoint made on the %s backend, continuing on %s: same "
                     "physics, but not bitwise the run that would have been",
                     backend == BACKEND_CUDA ? "cuda" : "cpu",
                     S->backend == BACKEND_CUDA ? "cuda" : "cpu");
    S->step = step;
    S->counted_to = step; /* particle_steps, read above, covers the steps before */
    snprintf(S->checkpoint_last, sizeof S->checkpoint_last, "%s", path);
    if (!S->quiet)
        printf("empic: restarting from %s at step %ld\n", path, step);
    return 0;
}
