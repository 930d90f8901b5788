/* h5par.c - HDF5 files that the ranks write together (h5par.h). */
#include "h5par.h"
#include "comm.h"
#include "species.h"

#if defined(EMPIC_MPI) && !defined(H5_HAVE_PARALLEL)
#error "an MPI build needs the parallel HDF5 (Debian: libhdf5-openmpi-dev), or build with MPI=0"
#endif

int h5par_shared(void) { return comm_size() > 1; }

hid_t h5par_fapl(int shared, size_t increment)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    int bad = fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0;
#ifdef EMPIC_MPI
    if (shared) /* the metadata written by rank 0 in one collective step, not rank by rank */
        bad = bad || H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0 ||
              H5Pset_coll_metadata_write(fapl, 1) < 0;
    else
#endif
        bad = bad || shared || H5Pset_fapl_core(fapl, increment, 0) < 0;
    if (bad && fapl >= 0) {
        H5Pclose(fapl);
        fapl = -1;
    }
    return fapl;
}

h5slab h5par_rows(hsize_t first, hsize_t n, hsize_t cols)
{
    const h5slab s = {{first, 0}, {1, 1}, {1, 1}, {n, cols}};
    return s;
}

void h5par_root(h5part *p, h5slab *s, hsize_t rows, hsize_t cols, int shared)
{
    *s = h5par_rows(0, rows, cols);
    p->n = !shared || comm_rank() == 0;
    p->slab = s;
    p->src_dims[0] = p->src_dims[1] = 0;
    p->src = NULL;
}

int h5par_runs(const clusters *cl, const long long *num, hsize_t cols, h5slab *slab,
               size_t *mine)
{
    int n = 0;
    hsize_t at = 0; /* particles of the clusters before c */
    *mine = 0;
    for (int c = 0; c < cl->n; c++) {
        const int cx = c % cl->ncx, cy = c / cl->ncx;
        if (cx == cl->cx0 && cy >= cl->cy0 && cy < cl->cy1) {
            hsize_t len = 0;
            for (int k = c; k < c + cl->cx1 - cl->cx0; k++)
                len += (hsize_t)num[k];
            if (n > 0 && slab[n - 1].start[0] + slab[n - 1].block[0] == at)
                slab[n - 1].block[0] += len;
            else if (len > 0)
                slab[n++] = h5par_rows(at, len, cols);
            *mine += len;
        }
        at += (hsize_t)num[c];
    }
    return n;
}

int h5par_write(hid_t d, hid_t mtype, const h5part *p, const void *buf, int shared)
{
    static const char none = 0; /* a buffer for a rank that writes nothing */
    hid_t fs = H5Dget_space(d), ms = -1, xfer = H5P_DEFAULT;
    int bad = fs < 0;
    if (!bad && p->n == 0)
        bad = H5Sselect_none(fs) < 0;
    for (int k = 0; !bad && k < p->n; k++) {
        const h5slab *s = &p->slab[k];
        bad = H5Sselect_hyperslab(fs, k ? H5S_SELECT_OR : H5S_SELECT_SET, s->start, s->stride,
                                  s->count, s->block) < 0;
    }
    /* the buffer as HDF5 maps it onto the chunks: a block of the file's shape (rows of a 2-D
     * dataset, the source array) goes chunk by chunk; a buffer of another shape value by
     * value, cheaply in 1-D (values in a row merge), a node per row in 2-D (100 MB for a
     * rank's 2 M particle positions), so a part of several runs is given in 1-D */
    const hssize_t pts = bad ? -1 : H5Sget_select_npoints(fs);
    const int rank = bad ? 0 : H5Sget_simple_extent_ndims(fs);
    hsize_t dims[2] = {1, 1}, mdims[2] = {(hsize_t)(pts > 0 ? pts : 1), 1};
    bad = bad || pts < 0 || rank < 1 || rank > 2 || H5Sget_simple_extent_dims(fs, dims, NULL) < 0;
    const int mrank = p->src || p->n == 1 ? rank : 1;
    if (!bad && mrank == 2 && !p->src && pts > 0) {
        mdims[1] = dims[1];
        mdims[0] = (hsize_t)pts / dims[1];
    }
    bad = bad || (ms = H5Screate_simple(mrank, p->src ? p->src_dims : mdims, NULL)) < 0 ||
          (pts == 0 && H5Sselect_none(ms) < 0);
    for (int k = 0; !bad && pts > 0 && p->src && k < p->n; k++) {
        const h5slab *s = &p->src[k];
        bad = H5Sselect_hyperslab(ms, k ? H5S_SELECT_OR : H5S_SELECT_SET, s->start, s->stride,
                                  s->count, s->block) < 0;
    }
#ifdef EMPIC_MPI
    if (!bad && shared) /* every rank takes part: HDF5 filters chunks in collective writes */
        bad = (xfer = H5Pcreate(H5P_DATASET_XFER)) < 0 ||
              H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE) < 0;
#else
    (void)shared;
#endif
    bad = bad || H5Dwrite(d, mtype, ms, fs, xfer, pts > 0 ? buf : &none) < 0;
    /* the failure's error stack kept past the closes below (each API call clears it): the
     * callers read it (out of memory?) */
    const hid_t stack = bad ? H5Eget_current_stack() : -1;
    if (xfer != H5P_DEFAULT && xfer >= 0)
        H5Pclose(xfer);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (stack >= 0)
        H5Eset_current_stack(stack);
    return bad ? -1 : 0;
}

int h5par_failed(int *err, int shared)
{
    if (!shared)
        return *err ? 0 : -1;
    const int size = comm_size();
    int v = *err ? size - comm_rank() : 0; /* the largest: the lowest failing rank */
    comm_max_int(&v, 1);
    if (v)
        *err = 1;
    return v ? size - v : -1;
}
