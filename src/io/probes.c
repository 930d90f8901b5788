/* probes.c - field probes (probes.h): requests, sampling through the backend, the ranks'
 * sum and the appended HDF5 file OUTDIR/probes/probes.h5.
 *
 * File layout (rank 0 writes it; the root carries software, softwareVersion, date, comment
 * (the run's name), n0 and the SI units of time and length):
 *   /<name>/            a probe: attributes kind ("point" or "line"), from, to (c/omega_p),
 *                       n, every, fields (the quantities recorded)
 *     x, y              float64 [n]: the points, c/omega_p in the box (unitSI: metres)
 *     step              int64 [samples]: the steps sampled
 *     time              float64 [samples]: step dt, in 1/omega_p (unitSI: seconds)
 *     Ex .. rho         float32 [samples] (a point) or [samples][n] (a line), in the
 *                       normalised units of the dumps (unitSI, unit, timeOffset: -dt/2
 *                       for J, 0 else)
 * Every growing dataset is chunked with an unlimited first dimension and Fletcher-32. */
#include "probes.h"
#include "comm.h"
#include "sim_state.h"
#include "writer.h"
#include "empic.h"
#include "fileio.h"
#include "h5out.h"
#include "version.h"

#include <hdf5.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The samples of one probe held in memory until written (rank 0). */
typedef struct {
    long *step;
    float *v;    /* [row][field k][point] */
    int rows, cap;
} probe_rows;

typedef struct probes {
    int nreq;            /* this rank's requests, all probes */
    probe_req *req;
    int *slot;           /* the value each fills in its probe's block (field k * n + point) */
    int *owner;          /* the probe of each request */
    int nf[DECK_MAX_PROBES], fm[DECK_MAX_PROBES][PROBE_COUNT]; /* the probe's quantities */
    int need[DECK_MAX_PROBES]; /* PROBE_NEED_* of the probe's quantities */
    probe_req *due_req;  /* the requests of the probes due now */
    float *due_out;
    double *vals;        /* one probe's block of values (the ranks' sum) */
    probe_rows rows[DECK_MAX_PROBES];
    int held;            /* rows held on rank 0, all probes */
    double written_at;   /* wall clock of the last write (omp_get_wtime) */
    char path[DECK_PATH_MAX + 32];
} probes;

/* Samples wait in memory on rank 0 until PROBES_EVERY_S seconds have passed since the last
 * write (an open, append and close per step cost a vacuum laser run 7 % of its time), and
 * while a background dump holds HDF5, until PROBES_HOLD of them wait: then the run waits
 * for that dump and writes. Checkpoints and the end of the run write them all. */
#define PROBES_HOLD 1024
#define PROBES_EVERY_S 1.0

/* Point q of probe p, in c/omega_p. */
static void point(const deck_probe *p, int q, double *x, double *y)
{
    const double s = p->n > 1 ? (double)q / (p->n - 1) : 0.0;
    *x = p->x0 + s * (p->x1 - p->x0);
    *y = p->y0 + s * (p->y1 - p->y0);
}

/* The cell (i, j) of a point and the offset in it, as a particle there holds them. */
static void cell_of(const emf *f, double x, double y, int *i, int *j, float *fx, float *fy)
{
    const double u = x / f->dx, v = y / f->dy;
    *i = (int)floor(u);
    *j = (int)floor(v);
    *fx = (float)(u - *i);
    *fy = (float)(v - *j);
    if (*fx >= 1.0f) /* rounding up to the next cell's edge */
        *fx = nextafterf(1.0f, 0.0f);
    if (*fy >= 1.0f)
        *fy = nextafterf(1.0f, 0.0f);
}

/* ---- the file ---- */

static void probe_units(int m, const out_units *u, double *si, const char **norm,
                        const char **si_name)
{
    if (m < PROBE_BX)
        *si = u->e, *norm = "m_e c omega_p / e", *si_name = "V/m";
    else if (m < PROBE_JX)
        *si = u->b, *norm = "m_e omega_p / e", *si_name = "T";
    else if (m < PROBE_RHO)
        *si = u->j, *norm = "e n0 c", *si_name = "A/m^2";
    else
        *si = u->rho, *norm = "e n0", *si_name = "C/m^3";
}

