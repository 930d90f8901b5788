/* emf.c - the fields' arrays, guard cells (exchanged with the neighbour ranks), current
 * folding, the initial Poisson solve and the field diagnostics (OpenMP over rows of this
 * rank's cells). */
#include "emf.h"
#include "deck.h"
#include "comm.h"
#include "empic.h"
#include "species.h"
#include "particle.h"
#include "yee.h"

#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void emf_init(emf *f, const deck *d, const int lo[2], const int hi[2], const int nb[4])
{
    const int G = EMF_GUARD;
    memset(f, 0, sizeof *f);
    f->nx = d->nx;
    f->ny = d->ny;
    f->i0 = lo[0];
    f->i1 = hi[0];
    f->j0 = lo[1];
    f->j1 = hi[1];
    memcpy(f->nb, nb, sizeof f->nb);
    f->stride = f->i1 - f->i0 + 2 * G;
    f->rows = f->j1 - f->j0 + 2 * G;
    f->size = (size_t)f->stride * f->rows;
    f->off = G - f->i0 + (G - f->j0) * f->stride;
    f->dx = d->dx;
    f->dy = d->dy;
    f->dt = d->dt;
    memcpy(f->bnd, d->fbnd, sizeof f->bnd);
    f->filter_passes = d->filter_passes;
    f->filter_compensate = d->filter_compensate;
    f->store = empic_calloc(EMF_STORE * f->size, sizeof(float), "field arrays");
    for (int c = 0; c < 3; c++) {
        f->e[c] = f->store + c * f->size;
        f->b[c] = f->store + (3 + c) * f->size;
        f->j[c] = f->store + (6 + c) * f->size;
    }
    f->rho = f->store + 9 * f->size;
    f->tmp = f->store + 10 * f->size;
    f->ghi[0] = f->nx;
    f->ghi[1] = f->ny;
}

void emf_free(emf *f)
{
    free(f->store);
    free(f->acc);
    memset(f, 0, sizeof *f);
}

void emf_zero(const emf *f, float *a)
{
    memset(a, 0, f->size * sizeof(float));
}

/* ---------------------------------------------------------------- guards: exchanges between
 * ranks (comm.h), copies across a periodic side of one rank. Local layout: this rank's cells
 * are columns [G, G + w) and rows [G, G + h) of the stored array. */

/* Columns [c0, c0 + G) of rows [r0, r1) of a (elements of esz bytes) to or from buf. */
static void strip(const emf *f, char *a, size_t esz, int c0, int r0, int r1, char *buf, int out)
{
    const size_t n = (size_t)EMF_GUARD * esz;
    for (int r = r0; r < r1; r++) {
        char *p = a + ((size_t)r * f->stride + c0) * esz, *q = buf + (size_t)(r - r0) * n;
        if (out)
            memcpy(q, p, n);
        else
            memcpy(p, q, n);
    }
}

/* Send this rank's block at (send0) toward side `to` and take the block from the opposite
 * side into (recv0): along x a strip of G columns of rows [r0, r1), along y G whole rows. */
static void shift_block(const emf *f, char *a, size_t esz, int axis, int to, int send0,
                        int recv0, int r0, int r1, char *buf)
{
    const int from = to ^ 1, G = EMF_GUARD;
    if (axis == 0) {
        const size_t n = (size_t)(r1 - r0) * G * esz;
        strip(f, a, esz, send0, r0, r1, buf, 1);
        if (comm_sendrecv(buf, n, f->nb[to], buf + n, n, f->nb[from], 10 + to))
            strip(f, a, esz, recv0, r0, r1, buf + n, 0);
    } else {
        const size_t n = (size_t)G * f->stride * esz;
        memcpy(buf, a + (size_t)send0 * f->stride * esz, n);
        if (comm_sendrecv(buf, n, f->nb[to], buf + n, n, f->nb[from], 10 + to))
            memcpy(a + (size_t)recv0 * f->stride * esz, buf + n, n);
    }
}

