/* emf.c - Yee field solver, guard cells, current folding and filtering, initial Poisson
 * solve and field diagnostics on the CPU (OpenMP over rows). */
#include "emf.h"
#include "deck.h"
#include "empic.h"
#include "yee.h"

#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void emf_init(emf *f, const deck *d)
{
    memset(f, 0, sizeof *f);
    f->nx = d->nx;
    f->ny = d->ny;
    f->stride = d->nx + 2 * EMF_GUARD;
    f->rows = d->ny + 2 * EMF_GUARD;
    f->size = (size_t)f->stride * f->rows;
    f->off = EMF_GUARD + EMF_GUARD * f->stride;
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
    memset(f, 0, sizeof *f);
}

void emf_zero(const emf *f, float *a)
{
    memset(a, 0, f->size * sizeof(float));
}

/* Guard cells [i0, i1) of row j filled as yee_guard_source says. */
static void fill_cells(const emf *f, float *o, int j, int i0, int i1)
{
    const int px = f->bnd[SIDE_XMIN] == FBND_PERIODIC, py = f->bnd[SIDE_YMIN] == FBND_PERIODIC;
    for (int i = i0; i < i1; i++) {
        int si, sj;
        if (yee_guard_source(i, j, f->nx, f->ny, px, py, &si, &sj))
            o[i + j * f->stride] = o[si + sj * f->stride];
    }
}

void emf_guard_fill(const emf *f, float *a)
{
    const int G = EMF_GUARD, nx = f->nx, ny = f->ny;
    if (f->bnd[SIDE_XMIN] != FBND_PERIODIC && f->bnd[SIDE_YMIN] != FBND_PERIODIC)
        return;
    float *o = a + f->off;
#pragma omp parallel for
    for (int j = -G; j < ny + G; j++) {
        if (j < 0 || j >= ny) {
            fill_cells(f, o, j, -G, nx + G);
        } else {
            fill_cells(f, o, j, -G, 0);
            fill_cells(f, o, j, nx, nx + G);
        }
    }
}

/* Interior cells [i0, i1) of row j folded (yee_guard_fold). */
static void fold_cells(const emf *f, float *o, int j, int i0, int i1)
{
    const int px = f->bnd[SIDE_XMIN] == FBND_PERIODIC, py = f->bnd[SIDE_YMIN] == FBND_PERIODIC;
    for (int i = i0; i < i1; i++)
        o[i + j * f->stride] =
            yee_guard_fold(o, i, j, f->stride, f->nx, f->ny, EMF_GUARD, px, py);
}

void emf_guard_fold(const emf *f, float *a)
{
    const int G = EMF_GUARD, nx = f->nx, ny = f->ny, s = f->stride;
    float *o = a + f->off;
#pragma omp parallel for
    for (int j = 0; j < ny; j++) {
        if (j < G || j >= ny - G) {
            fold_cells(f, o, j, 0, nx);
        } else {
            fold_cells(f, o, j, 0, G);
            fold_cells(f, o, j, nx - G > G ? nx - G : G, nx);
        }
    }
#pragma omp parallel for
    for (int j = -G; j < ny + G; j++) {
        if (j < 0 || j >= ny) {
            memset(o + j * s - G, 0, (size_t)s * sizeof(float));
        } else {
            memset(o + j * s - G, 0, (size_t)G * sizeof(float));
            memset(o + j * s + nx, 0, (size_t)G * sizeof(float));
        }
    }
}

void emf_b_half(emf *f)
{
    const int s = f->stride;
    const float hx = (float)(0.5 * f->dt / f->dx), hy = (float)(0.5 * f->dt / f->dy);
#pragma omp parallel for
    for (int j = 0; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++)
            yee_b_cell(f->b[0], f->b[1], f->b[2], f->e[0], f->e[1], f->e[2], emf_idx(f, i, j),
                       s, hx, hy);
}

void emf_e_advance(emf *f)
{
    const int s = f->stride;
    const float dt = (float)f->dt, cx = (float)(f->dt / f->dx), cy = (float)(f->dt / f->dy);
#pragma omp parallel for
    for (int j = 0; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++)
            yee_e_cell(f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2], f->j[0], f->j[1],
                       f->j[2], emf_idx(f, i, j), s, dt, cx, cy);
}

/* One 3-point pass along x (d = 1) or y (d = stride), then refresh guards. */
static void filter_pass(emf *f, float *a, int d, float wa, float wb)
{
    const int s = f->stride;
#pragma omp parallel for
    for (int j = 0; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++) {
            int k = emf_idx(f, i, j);
            f->tmp[k] = filter_3pt(a, k, d, wa, wb);
        }
#pragma omp parallel for
    for (int j = 0; j < f->ny; j++)
        memcpy(a + emf_idx(f, 0, j), f->tmp + emf_idx(f, 0, j), (size_t)f->nx * sizeof(float));
    (void)s;
    emf_guard_fill(f, a);
}

void emf_filter(emf *f, float *a)
{
    const int np = filter_pass_count(f->filter_passes, f->filter_compensate);
    if (np == 0)
        return;
    emf_guard_fill(f, a);
    for (int dir = 0; dir < 2; dir++)
        for (int p = 0; p < np; p++) {
            float wa, wb;
            filter_weights(f->filter_passes, p, &wa, &wb);
            filter_pass(f, a, dir ? f->stride : 1, wa, wb);
        }
}

void emf_current_finish(emf *f)
{
    for (int c = 0; c < 3; c++) {
        emf_guard_fold(f, f->j[c]);
        emf_filter(f, f->j[c]);
    }
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
    double mean = 0.0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
            mean += r[(size_t)j * nx + i] = rho[emf_idx(f, i, j)];
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
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
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

/* Row sums, then the rows in order: the same double for any thread count. */
static double sum_squares(const emf *f, float *const a[3])
{
    double sum = 0.0, *row = empic_alloc((size_t)f->ny * sizeof(double), "energy rows");
#pragma omp parallel for
    for (int j = 0; j < f->ny; j++) {
        double r = 0.0;
        for (int i = 0; i < f->nx; i++)
            r += yee_square(a[0], a[1], a[2], emf_idx(f, i, j));
        row[j] = r;
    }
    for (int j = 0; j < f->ny; j++)
        sum += row[j];
    free(row);
    return yee_energy(sum, f->dx, f->dy);
}

double emf_energy_e(const emf *f) { return sum_squares(f, f->e); }
double emf_energy_b(const emf *f) { return sum_squares(f, f->b); }

double emf_gauss_max(const emf *f, const float *rho)
{
    const float idx = (float)(1.0 / f->dx), idy = (float)(1.0 / f->dy);
    double m = 0.0;
#pragma omp parallel for reduction(max : m)
    for (int j = f->glo[1]; j < f->ghi[1]; j++)
        for (int i = f->glo[0]; i < f->ghi[0]; i++) {
            double g = yee_gauss_residual(f->e[0], f->e[1], rho, f->rho_bg, emf_idx(f, i, j),
                                          f->stride, idx, idy);
            m = g > m ? g : m;
        }
    return m;
}