/* Dataset `name` of g grown by `rows` rows of `cols` values (rank 1 when cols == 0) from
 * buf, made (chunked, unlimited, checksummed) when missing; *made says so. Returns it open. */
static hid_t append(h5w *w, hid_t g, const char *name, hsize_t cols, hid_t ftype, hid_t mtype,
                    const void *buf, hsize_t rows, int *made)
{
    *made = 0;
    if (w->err)
        return -1;
    const int rank = cols ? 2 : 1;
    const hsize_t c = cols ? cols : 1;
    hid_t d;
    if (H5Lexists(g, name, H5P_DEFAULT) > 0) {
        d = H5Dopen2(g, name, H5P_DEFAULT);
    } else {
        hsize_t dims[2] = {0, c}, maxd[2] = {H5S_UNLIMITED, c};
        hsize_t chunk[2] = {16384 / c > 0 ? 16384 / c : 1, c};
        if (chunk[0] > 1024)
            chunk[0] = 1024;
        hid_t sp = H5Screate_simple(rank, dims, maxd), pl = H5Pcreate(H5P_DATASET_CREATE);
        d = sp < 0 || pl < 0 || H5Pset_chunk(pl, rank, chunk) < 0 || H5Pset_fletcher32(pl) < 0
                ? -1
                : H5Dcreate2(g, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
        h5out_close(sp, H5Sclose);
        h5out_close(pl, H5Pclose);
        *made = d >= 0;
    }
    if (d < 0) {
        h5out_fail(w, name);
        return -1;
    }
    hsize_t dims[2];
    hid_t fs = H5Dget_space(d);
    int ok = fs >= 0 && H5Sget_simple_extent_dims(fs, dims, NULL) == rank;
    h5out_close(fs, H5Sclose);
    hsize_t start[2] = {ok ? dims[0] : 0, 0}, count[2] = {rows, c};
    dims[0] = start[0] + rows;
    dims[1] = c;
    hid_t ms = H5Screate_simple(rank, count, NULL);
    ok = ok && ms >= 0 && H5Dset_extent(d, dims) >= 0 && (fs = H5Dget_space(d)) >= 0;
    ok = ok && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
         H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf) >= 0;
    if (ok)
        h5out_close(fs, H5Sclose);
    h5out_close(ms, H5Sclose);
    if (!ok)
        h5out_fail(w, name);
    return d;
}

/* The probe's group with its fixed content (made at its first samples). */
static hid_t probe_group(h5w *w, hid_t file, const deck *d, const probes *P, int p,
                         const out_units *u)
{
    const deck_probe *pr = &d->probes[p];
    char name[DECK_NAME_MAX];
    deck_output_name(name, sizeof name, pr->name);
    if (H5Lexists(file, name, H5P_DEFAULT) > 0) {
        hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
        if (g < 0)
            h5out_fail(w, name);
        return g;
    }
    hid_t g = h5out_group(w, file, name);
    h5out_attr_str(w, g, "kind", pr->line ? "line" : "point");
    const double from[2] = {pr->x0, pr->y0}, to[2] = {pr->x1, pr->y1};
    h5out_attr_f64v(w, g, "from", 2, from);
    h5out_attr_f64v(w, g, "to", 2, to);
    h5out_attr_u32(w, g, "n", (uint32_t)pr->n);
    h5out_attr_u32(w, g, "every", (uint32_t)(pr->every < 0xffffffffL ? pr->every : 0xffffffffL));
    const char *names[PROBE_COUNT];
    for (int k = 0; k < P->nf[p]; k++)
        names[k] = DECK_PROBE_FIELDS[P->fm[p][k]];
    h5out_attr_strs(w, g, "fields", P->nf[p], names);
    double *xy = empic_alloc(2 * (size_t)pr->n * sizeof(double), "probe positions");
    for (int q = 0; q < pr->n; q++)
        point(pr, q, &xy[q], &xy[pr->n + q]);
    hsize_t n = (hsize_t)pr->n;
    for (int a = 0; a < 2; a++) {
        hid_t ds = h5out_dataset(w, g, a ? "y" : "x", 1, &n, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                                 xy + a * pr->n);
        h5out_attr_f64(w, ds, "unitSI", u->length);
        h5out_close(ds, H5Dclose);
    }
    free(xy);
    return g;
}

