/* h5out.h - HDF5 writing helpers shared by the openPMD writers (output.c, insitu.c): SI
 * factors of the normalised units, unitDimension vectors, attribute/group/dataset helpers
 * that record the first failure instead of stopping; files are built in memory and written
 * atomically, or, shared by several ranks (h5par.h), written by all of them under a
 * temporary name and renamed. */
#ifndef H5OUT_H
#define H5OUT_H

#include "deck.h"
#include "h5par.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#define OUT_MAX_ITEMS 256
#define OUT_PATH 4096

/* SI factors of the normalised units (design.md §2) for a reference density n0. */
typedef struct {
    double time, length, e, b, j, rho, momentum, charge, mass, n0len2;
} out_units;

/* unitDimension exponents: L, M, T, I, theta, N, J */
extern const double H5OUT_DIM_NONE[7];
extern const double H5OUT_DIM_LENGTH[7];
extern const double H5OUT_DIM_E[7];
extern const double H5OUT_DIM_B[7];
extern const double H5OUT_DIM_J[7];
extern const double H5OUT_DIM_RHO[7];
extern const double H5OUT_DIM_MOMENTUM[7];
extern const double H5OUT_DIM_CHARGE[7];
extern const double H5OUT_DIM_MASS[7];

/* What the HDF5 file holds, for the XDMF description. */
typedef struct {
    int particle;          /* 0: mesh component, 1: particle record */
    int stagger;           /* mesh: ST_*; particle: species number */
    int precision;         /* bytes per value */
    long long n;           /* particles (particle items) */
    char name[96];         /* XDMF attribute name ("geom_xy", "vertex" for the cloud's shape) */
    char path[160];        /* dataset path inside the file */
    char ntype[8];         /* XDMF NumberType: "Float" (default), "UInt", "Int" */
    char units[128];       /* the normalised unit and its SI value, for the XDMF Information */
} out_item;

typedef struct {
    hid_t file;
    int shared;            /* every rank writes its part of the file (h5par.h), set before
                              h5out_create; the helpers below are then collective */
    int err;
    char what[192];        /* first failing object */
    int memory;            /* the failure was HDF5 running out of memory (its error stack) */
    int nitems;
    out_item items[OUT_MAX_ITEMS];
    char species[DECK_MAX_SPECIES][DECK_NAME_MAX];
} h5w;

/* Failures: the first failing object's name is kept in w->what and w->err set; every helper
 * below does nothing once w->err is set, so a writer checks once at the end. On a shared
 * file the ranks agree on a failure before each dataset and at the end (the lowest failing
 * rank's w->what on all), so that they skip the same calls. */
void h5out_fail(h5w *w, const char *what);
/* A shared file: a failure of any rank made every rank's, with the first one's w->what
 * (collective; nothing on a file of one rank). */
void h5out_agree(h5w *w);
/* Close an HDF5 id (ignored when negative) with its closer (H5Gclose, H5Dclose, ...). */
void h5out_close(hid_t id, herr_t (*closer)(hid_t));
void h5out_units(double n0_cm3, out_units *u);

/* Attributes on obj. */
void h5out_attr_write(h5w *w, hid_t obj, const char *name, hid_t type, hid_t space,
                      const void *buf);
hid_t h5out_str_type(size_t len);
void h5out_attr_str(h5w *w, hid_t obj, const char *name, const char *s);
void h5out_attr_strs(h5w *w, hid_t obj, const char *name, int n, const char *const *s);
void h5out_attr_f64v(h5w *w, hid_t obj, const char *name, int n, const double *v);
void h5out_attr_f64(h5w *w, hid_t obj, const char *name, double v);
void h5out_attr_u32(h5w *w, hid_t obj, const char *name, uint32_t v);
void h5out_attr_u64v(h5w *w, hid_t obj, const char *name, int n, const uint64_t *v);

/* Groups and datasets (rank 1 or 2, from a buffer of native type mtype stored as ftype,
 * chunked with Fletcher-32 checksums); the dataset is returned open (for attributes) or -1.
 * h5out_dataset writes buf whole (rank 0's on a shared file), h5out_dataset_part this
 * rank's part of it (h5par.h). */
hid_t h5out_group(h5w *w, hid_t loc, const char *name);
hid_t h5out_dataset(h5w *w, hid_t loc, const char *name, int rank, const hsize_t *dims,
                    hid_t ftype, hid_t mtype, const void *buf);
hid_t h5out_dataset_part(h5w *w, hid_t loc, const char *name, int rank, const hsize_t *dims,
                         hid_t ftype, hid_t mtype, const h5part *part, const void *buf);
/* Remember dataset obj (floating point values) for the XDMF description; the item added, or
 * NULL after a failure, so that its ntype and units can be set. */
out_item *h5out_add_item(h5w *w, int particle, int stagger, int precision, long long n,
                         const char *name, hid_t obj);

/* 0 when an in-memory file image of `image` bytes and H5OUT_ROOM more can be allocated,
 * the memory HDF5 needs to open a file (its metadata cache): HDF5 1.10 crashes in H5Fcreate
 * when an allocation there fails, so the writers ask first. */
#define H5OUT_ROOM ((size_t)16 << 20)
int h5out_room(size_t image);
/* Create the file `name` into w->file: in memory, or shared by the ranks (w->shared) under
 * its temporary name (fileio.h); 0, or -1 with w->err set (and w->memory when the memory is
 * short). */
int h5out_create(h5w *w, const char *name);
/* openPMD 1.1.0 root attributes of a file-based series (iteration_format e.g.
 * "data%08T.h5"), or of a group-based one (iteration_format "/data/%T/"); meshesPath / particlesPath only when the file holds them. */
void h5out_root_attrs(h5w *w, const char *iteration_format, int meshes, int particles,
                      const char *comment);
/* Group /data/<step> with time, dt and timeUnitSI; *data gets /data (close both). */
hid_t h5out_iteration(h5w *w, hid_t *data, long step, double t, double dt, double time_si);

/* Close the file of h5out_create and write it to path atomically (fileio.h; a shared file:
 * rename it into place), or report the HDF5 error (w->what) with `what` (e.g. "dump") and
 * write nothing; 0 or -1 (the same on every rank of a shared file, rank 0 reporting). */
int h5out_commit(h5w *w, const char *path, const char *what);
/* Names in the file must be [A-Za-z0-9_] (openPMD record naming). */
void h5out_safe_name(char *dst, size_t len, const char *src);
/* A file a run appends to (what: "tracks", "probes") at its start: a fresh run removes one
 * an earlier run left; a restart opens it and trim(file, first) drops what it holds from
 * step first on. 0, or -1 after reporting. */
int h5out_continue(const char *path, const char *what, long first, int restart,
                   int (*trim)(hid_t file, long first));

#endif
