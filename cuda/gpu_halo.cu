/* gpu_halo.cu - exchanges of device arrays with the neighbour ranks along one axis (several
 * ranks only), staged through a pinned host mirror laid out as the array: the bands the
 * exchange reads are copied down, emf.c's own exchange (emf_guard_axis, emf_acc_fold: the
 * CPU ranks' code, comm.h) runs on the mirror, and the bands it wrote go back up. Along x a
 * band is G columns of a range of rows (one strided copy), along y G whole rows. */
#include "gpu_internal.h"

/* The mirror: room for the three fixed-point components of g->acc (the largest user). */
static char *mirror(gpu_state *g)
{
    if (!g->h_halo)
        GPU_CK(cudaMallocHost(&g->h_halo, 3 * g->size * sizeof(long long)));
    return (char *)g->h_halo;
}

/* Copy a band of ncomp components (of `size` elements of esz bytes each, one after the other)
 * between the device array dev and the mirror: along x (axis 0) columns [first, first + n)
 * of rows [r0, r1), along y rows [first, first + n). */
static void band(gpu_state *g, char *dev, char *host, size_t esz, int ncomp, int axis,
                 int first, int n, int r0, int r1, cudaMemcpyKind kind)
{
    const size_t row = (size_t)g->stride * esz, comp = g->size * esz;
    char *d, *h;
    if (axis == 0) {
        for (int k = 0; k < ncomp; k++) {
            const size_t at = k * comp + (size_t)r0 * row + (size_t)first * esz;
            d = dev + at;
            h = host + at;
            GPU_CK(cudaMemcpy2DAsync(kind == cudaMemcpyDeviceToHost ? h : d, row,
                                     kind == cudaMemcpyDeviceToHost ? d : h, row,
                                     (size_t)n * esz, (size_t)(r1 - r0), kind, g->stream));
        }
    } else {
        const size_t at = (size_t)first * row;
        d = dev + at;
        h = host + at;
        GPU_CK(cudaMemcpy2DAsync(kind == cudaMemcpyDeviceToHost ? h : d, comp,
                                 kind == cudaMemcpyDeviceToHost ? d : h, comp, (size_t)n * row,
                                 (size_t)ncomp, kind, g->stream));
    }
}

void gpu_halo_fill(gpu_state *g, float *a, int axis)
{
    const int G = EMF_GUARD, w = g->i1 - g->i0, h = g->j1 - g->j0;
    const int lo = g->nb[2 * axis], hi = g->nb[2 * axis + 1], n = axis ? h : w;
    const int r0 = axis ? 0 : G, r1 = axis ? 0 : G + h; /* x: this rank's rows */
    char *m = mirror(g), *d = (char *)a;
    const size_t esz = sizeof(float);
    /* what the neighbours get: the first and last G cells */
    band(g, d, m, esz, 1, axis, G, G, r0, r1, cudaMemcpyDeviceToHost);
    band(g, d, m, esz, 1, axis, n, G, r0, r1, cudaMemcpyDeviceToHost);
    GPU_CK(cudaStreamSynchronize(g->stream));
    emf_guard_axis(g->hf, (float *)m, axis);
    /* the guards that came from a neighbour (a box edge's are left as they are) */
    if (lo >= 0)
        band(g, d, m, esz, 1, axis, 0, G, r0, r1, cudaMemcpyHostToDevice);
    if (hi >= 0)
        band(g, d, m, esz, 1, axis, G + n, G, r0, r1, cudaMemcpyHostToDevice);
}

void gpu_halo_fold(gpu_state *g, int ncomp, int axis)
{
    const int G = EMF_GUARD, n = axis ? g->j1 - g->j0 : g->i1 - g->i0;
    char *m = mirror(g), *d = (char *)g->acc;
    const size_t esz = sizeof(long long);
    /* the guards and the cells they fold into: [0, 2G) and [n, n + 2G), every row along x */
    band(g, d, m, esz, ncomp, axis, 0, 2 * G, 0, g->rows, cudaMemcpyDeviceToHost);
    band(g, d, m, esz, ncomp, axis, n, 2 * G, 0, g->rows, cudaMemcpyDeviceToHost);
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int k = 0; k < ncomp; k++)
        emf_acc_fold(g->hf, (long long *)m + k * g->size, axis);
    band(g, d, m, esz, ncomp, axis, 0, 2 * G, 0, g->rows, cudaMemcpyHostToDevice);
    band(g, d, m, esz, ncomp, axis, n, 2 * G, 0, g->rows, cudaMemcpyHostToDevice);
}
