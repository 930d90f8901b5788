/* h5out.c - HDF5 writing helpers for the openPMD writers (see h5out.h). */
#include "h5out.h"
#include "comm.h"
#include "empic.h"
#include "version.h"
#include "fileio.h"
#include "units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* unitDimension exponents: L, M, T, I, theta, N, J */
const double H5OUT_DIM_NONE[7] = {0, 0, 0, 0, 0, 0, 0};
const double H5OUT_DIM_LENGTH[7] = {1, 0, 0, 0, 0, 0, 0};
const double H5OUT_DIM_E[7] = {1, 1, -3, -1, 0, 0, 0};    /* V/m */
const double H5OUT_DIM_B[7] = {0, 1, -2, -1, 0, 0, 0};    /* T */
const double H5OUT_DIM_J[7] = {-2, 0, 0, 1, 0, 0, 0};     /* A/m^2 */
const double H5OUT_DIM_RHO[7] = {-3, 0, 1, 1, 0, 0, 0};   /* C/m^3 */
const double H5OUT_DIM_MOMENTUM[7] = {1, 1, -1, 0, 0, 0, 0};
const double H5OUT_DIM_CHARGE[7] = {0, 0, 1, 1, 0, 0, 0};
const double H5OUT_DIM_MASS[7] = {0, 1, 0, 0, 0, 0, 0};

/* SI factors of the normalised units (design.md §2) for a reference density n0. */

void h5out_units(double n0_cm3, out_units *u)
{
    double n0 = n0_cm3 * 1e6;
    double wp = units_wp(n0_cm3);
    u->time = 1.0 / wp;
    u->length = UNITS_C / wp;
    u->e = units_field_Vm(n0_cm3);
    u->b = units_field_T(n0_cm3);
    u->j = UNITS_E * n0 * UNITS_C;
    u->rho = UNITS_E * n0;
    u->momentum = UNITS_ME * UNITS_C;
    u->charge = UNITS_E;
    u->mass = UNITS_ME;
    u->n0len2 = n0 * u->length * u->length; /* real particles per metre in z per n0 dx dy = 1 */
}

/* H5Ewalk2 visitor: a failed allocation anywhere on the error stack. */
static herr_t no_memory(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    if (e->maj_num == H5E_RESOURCE || e->min_num == H5E_CANTALLOC || e->min_num == H5E_NOSPACE)
        *(int *)data = 1;
    return 0;
}

void h5out_fail(h5w *w, const char *what)
{
    if (!w->err) {
        snprintf(w->what, sizeof w->what, "%s", what);
        int mem = 0;
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, no_memory, &mem);
        w->memory = mem;
    }
    w->err = 1;
}

void h5out_close(hid_t id, herr_t (*closer)(hid_t)) { (void)(id >= 0 && closer(id)); }

void h5out_agree(h5w *w)
{
    const int root = h5par_failed(&w->err, w->shared);
    if (root >= 0 && w->shared) {
        comm_bcast(w->what, sizeof w->what, root);
        comm_bcast(&w->memory, sizeof w->memory, root);
    }
}

/* ---- attributes ---- */

void h5out_attr_write(h5w *w, hid_t obj, const char *name, hid_t type, hid_t space,
                       const void *buf)
{
    if (w->err)
        return;
    hid_t a = space < 0 ? -1 : H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, type, buf) < 0)
        h5out_fail(w, name);
    h5out_close(a, H5Aclose);
}

hid_t h5out_str_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, len ? len : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

void h5out_attr_str(h5w *w, hid_t obj, const char *name, const char *s)
{
    size_t len = strlen(s);
    hid_t t = h5out_str_type(len), sp = H5Screate(H5S_SCALAR);
    if (t < 0)
        h5out_fail(w, name);
    else
        h5out_attr_write(w, obj, name, t, sp, len ? s : "");
    h5out_close(t, H5Tclose);
    h5out_close(sp, H5Sclose);
}

