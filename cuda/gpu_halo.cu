/* gpu_halo.cu - the exchanges of device arrays with the neighbour ranks (several ranks
 * only), staged through a pinned host mirror laid out as the arrays: the bands an exchange
 * reads are copied down, emf.c's own exchange (emf_guard_axis, emf_acc_fold: the CPU ranks'
 * code, comm.h) runs on the mirror, and the bands it wrote go back up. Along x a band is G or
 * 2G columns of a range of rows (one strided copy), along y G or 2G whole rows. Both axes of
 * all components go down, through the host and up in one round (one wait for the device): x
 * first, then y with the corners the x exchange brought, as on the CPU. */
#include "gpu_internal.h"
#include "yee.h"

/* The mirror: room for three components of 8-byte entries (the current's sums), or six of
 * 4-byte ones (GPU_HALO_MAX fields). */
static char *mirror(gpu_state *g)
{
    if (!g->h_halo)
        GPU_CK(cudaMallocHost(&g->h_halo, 3 * g->size * sizeof(long long)));
    return (char *)g->h_halo;
}

/* Copy a band of array dev (entries of esz bytes) from or to its place in the mirror copy m:
 * along x (axis 0) columns [first, first + n) of rows [r0, r1), along y rows [first,
 * first + n). */
static void band(gpu_state *g, char *dev, char *m, size_t esz, int axis, int first, int n,
                 int r0, int r1, int down)
{
    const size_t row = (size_t)g->stride * esz;
    const size_t at = axis ? (size_t)first * row : (size_t)r0 * row + (size_t)first * esz;
    const size_t width = axis ? (size_t)n * row : (size_t)n * esz;
    const size_t height = axis ? 1 : (size_t)(r1 - r0), pitch = axis ? width : row;
    char *d = dev + at, *h = m + at;
    GPU_CK(cudaMemcpy2DAsync(down ? h : d, pitch, down ? d : h, pitch, width, height,
                             down ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                             g->stream));
}

/* The bands of one axis of every component, down (what the exchange reads) or up (what it
 * wrote): a guard fill reads the first and last G cells and writes the guards that have a
 * neighbour (x: this rank's rows, and the edge row above them: yee_fill_top); a fold reads
 * and writes the guards and the cells they fold into (x: every row). */
static void bands(gpu_state *g, void *const a[], int ncomp, size_t esz, int fold, int axis,
                  int down)
{
    const int G = EMF_GUARD, h = g->j1 - g->j0, n = axis ? h : g->i1 - g->i0;
    const int top = yee_fill_top(g->j1, g->ny, g->py); /* emf_guard_axis's rows */
    const int r0 = axis || fold ? 0 : G, r1 = axis ? 0 : fold ? g->rows : G + h + top;
    const int lo = g->nb[2 * axis] >= 0, hi = g->nb[2 * axis + 1] >= 0;
    for (int c = 0; c < ncomp; c++) {
        char *d = (char *)a[c], *m = mirror(g) + (size_t)c * g->size * esz;
        if (fold) {
            band(g, d, m, esz, axis, 0, 2 * G, r0, r1, down);
            band(g, d, m, esz, axis, n, 2 * G, r0, r1, down);
        } else if (down) {
            band(g, d, m, esz, axis, G, G, r0, r1, 1);
            band(g, d, m, esz, axis, n, G, r0, r1, 1);
        } else {
            if (lo)
                band(g, d, m, esz, axis, 0, G, r0, r1, 0);
            if (hi)
                band(g, d, m, esz, axis, G + n, G, r0, r1, 0);
        }
    }
}

static void staged_halo(gpu_state *g, void *const a[], int ncomp, int fold,
                        void (*self)(gpu_state *, void *const[], int, int))
{
    const int kx = gpu_axis_kind(g, 0), ky = gpu_axis_kind(g, 1);
    const size_t esz = fold ? sizeof(long long) : sizeof(float);
    if (kx == 1)
        self(g, a, ncomp, 0);
    if (kx == 0 || ky == 0) {
        for (int axis = 0; axis < 2; axis++)
            if ((axis ? ky : kx) == 0)
                bands(g, a, ncomp, esz, fold, axis, 1);
        GPU_CK(cudaStreamSynchronize(g->stream));
        for (int axis = 0; axis < 2; axis++)
            for (int c = 0; c < ncomp && (axis ? ky : kx) == 0; c++) {
                char *m = mirror(g) + (size_t)c * g->size * esz;
                if (fold)
                    emf_acc_fold(g->hf, (long long *)m, axis);
                else
                    emf_guard_axis(g->hf, (float *)m, axis);
            }
        for (int axis = 0; axis < 2; axis++)
            if ((axis ? ky : kx) == 0)
                bands(g, a, ncomp, esz, fold, axis, 0);
    }
    if (ky == 1)
        self(g, a, ncomp, 1);
}

void gpu_halo(gpu_state *g, void *const a[], int ncomp, int fold,
              void (*self)(gpu_state *, void *const[], int, int))
{
    const int ex = g->ranks > 1 ? gpu_exchange_begin(g) : -1;
    if (g->nccl) /* device to device (gpu_nccl.cu) */
        gpu_nccl_halo(g, a, ncomp, fold, self);
    else
        staged_halo(g, a, ncomp, fold, self);
    gpu_exchange_end(g, ex);
}