void emf_guard_axis(const emf *f, float *a, int axis)
{
    const int G = EMF_GUARD, w = f->i1 - f->i0, h = f->j1 - f->j0;
    const size_t esz = sizeof(float);
    char *buf = empic_alloc(2 * (size_t)G * (f->stride > f->rows ? f->stride : f->rows) * esz,
                            "guard exchange");
    if (axis == 0) { /* this rank's rows (and the edge row at ymax: yee_fill_top) */
        const int r1 = G + h + yee_fill_top(f->j1, f->ny, f->bnd[SIDE_YMAX] == FBND_PERIODIC);
        shift_block(f, (char *)a, esz, 0, SIDE_XMIN, G, G + w, G, r1, buf);
        shift_block(f, (char *)a, esz, 0, SIDE_XMAX, w, 0, G, r1, buf);
    } else { /* whole rows, the x guards included (the corners) */
        shift_block(f, (char *)a, esz, 1, SIDE_YMIN, G, G + h, 0, 0, buf);
        shift_block(f, (char *)a, esz, 1, SIDE_YMAX, h, 0, 0, 0, buf);
    }
    free(buf);
}

void emf_guard_fill(const emf *f, float *a)
{
    emf_guard_axis(f, a, 0);
    emf_guard_axis(f, a, 1);
}

/* The guard block that shift_block received (at recv0, in buf + n) added into this rank's
 * cells at dst0 instead, and this rank's own guard block zeroed. */
static void fold_block(const emf *f, long long *a, int axis, int to, int send0, int dst0,
                       long long *buf)
{
    const int from = to ^ 1, G = EMF_GUARD;
    const size_t n = axis ? (size_t)G * f->stride : (size_t)G * f->rows;
    const int s = f->stride;
    for (size_t q = 0; q < n; q++) { /* pack this rank's guard block */
        size_t k = axis ? (size_t)send0 * s + q : (q / G) * s + send0 + q % G;
        buf[q] = a[k];
        a[k] = 0;
    }
    size_t got = comm_sendrecv(buf, n * sizeof *buf, f->nb[to], buf + n, n * sizeof *buf,
                               f->nb[from], 20 + to);
    if (got)
        for (size_t q = 0; q < n; q++) {
            size_t k = axis ? (size_t)dst0 * s + q : (q / G) * s + dst0 + q % G;
            fixed_add(&a[k], buf[n + q]);
        }
}

void emf_acc_fold(const emf *f, long long *a, int axis)
{
    const int G = EMF_GUARD, w = f->i1 - f->i0, h = f->j1 - f->j0;
    long long *buf = empic_alloc(2 * (size_t)G * (f->stride > f->rows ? f->stride : f->rows) *
                                     sizeof *buf, "guard exchange");
    if (axis == 0) { /* every row: the y guards' corners travel on */
        fold_block(f, a, 0, SIDE_XMIN, 0, w, buf);
        fold_block(f, a, 0, SIDE_XMAX, G + w, G, buf);
    } else { /* whole rows */
        fold_block(f, a, 1, SIDE_YMIN, 0, h, buf);
        fold_block(f, a, 1, SIDE_YMAX, G + h, G, buf);
    }
    free(buf);
}

void emf_acc_finish(const emf *f, long long *a, float *dst)
{
    emf_acc_fold(f, a, 0);
    emf_acc_fold(f, a, 1);
    const double inv = 1.0 / (double)f->acc_scale; /* a power of two: exact */
#pragma omp parallel for
    for (size_t k = 0; k < f->size; k++)
        dst[k] = (float)((double)a[k] * inv);
}