/* A 1D array of fixed-length strings (axisLabels). */
void h5out_attr_strs(h5w *w, hid_t obj, const char *name, int n, const char *const *s)
{
    size_t len = 1;
    for (int k = 0; k < n; k++)
        len = strlen(s[k]) > len ? strlen(s[k]) : len;
    char buf[16 * 32] = {0};
    if (n > 16 || len > 32) {
        h5out_fail(w, name);
        return;
    }
    for (int k = 0; k < n; k++)
        memcpy(buf + k * len, s[k], strlen(s[k]));
    hsize_t dim = (hsize_t)n;
    hid_t t = h5out_str_type(len), sp = H5Screate_simple(1, &dim, NULL);
    if (t < 0)
        h5out_fail(w, name);
    else
        h5out_attr_write(w, obj, name, t, sp, buf);
    h5out_close(t, H5Tclose);
    h5out_close(sp, H5Sclose);
}

void h5out_attr_f64v(h5w *w, hid_t obj, const char *name, int n, const double *v)
{
    hsize_t dim = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_SCALAR);
    h5out_attr_write(w, obj, name, H5T_NATIVE_DOUBLE, sp, v);
    h5out_close(sp, H5Sclose);
}

void h5out_attr_f64(h5w *w, hid_t obj, const char *name, double v)
{
    h5out_attr_f64v(w, obj, name, 0, &v);
}

void h5out_attr_u32(h5w *w, hid_t obj, const char *name, uint32_t v)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    h5out_attr_write(w, obj, name, H5T_NATIVE_UINT32, sp, &v);
    h5out_close(sp, H5Sclose);
}

void h5out_attr_u64v(h5w *w, hid_t obj, const char *name, int n, const uint64_t *v)
{
    hsize_t dim = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    h5out_attr_write(w, obj, name, H5T_NATIVE_UINT64, sp, v);
    h5out_close(sp, H5Sclose);
}

/* ---- groups and datasets ---- */

hid_t h5out_group(h5w *w, hid_t loc, const char *name)
{
    if (w->err)
        return -1;
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        h5out_fail(w, name);
    return g;
}

/* Create and fill a dataset of rank 1 or 2 from a buffer of native type mtype, stored as
 * ftype. Returns the open dataset (for attributes) or -1. */
/* Creation properties of a dataset of rank 1 or 2 with values: chunks of about 1 MiB (whole
 * rows of a 2-D dataset) with HDF5's Fletcher-32 checksum, so that a reader detects a damaged
 * byte instead of showing it (the filter is standard: every HDF5 reader applies it). */
static hid_t dataset_checked(int rank, const hsize_t *dims, hid_t ftype)
{
    const hsize_t target = (hsize_t)1 << 20, size = H5Tget_size(ftype);
    hsize_t chunk[2] = {dims[0], rank > 1 ? dims[1] : 1};
    const hsize_t per = size * chunk[1]; /* bytes per row (per element in 1-D) */
    if (chunk[0] * per > target)
        chunk[0] = target / per > 0 ? target / per : 1;
    if (rank > 1 && chunk[1] * size > target) /* rows over 1 MiB: split them too */
        chunk[1] = target / size;
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    if (pl < 0 || H5Pset_chunk(pl, rank, chunk) < 0 || H5Pset_fletcher32(pl) < 0) {
        h5out_close(pl, H5Pclose);
        return -1;
    }
    return pl;
}

hid_t h5out_dataset_part(h5w *w, hid_t loc, const char *name, int rank, const hsize_t *dims,
                         hid_t ftype, hid_t mtype, const h5part *part, const void *buf)
{
    h5out_agree(w);
    if (w->err)
        return -1;
    hsize_t n = dims[0] * (rank > 1 ? dims[1] : 1);
    hid_t sp = H5Screate_simple(rank, dims, NULL), pl = n > 0 ? dataset_checked(rank, dims, ftype)
                                                              : H5P_DEFAULT;
    hid_t d = sp < 0 || pl < 0 ? -1 : H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl,
                                                 H5P_DEFAULT);
    if (d < 0)
        h5out_fail(w, name);
    h5out_agree(w);
    if (!w->err && n > 0 && h5par_write(d, mtype, part, buf, w->shared))
        h5out_fail(w, name);
    h5out_close(sp, H5Sclose);
    if (pl != H5P_DEFAULT)
        h5out_close(pl, H5Pclose);
    return d;
}