/* Append the held rows of every probe to the file (made with its root attributes when
 * missing), then close it. */
static int write_rows(sim *S)
{
    probes *P = S->probes;
    if (!P || P->held == 0)
        return 0;
    const deck *d = &S->d;
    out_units u;
    h5out_units(d->n0, &u);
    h5w *w = empic_calloc(1, sizeof *w, "probes writer");
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char dir[DECK_PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/probes", d->output);
    if (fileio_mkdir_p(dir, "probes folder")) {
        free(w);
        return -1;
    }
    if (access(P->path, F_OK) == 0) {
        w->file = H5Fopen(P->path, H5F_ACC_RDWR, H5P_DEFAULT);
        if (w->file < 0)
            h5out_fail(w, "opening the file for appending");
    } else {
        w->file = H5Fcreate(P->path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        if (w->file < 0)
            h5out_fail(w, "file creation");
        h5out_attr_str(w, w->file, "software", "empic");
        h5out_attr_str(w, w->file, "softwareVersion", empic_version_string());
        h5out_attr_str(w, w->file, "comment", d->name);
        h5out_attr_f64(w, w->file, "n0", d->n0);
        h5out_attr_f64(w, w->file, "timeUnitSI", u.time);
        h5out_attr_f64(w, w->file, "lengthUnitSI", u.length);
        h5out_attr_f64(w, w->file, "dt", d->dt);
    }
    for (int p = 0; p < d->nprobes && !w->err; p++) {
        probe_rows *r = &P->rows[p];
        if (!r->rows)
            continue;
        const deck_probe *pr = &d->probes[p];
        hid_t g = probe_group(w, w->file, d, P, p, &u);
        const hsize_t rows = (hsize_t)r->rows, n = (hsize_t)pr->n;
        int made;
        hid_t ds = append(w, g, "step", 0, H5T_STD_I64LE, H5T_NATIVE_LONG, r->step, rows, &made);
        h5out_close(ds, H5Dclose);
        double *t = empic_alloc(rows * sizeof(double) + 1, "probe times");
        for (hsize_t k = 0; k < rows; k++)
            t[k] = r->step[k] * d->dt;
        ds = append(w, g, "time", 0, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, t, rows, &made);
        if (made)
            h5out_attr_f64(w, ds, "unitSI", u.time);
        h5out_close(ds, H5Dclose);
        free(t);
        /* one quantity's rows out of the [row][field][point] block */
        float *v = empic_alloc(rows * n * sizeof(float), "probe values");
        for (int k = 0; k < P->nf[p] && !w->err; k++) {
            const int m = P->fm[p][k];
            for (hsize_t row = 0; row < rows; row++)
                memcpy(v + row * n, r->v + (row * (hsize_t)P->nf[p] + (hsize_t)k) * n,
                       n * sizeof(float));
            ds = append(w, g, DECK_PROBE_FIELDS[m], pr->line ? n : 0, H5T_IEEE_F32LE,
                        H5T_NATIVE_FLOAT, v, rows, &made);
            if (made) {
                double si;
                const char *norm, *si_name;
                char unit[128];
                probe_units(m, &u, &si, &norm, &si_name);
                snprintf(unit, sizeof unit, "%s = %.6g %s", norm, si, si_name);
                h5out_attr_f64(w, ds, "unitSI", si);
                h5out_attr_str(w, ds, "unit", unit);
                h5out_attr_f64(w, ds, "timeOffset",
                               m >= PROBE_JX && m < PROBE_RHO ? -0.5 * d->dt : 0.0);
            }
            h5out_close(ds, H5Dclose);
        }
        free(v);
        h5out_close(g, H5Gclose);
        if (!w->err) {
            P->held -= r->rows;
            r->rows = 0;
        }
    }
    if (w->file >= 0 && !w->err && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0)
        h5out_fail(w, "flushing the file");
    if (w->file >= 0 && H5Fclose(w->file) < 0)
        h5out_fail(w, "file close");
    int rc = 0;
    if (w->err) {
        empic_report(P->path, 0, "HDF5 error at %s; probe samples not written", w->what);
        rc = -1;
    }
    free(w);
    return rc;
}

/* Drop the samples at and after step `first` from every probe of an existing file. */
static herr_t trim_probe(hid_t file, const char *name, const H5L_info_t *info, void *arg)
{
    (void)info;
    const long first = *(const long *)arg;
    hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = 0;
    if (H5Lexists(g, "step", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(g, "step", H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
        hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
        long *steps = n >= 0 ? malloc((size_t)n * sizeof(long) + 1) : NULL;
        rc = !steps || H5Dread(d, H5T_NATIVE_LONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps) < 0;
        hsize_t keep = 0;
        while (!rc && keep < (hsize_t)n && steps[keep] < first)
            keep++;
        free(steps);
        h5out_close(sp, H5Sclose);
        h5out_close(d, H5Dclose);
        static const char *const grown[] = {"step", "time", "Ex", "Ey", "Ez", "Bx", "By",
                                            "Bz", "Jx", "Jy", "Jz", "rho", NULL};
        for (int k = 0; !rc && grown[k]; k++) {
            if (H5Lexists(g, grown[k], H5P_DEFAULT) <= 0)
                continue;
            d = H5Dopen2(g, grown[k], H5P_DEFAULT);
            sp = d < 0 ? -1 : H5Dget_space(d);
            hsize_t dims[2] = {0, 0};
            rc = sp < 0 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0;
            dims[0] = keep;
            rc = rc || H5Dset_extent(d, dims) < 0;
            h5out_close(sp, H5Sclose);
            h5out_close(d, H5Dclose);
        }
    }
    H5Gclose(g);
    return rc ? -1 : 0;
}

/* Every probe's samples from step first on. */
static int probes_trim(hid_t file, long first)
{
    return H5Literate(file, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, trim_probe, &first) < 0;
}

/* ---- requests and samples ---- */

int probes_open(sim *S, int restart)
{
    const deck *d = &S->d;
    if (d->nprobes == 0)
        return 0;
    probes *P = empic_calloc(1, sizeof *P, "probes");
    S->probes = P;
    snprintf(P->path, sizeof P->path, "%s/probes/probes.h5", d->output);
    int total = 0, most = 0;
    for (int p = 0; p < d->nprobes; p++) {
        const deck_probe *pr = &d->probes[p];
        for (int m = 0; m < PROBE_COUNT; m++)
            if ((pr->fields >> m) & 1)
                P->fm[p][P->nf[p]++] = m;
        P->need[p] = ((pr->fields >> PROBE_RHO) & 1 ? PROBE_NEED_RHO : 0) |
                     (pr->fields & (7 << PROBE_JX) ? PROBE_NEED_J : 0);
        total += P->nf[p] * pr->n;
        most = P->nf[p] * pr->n > most ? P->nf[p] * pr->n : most;
    }
    P->written_at = omp_get_wtime();
    P->req = empic_alloc((size_t)total * sizeof *P->req, "probes");
    P->slot = empic_alloc((size_t)total * sizeof *P->slot, "probes");
    P->owner = empic_alloc((size_t)total * sizeof *P->owner, "probes");
    P->due_req = empic_alloc((size_t)total * sizeof *P->due_req, "probes");
    P->due_out = empic_alloc((size_t)total * sizeof *P->due_out, "probes");
    P->vals = empic_alloc((size_t)most * sizeof *P->vals, "probes");
    probes_share(S);
    if (comm_rank() != 0)
        return 0;
    return h5out_continue(P->path, "probes", S->step, restart, probes_trim);
}

void probes_share(sim *S)
{
    probes *P = S->probes;
    const deck *d = &S->d;
    const emf *f = &S->f;
    if (!P)
        return;
    P->nreq = 0;
    for (int p = 0; p < d->nprobes; p++) {
        const deck_probe *pr = &d->probes[p];
        for (int q = 0; q < pr->n; q++) {
            double x, y;
            int i, j;
            float fx, fy;
            point(pr, q, &x, &y);
            cell_of(f, x, y, &i, &j, &fx, &fy);
            if (!emf_owns(f, i, j))
                continue;
            for (int k = 0; k < P->nf[p]; k++) {
                P->req[P->nreq] = (probe_req){emf_idx(f, i, j), P->fm[p][k], fx, fy};
                P->slot[P->nreq] = k * pr->n + q;
                P->owner[P->nreq++] = p;
            }
        }
    }
}

static void hold(probes *P, int p, long step, int nv, const double *vals)
{
    probe_rows *r = &P->rows[p];
    if (r->rows == r->cap) {
        r->cap = 2 * r->cap + 16;
        r->step = realloc(r->step, (size_t)r->cap * sizeof *r->step);
        r->v = realloc(r->v, (size_t)r->cap * (size_t)nv * sizeof *r->v);
        if (!r->step || !r->v)
            EMPIC_DIE("out of host memory holding probe samples");
    }
    r->step[r->rows] = step;
    float *v = r->v + (size_t)r->rows * (size_t)nv;
    for (int k = 0; k < nv; k++)
        v[k] = (float)vals[k];
    r->rows++;
    P->held++;
}

void probes_sample(sim *S)
{
    probes *P = S->probes;
    const deck *d = &S->d;
    if (!P)
        return;
    int due = 0, need = 0, n = 0;
    for (int p = 0; p < d->nprobes; p++)
        if (S->step % d->probes[p].every == 0) {
            due |= 1 << p;
            need |= P->need[p];
        }
    if (!due)
        return;
    for (int r = 0; r < P->nreq; r++)
        if ((due >> P->owner[r]) & 1)
            P->due_req[n++] = P->req[r];
    S->be->probe(S->be_ctx, &S->st, need, n, P->due_req, P->due_out);
    /* the values in each probe's block (this rank's points; 0 elsewhere), the uniform
     * external fields added as the particle gather adds them (the backend added their
     * arrays), summed over the ranks */
    int r = 0;
    for (int p = 0; p < d->nprobes; p++) {
        if (!((due >> p) & 1))
            continue;
        const int nv = P->nf[p] * d->probes[p].n;
        memset(P->vals, 0, (size_t)nv * sizeof *P->vals);
        for (int k = 0; k < P->nreq; k++) {
            if (P->owner[k] != p)
                continue;
            const int m = P->req[k].m;
            float v = P->due_out[r++];
            if (m < PROBE_JX)
                v = v + S->st.ext.u[m];
            P->vals[P->slot[k]] = v;
        }
        comm_sum_double(P->vals, (size_t)nv);
        for (int k = 0; k < nv; k++) /* -0 is +0 after a sum with other ranks' zeros */
            P->vals[k] = P->vals[k] == 0.0 ? 0.0 : P->vals[k];
        if (comm_rank() == 0)
            hold(P, p, S->step, nv, P->vals);
    }
    if (comm_rank() != 0)
        return;
    const double now = omp_get_wtime();
    if (P->held < PROBES_HOLD && now - P->written_at < PROBES_EVERY_S)
        return;
    /* HDF5 is used by one thread at a time: a background dump writer first */
    if (writer_poll(&S->out))
        S->io_failed = 1;
    if (S->out.busy && P->held < PROBES_HOLD)
        return;
    if (writer_wait(&S->out)) /* the dump writer's work first */
        S->io_failed = 1;
    if (write_rows(S))
        S->io_failed = 1;
    P->written_at = now;
}

int probes_flush(sim *S)
{
    if (!S->probes || comm_rank() != 0)
        return 0;
    if (writer_wait(&S->out)) /* the dump writer's work first */
        S->io_failed = 1;
    return write_rows(S);
}

void probes_free(sim *S)
{
    probes *P = S->probes;
    if (!P)
        return;
    for (int p = 0; p < DECK_MAX_PROBES; p++) {
        free(P->rows[p].step);
        free(P->rows[p].v);
    }
    free(P->req);
    free(P->slot);
    free(P->owner);
    free(P->due_req);
    free(P->due_out);
    free(P->vals);
    free(P);
    S->probes = NULL;
}