void emf_poisson(emf *f, const float *rho)
{
    const int nx = f->nx, ny = f->ny, nxh = nx / 2 + 1;
    if (f->bnd[SIDE_XMIN] != FBND_PERIODIC || f->bnd[SIDE_YMIN] != FBND_PERIODIC) {
        emf_zero(f, f->e[0]);
        emf_zero(f, f->e[1]);
        f->rho_bg = 0.0;
        return;
    }
    double *r = fftw_alloc_real((size_t)nx * ny);
    fftw_complex *c = fftw_alloc_complex((size_t)nxh * ny);
    if (!r || !c)
        EMPIC_DIE("out of memory for the initial Poisson solve");
    fftw_plan fwd = fftw_plan_dft_r2c_2d(ny, nx, r, c, FFTW_ESTIMATE);
    fftw_plan inv = fftw_plan_dft_c2r_2d(ny, nx, c, r, FFTW_ESTIMATE);
    /* rho of the whole box on every rank (each fills its cells: the sums are exact) */
    memset(r, 0, (size_t)nx * ny * sizeof *r);
    for (int j = f->j0; j < f->j1; j++)
        for (int i = f->i0; i < f->i1; i++)
            r[(size_t)j * nx + i] = rho[emf_idx(f, i, j)];
    comm_sum_double(r, (size_t)nx * ny);
    double mean = 0.0;
    for (size_t k = 0; k < (size_t)nx * ny; k++)
        mean += r[k];
    mean /= (double)nx * ny;
    fftw_execute(fwd);
    /* eigenvalues of the 5-point Laplacian that div(-grad) forms on the Yee mesh */
    for (int n = 0; n < ny; n++) {
        double sy = sin(M_PI * n / ny) * 2.0 / f->dy;
        for (int m = 0; m < nxh; m++) {
            double sx = sin(M_PI * m / nx) * 2.0 / f->dx, l = sx * sx + sy * sy;
            double scale = (m == 0 && n == 0) ? 0.0 : 1.0 / (l * (double)nx * ny);
            c[(size_t)n * nxh + m][0] *= scale;
            c[(size_t)n * nxh + m][1] *= scale;
        }
    }
    fftw_execute(inv); /* r = phi */
    for (int j = f->j0; j < f->j1; j++)
        for (int i = f->i0; i < f->i1; i++) {
            int ip = (i + 1) % nx, jp = (j + 1) % ny, k = emf_idx(f, i, j);
            double p = r[(size_t)j * nx + i];
            f->e[0][k] = (float)(-(r[(size_t)j * nx + ip] - p) / f->dx);
            f->e[1][k] = (float)(-(r[(size_t)jp * nx + i] - p) / f->dy);
        }
    emf_guard_fill(f, f->e[0]);
    emf_guard_fill(f, f->e[1]);
    f->rho_bg = mean;
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(inv);
    fftw_free(r);
    fftw_free(c);
}

/* Sums of |F|^2 per cluster (its cells row by row), exchanged (each rank fills its own
 * clusters' entries: the sums over ranks are exact), then added in cluster order. */
static double sum_squares(const emf *f, const clusters *cl, float *const a[3])
{
    double sum = 0.0, *part = empic_calloc((size_t)cl->n, sizeof(double), "energy sums");
#pragma omp parallel for schedule(dynamic)
    for (int c = 0; c < cl->n; c++) {
        if (!cl->own[c])
            continue;
        const int cx = c % cl->ncx, cy = c / cl->ncx;
        double r = 0.0;
        for (int j = cl->y0[cy]; j < cl->y0[cy + 1]; j++)
            for (int i = cl->x0[cx]; i < cl->x0[cx + 1]; i++)
                r += yee_square(a[0], a[1], a[2], emf_idx(f, i, j));
        part[c] = r;
    }
    comm_sum_double(part, (size_t)cl->n);
    for (int c = 0; c < cl->n; c++)
        sum += part[c];
    free(part);
    return yee_energy(sum, f->dx, f->dy);
}

double emf_energy_e(const emf *f, const clusters *cl) { return sum_squares(f, cl, f->e); }
double emf_energy_b(const emf *f, const clusters *cl) { return sum_squares(f, cl, f->b); }

double emf_gauss_max(const emf *f, const float *rho)
{
    const float idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    const int ilo = f->glo[0] > f->i0 ? f->glo[0] : f->i0, ihi = f->ghi[0] < f->i1 ? f->ghi[0] : f->i1;
    const int jlo = f->glo[1] > f->j0 ? f->glo[1] : f->j0, jhi = f->ghi[1] < f->j1 ? f->ghi[1] : f->j1;
    double m = 0.0;
#pragma omp parallel for reduction(max : m)
    for (int j = jlo; j < jhi; j++)
        for (int i = ilo; i < ihi; i++) {
            double g = yee_gauss_residual(f->e[0], f->e[1], rho, f->rho_bg, emf_idx(f, i, j),
                                          f->stride, idx, idy);
            m = g > m ? g : m;
        }
    comm_max_double(&m, 1);
    return m;
}