hid_t h5out_dataset(h5w *w, hid_t loc, const char *name, int rank, const hsize_t *dims,
                    hid_t ftype, hid_t mtype, const void *buf)
{
    h5part p;
    h5slab s;
    h5par_root(&p, &s, dims[0], rank > 1 ? dims[1] : 1, w->shared);
    return h5out_dataset_part(w, loc, name, rank, dims, ftype, mtype, &p, buf);
}

out_item *h5out_add_item(h5w *w, int particle, int stagger, int precision, long long n,
                         const char *name, hid_t obj)
{
    if (w->err || w->nitems == OUT_MAX_ITEMS)
        return NULL;
    out_item *it = &w->items[w->nitems];
    memset(it, 0, sizeof *it);
    snprintf(it->ntype, sizeof it->ntype, "Float");
    it->particle = particle;
    it->stagger = stagger;
    it->precision = precision;
    it->n = n;
    snprintf(it->name, sizeof it->name, "%s", name);
    if (H5Iget_name(obj, it->path, sizeof it->path) <= 0) {
        h5out_fail(w, name);
        return NULL;
    }
    w->nitems++;
    return it;
}

/* Close the objects of a file that its H5Fclose left open, then the file. */
static void close_all(hid_t file)
{
    if (H5Iis_valid(file) <= 0)
        return;
    hid_t ids[64];
    ssize_t n = H5Fget_obj_ids(file, H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE |
                                         H5F_OBJ_ATTR | H5F_OBJ_LOCAL, 64, ids);
    for (ssize_t k = 0; k < n; k++)
        (void)(H5Iget_type(ids[k]) == H5I_ATTR ? H5Aclose(ids[k]) : H5Oclose(ids[k]));
    if (H5Iis_valid(file) > 0)
        H5Fclose(file);
}

/* The end of a shared file: closed by all ranks, renamed into place by rank 0 (or removed
 * after a failure, which rank 0 reports). */
static int commit_shared(h5w *w, const char *path, const char *what)
{
    h5out_agree(w);
    if (w->file >= 0 && H5Fclose(w->file) < 0) {
        h5out_fail(w, "file close");
        close_all(w->file);
    }
    w->file = -1;
    h5out_agree(w);
    int rc = w->err ? -1 : 0;
    if (comm_rank() == 0 && w->err) {
        char tmp[OUT_PATH + 8];
        if (fileio_tmp_name(path, tmp, sizeof tmp) == 0)
            unlink(tmp);
        empic_report(path, 0, "HDF5 error at %s; %s not written", w->what, what);
    } else if (comm_rank() == 0) {
        rc = fileio_commit_tmp(path, 0);
    }
    comm_bcast(&rc, sizeof rc, 0);
    return rc;
}

int h5out_commit(h5w *w, const char *path, const char *what)
{
    if (w->shared)
        return commit_shared(w, path, what);
    void *image = NULL;
    ssize_t n = -1;
    if (w->file >= 0 && !w->err && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0)
        h5out_fail(w, "flushing the file");
    if (w->file >= 0 && !w->err && (n = H5Fget_file_image(w->file, NULL, 0)) <= 0)
        h5out_fail(w, "the file image");
    if (!w->err && !(image = malloc((size_t)n))) {
        h5out_fail(w, "the file image");
        w->memory = 1;
    }
    if (!w->err && H5Fget_file_image(w->file, image, (size_t)n) != n)
        h5out_fail(w, "copying the file image");
    if (w->err) { /* its memory back before the close, which may need some */
        free(image);
        image = NULL;
    }
    if (w->file >= 0 && H5Fclose(w->file) < 0) {
        h5out_fail(w, "file close");
        free(image);
        image = NULL;
        /* a failed close leaves the file open, and HDF5's exit handler would flush it
         * again: its objects closed, then the file once more */
        close_all(w->file);
    }
    w->file = -1;
    if (w->err) {
        if (w->memory)
            empic_report(path, 0, "out of host memory building the file in memory (at %s); %s "
                         "not written", w->what, what);
        else
            empic_report(path, 0, "HDF5 error at %s; %s not written", w->what, what);
        return -1;
    }
    int rc = fileio_write_replace(path, image, (size_t)n);
    free(image);
    if (rc)
        empic_report(path, 0, "%s not written", what);
    return rc;
}

