/* cpu_fields.c - the Yee updates, the current's finish and the filter on the CPU (OpenMP
 * over rows of this rank's cells; cuda/gpu_fields.cu is the device's twin). */
#include "cpu_fields.h"
#include "empic.h"
#include "yee.h"

#include <string.h>

void fields_b_half(emf *f, int wide)
{
    const int s = f->stride, g = wide ? EMF_GUARD : 0;
    const float hx = (float)(0.5 * f->dt / f->dx), hy = (float)(0.5 * f->dt / f->dy);
#pragma omp parallel for
    for (int j = f->j0 - g; j < f->j1 + g - (g > 0); j++)
        for (int i = f->i0 - g; i < f->i1 + g - (g > 0); i++)
            yee_b_cell(f->b[0], f->b[1], f->b[2], f->e[0], f->e[1], f->e[2], emf_idx(f, i, j),
                       s, hx, hy);
}

void fields_e_advance(emf *f)
{
    const int s = f->stride;
    const float dt = (float)f->dt, cx = (float)(f->dt / f->dx), cy = (float)(f->dt / f->dy);
#pragma omp parallel for
    for (int j = f->j0; j < f->j1; j++)
        for (int i = f->i0; i < f->i1; i++)
            yee_e_cell(f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2], f->j[0], f->j[1],
                       f->j[2], emf_idx(f, i, j), s, dt, cx, cy);
}

/* One 3-point pass along x (d = 1) or y (d = stride), then refresh guards. */
static void filter_pass(emf *f, float *a, int d, float wa, float wb)
{
#pragma omp parallel for
    for (int j = f->j0; j < f->j1; j++)
        for (int i = f->i0; i < f->i1; i++) {
            int k = emf_idx(f, i, j);
            f->tmp[k] = filter_3pt(a, k, d, wa, wb);
        }
#pragma omp parallel for
    for (int j = f->j0; j < f->j1; j++)
        memcpy(a + emf_idx(f, f->i0, j), f->tmp + emf_idx(f, f->i0, j),
               (size_t)(f->i1 - f->i0) * sizeof(float));
    emf_guard_fill(f, a);
}

void fields_filter(emf *f, float *a)
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

void fields_current_finish(emf *f)
{
    for (int c = 0; c < 3; c++) {
        emf_acc_finish(f, f->acc + c * f->size, f->j[c]);
        fields_filter(f, f->j[c]);
    }
}
