/* fieldavg.c - the windows and means of the time-averaged field dumps (fieldavg.h). */
#include "fieldavg.h"
#include "average.h"
#include "empic.h"

long fieldavg_window(const deck *d, long k)
{
    if (d->avg_every <= 0 || k <= 0)
        return 0;
    const long n = (k + d->avg_every - 1) / d->avg_every * d->avg_every;
    return k > n - d->avg_steps ? n : 0;
}

long fieldavg_held(const deck *d, long k)
{
    const long n = fieldavg_window(d, k);
    return n ? k - (n - d->avg_steps + 1) : 0;
}

int fieldavg_due(const deck *d, long k) { return fieldavg_window(d, k) == k && k > 0; }

void fieldavg_sample(sim *S)
{
    const long n = fieldavg_window(&S->d, S->step);
    if (n)
        S->be->avg_add(S->be_ctx, &S->st, S->step == n - S->d.avg_steps + 1);
}

float *fieldavg_means(sim *S)
{
    const size_t len = (size_t)avg_arrays(S->st.avg_q) * S->f.size;
    S->be->avg_fetch(S->be_ctx, &S->st);
    if (!S->avg_dump)
        S->avg_dump = empic_alloc(len * sizeof(float), "averaged field dumps");
    const double m = (double)S->d.avg_steps;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < len; k++)
        S->avg_dump[k] = (float)(S->st.avg[k] / m);
    return S->avg_dump;
}