/* Names in the file must be [A-Za-z0-9_] (openPMD record naming). */
void h5out_safe_name(char *dst, size_t len, const char *src)
{
    deck_output_name(dst, len, src);
}

int h5out_room(size_t image)
{
    void *p = malloc(image + H5OUT_ROOM);
    free(p);
    return p ? 0 : -1;
}

int h5out_create(h5w *w, const char *name)
{
    char tmp[OUT_PATH + 8];
    if (h5out_room(0)) {
        h5out_fail(w, "file creation");
        w->memory = 1;
    }
    /* one rank: built in memory (core driver, no backing store) and written by h5out_commit
     * in one piece: HDF5 never writes to the disk itself, so a full disk fails a plain
     * write(). The driver grows its image by 256 KiB steps, zeroing each: an 8 MiB step
     * zeroed 8 MiB for every small tracks file (1 ms each, a fifth of such a dump's time).
     * Shared: every rank writes its part through MPI-IO, under the temporary name */
    hid_t fapl = w->err ? -1 : h5par_fapl(w->shared, (size_t)1 << 18);
    if (!w->err && fapl < 0)
        h5out_fail(w, "file access properties");
    if (!w->err && w->shared && fileio_tmp_name(name, tmp, sizeof tmp))
        h5out_fail(w, "file name");
    h5out_agree(w);
    w->file = w->err ? -1 : H5Fcreate(w->shared ? tmp : name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    h5out_close(fapl, H5Pclose);
    if (w->file < 0)
        h5out_fail(w, "file creation");
    h5out_agree(w);
    return w->err ? -1 : 0;
}

void h5out_root_attrs(h5w *w, const char *iteration_format, int meshes, int particles,
                      const char *comment)
{
    char date[64] = "1970-01-01 00:00:00 +0000", author[256];
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %z", &tm);
    snprintf(author, sizeof author, "%s", empic_author());
    if (w->shared) { /* the same attributes on every rank: rank 0's */
        comm_bcast(date, sizeof date, 0);
        comm_bcast(author, sizeof author, 0);
    }
    hid_t r = w->file;
    h5out_attr_str(w, r, "openPMD", "1.1.0");
    h5out_attr_u32(w, r, "openPMDextension", 0);
    h5out_attr_str(w, r, "basePath", "/data/%T/");
    if (meshes)
        h5out_attr_str(w, r, "meshesPath", "meshes/");
    if (particles)
        h5out_attr_str(w, r, "particlesPath", "particles/");
    /* "/data/%T/": all iterations in one file */
    h5out_attr_str(w, r, "iterationEncoding",
                   iteration_format[0] == '/' ? "groupBased" : "fileBased");
    h5out_attr_str(w, r, "iterationFormat", iteration_format);
    h5out_attr_str(w, r, "software", "empic");
    h5out_attr_str(w, r, "softwareVersion", empic_version_string());
    h5out_attr_str(w, r, "date", date);
    h5out_attr_str(w, r, "author", author);
    h5out_attr_str(w, r, "comment", comment);
}

hid_t h5out_iteration(h5w *w, hid_t *data, long step, double t, double dt, double time_si)
{
    char name[32];
    snprintf(name, sizeof name, "%ld", step);
    *data = h5out_group(w, w->file, "data");
    hid_t it = h5out_group(w, *data, name);
    h5out_attr_f64(w, it, "time", t);
    h5out_attr_f64(w, it, "dt", dt);
    h5out_attr_f64(w, it, "timeUnitSI", time_si);
    return it;
}

int h5out_continue(const char *path, const char *what, long first, int restart,
                   int (*trim)(hid_t file, long first))
{
    if (access(path, F_OK) != 0)
        return 0;
    if (!restart) {
        if (unlink(path) == 0)
            return 0;
        empic_report(path, 0, "cannot remove the %s file of an earlier run: %s", what,
                     strerror(errno));
        return -1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    int rc = f < 0 || trim(f, first);
    if (f >= 0 && H5Fclose(f) < 0)
        rc = 1;
    if (rc)
        empic_report(path, 0, "cannot open the %s file to continue it from step %ld "
                     "(damaged? move it away to start a new one)", what, first);
    return rc ? -1 : 0;
}
