/* h5par.h - HDF5 files that the ranks write together (design.md §12): one file per dump or
 * checkpoint, whatever the number of ranks. Over several ranks the file is shared: every
 * rank opens it through HDF5's MPI-IO driver and writes its own part of each dataset (the
 * cells of its rectangle, the particles of its clusters) in collective transfers, so that no
 * rank holds the whole run; HDF5 applies the checksum filter chunk by chunk, whichever ranks
 * wrote the chunk, so the datasets are those of a one-rank file. One rank (or a build without
 * MPI) builds the file in memory (the core driver) and its caller writes it whole. On a shared
 * file every rank makes the same HDF5 calls with the same sizes and attribute values. */
#ifndef H5PAR_H
#define H5PAR_H

#include <hdf5.h>
#include <stddef.h>

struct clusters;

/* A regular pattern of a dataset of rank 1 or 2 (HDF5's hyperslab; index 0 alone for rank
 * 1): count blocks of block values, stride apart, from start, per dimension. */
typedef struct {
    hsize_t start[2], stride[2], count[2], block[2];
} h5slab;

/* This rank's part of a dataset: the union of the n slabs of the file (n = 0: nothing),
 * from a buffer that holds their values one after the other in the file's order (whole rows
 * of a 2-D dataset), or, when src is set, from the n slabs src of an array of src_dims, of
 * the dataset's rank (fields with their guards). */
typedef struct {
    int n;
    const h5slab *slab;
    hsize_t src_dims[2];
    const h5slab *src;
} h5part;

/* 1 when the ranks' files are shared: several ranks (asks MPI: on the main thread). */
int h5par_shared(void);
/* File access list: shared (the MPI-IO driver over all ranks), else in memory (the core
 * driver growing by `increment` bytes, no backing store). -1 on failure. */
hid_t h5par_fapl(int shared, size_t increment);
/* Rows [first, first + n) of a dataset with `cols` columns (1 for rank 1). */
h5slab h5par_rows(hsize_t first, hsize_t n, hsize_t cols);
/* p: the whole of a dataset of rows x cols values, from rank 0 (the other ranks of a shared
 * file write nothing); s holds its slab. */
void h5par_root(h5part *p, h5slab *s, hsize_t rows, hsize_t cols, int shared);
/* Per-particle datasets in cluster order, num[c] particles in cluster c (every cluster's):
 * this rank's, one run per cluster row of its share (its clusters follow each other there;
 * runs that meet are joined), as slabs of rows with `cols` columns into slab (cl->cy1 -
 * cl->cy0 at most; empty runs left out). Returns the slabs; *mine: this rank's particles. */
int h5par_runs(const struct clusters *cl, const long long *num, hsize_t cols, h5slab *slab,
               size_t *mine);
/* Write this rank's part p of the open dataset d from buf (native type mtype); on a shared
 * file every rank calls it (a collective transfer). 0, or -1. */
int h5par_write(hid_t d, hid_t mtype, const h5part *p, const void *buf, int shared);
/* Whether any rank failed (*err set there): *err then set on every rank of a shared file,
 * and the lowest such rank returned (whose message the caller may broadcast); -1 when none.
 * Collective on a shared file. */
int h5par_failed(int *err, int shared);

#endif
