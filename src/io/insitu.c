/* insitu.c - phase-space histograms and spectra computed in the run (insitu.h), and their
 * openPMD files OUTDIR/phasespace/ps%08T.h5.
 *
 * File layout (openPMD 1.1.0, file-based, basePath /data/%T/, meshesPath meshes/): one
 * scalar mesh per histogram, named <species>_<axis0>[_<axis1>] (log10_energy for a log
 * axis), float64 in C order [n1][n0] with axisLabels [axis1, axis0], gridSpacing the bin
 * widths, gridGlobalOffset the lower edges, position 0.5 (bin centres). The axes mix
 * lengths (c/w_p), momenta (m c) and energies (m_e c^2): gridUnitSI is 1 (normalised
 * units), the per-axis SI factors are in the attribute axisUnitSI (label order). */
#include "insitu.h"
#include "comm.h"
#include "empic.h"
#include "fileio.h"
#include "h5out.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int extent(sim *S, int s, const ps_grid *g, int axis, int positive, double mm[2])
{
    return S->be->phasespace_extent(S->be_ctx, &S->st, s, g, axis, positive, mm);
}

void insitu_grid(sim *S, const deck_phasespace *e, ps_grid *g)
{
    const deck *d = &S->d;
    memset(g, 0, sizeof *g);
    g->naxes = e->naxes;
    g->x0 = S->win.cells * d->dx;
    g->y0 = 0.0;
    g->dx = d->dx;
    g->dy = d->dy;
    g->m = d->species[e->species].mass;
    g->n[1] = 1;
    g->lo[1] = 0.0;
    g->scale[1] = 1.0;
    for (int a = 0; a < e->naxes; a++) {
        const int ax = e->axis[a];
        double lo, hi;
        g->axis[a] = ax;
        g->n[a] = e->bins[a];
        g->log[a] = e->log && ax == PSA_ENERGY;
        if (e->fixed[a]) {
            lo = e->range[a][0];
            hi = e->range[a][1];
        } else if (ax == PSA_X || ax == PSA_Y) {
            lo = ax == PSA_X ? g->x0 : g->y0;
            hi = lo + (ax == PSA_X ? d->nx * d->dx : d->ny * d->dy);
        } else {
            double mm[2];
            if (!extent(S, e->species, g, ax, g->log[a], mm)) {
                mm[0] = g->log[a] ? 1e-3 : -1.0;
                mm[1] = 1.0;
            }
            lo = mm[0];
            hi = mm[1];
            if (g->log[a]) {
                lo = log10(lo);
                hi = log10(hi);
            }
            double span = hi - lo;
            if (!(span > 0))
                span = fmax(fabs(lo), 1.0) * 1e-3;
            lo -= 0.5 * span / g->n[a];
            hi += 0.5 * span / g->n[a];
            if (ax == PSA_ENERGY && !g->log[a] && lo < 0)
                lo = 0.0;
            g->lo[a] = lo;
            g->scale[a] = g->n[a] / (hi - lo);
            continue;
        }
        if (g->log[a]) {
            lo = log10(lo);
            hi = log10(hi);
        }
        g->lo[a] = lo;
        g->scale[a] = g->n[a] / (hi - lo);
    }
}

/* ---- the file ---- */

static const char *axis_label(int axis, int logax)
{
    static const char *const names[PSA_COUNT] = {"x", "y", "ux", "uy", "uz", "energy"};
    return logax ? "log10_energy" : names[axis];
}

static double axis_unit_si(const out_units *u, int axis, int logax)
{
    if (logax)
        return 1.0;
    if (axis == PSA_X || axis == PSA_Y)
        return u->length;
    if (axis == PSA_ENERGY)
        return u->momentum * u->length / u->time; /* m_e c^2 */
    return u->momentum; /* per unit mass: u in m c */
}

static void write_mesh(h5w *w, hid_t meshes, sim *S, int k, const ps_grid *g, double *h,
                       const out_units *u)
{
    const deck *d = &S->d;
    const deck_phasespace *e = &d->phasespace[k];
    char name[DECK_NAME_MAX + 64], sname[DECK_NAME_MAX];
    h5out_safe_name(sname, sizeof sname, d->species[e->species].name);
    int len = snprintf(name, sizeof name, "%s", sname);
    for (int a = 0; a < g->naxes; a++)
        len += snprintf(name + len, sizeof name - (size_t)len, "_%s",
                        axis_label(g->axis[a], g->log[a]));
    for (int j = 0; j < k; j++) { /* the same species and axes twice: number the later */
        const deck_phasespace *o = &d->phasespace[j];
        if (o->species == e->species && o->naxes == e->naxes && o->axis[0] == e->axis[0] &&
            (e->naxes == 1 || o->axis[1] == e->axis[1]) && o->log == e->log) {
            snprintf(name + len, sizeof name - (size_t)len, "_%d", k);
            break;
        }
    }
    /* charge density in phase space: q w dx dy per unit bin volume (an ionizing species,
     * whose charge states differ: its ions' number density, q = 1) */
    double vol = 1.0;
    for (int a = 0; a < g->naxes; a++)
        vol /= g->scale[a];
    const deck_species *sp = &d->species[e->species];
    const double f = (sp->ionize ? 1.0 : sp->charge) * d->dx * d->dy / vol;
    const size_t nb = (size_t)g->n[0] * (size_t)g->n[1];
    for (size_t b = 0; b < nb; b++)
        h[b] *= f;
    const int r = g->naxes;
    hsize_t dims[2];
    const char *labels[2];
    double spacing[2], offset[2], unit[2], pos[2] = {0.5, 0.5};
    for (int a = 0; a < r; a++) { /* C order: the last axis first */
        int b = r - 1 - a;
        dims[a] = (hsize_t)g->n[b];
        labels[a] = axis_label(g->axis[b], g->log[b]);
        spacing[a] = 1.0 / g->scale[b];
        offset[a] = g->lo[b];
        unit[a] = axis_unit_si(u, g->axis[b], g->log[b]);
    }
    hid_t ds = h5out_dataset(w, meshes, name, r, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, h);
    int moment = 0;
    for (int a = 0; a < r; a++)
        moment |= g->axis[a] >= PSA_UX;
    h5out_attr_str(w, ds, "geometry", "cartesian");
    h5out_attr_str(w, ds, "dataOrder", "C");
    h5out_attr_strs(w, ds, "axisLabels", r, labels);
    h5out_attr_f64v(w, ds, "gridSpacing", r, spacing);
    h5out_attr_f64v(w, ds, "gridGlobalOffset", r, offset);
    h5out_attr_f64(w, ds, "gridUnitSI", 1.0);
    h5out_attr_f64v(w, ds, "axisUnitSI", r, unit);
    h5out_attr_f64v(w, ds, "position", r, pos);
    h5out_attr_f64v(w, ds, "unitDimension", 7, H5OUT_DIM_NONE);
    h5out_attr_f64(w, ds, "unitSI", 1.0);
    h5out_attr_f64(w, ds, "timeOffset", moment ? -0.5 * d->dt : 0.0);
    h5out_attr_str(w, ds, "species", d->species[e->species].name);
    h5out_attr_str(w, ds, "normalization", "charge density in phase space: q sum(w dx dy) "
                   "per bin volume (bin volume = product of gridSpacing)");
    h5out_close(ds, H5Dclose);
}

/* The histograms h (NULL where not due) into OUTDIR/phasespace/ps%08T.h5. */
static int write_file(sim *S, const ps_grid *g, double *const *h)
{
    const deck *d = &S->d;
    char dir[OUT_PATH], path[OUT_PATH + 64];
    snprintf(dir, sizeof dir, "%s/phasespace", d->output);
    if (fileio_mkdir_p(dir, "phase-space folder"))
        return -1;
    snprintf(path, sizeof path, "%s/ps%08ld.h5", dir, S->step);
    out_units u;
    h5out_units(d->n0, &u);
    h5w *w = empic_calloc(1, sizeof *w, "output writer");
    w->file = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (h5out_create(w, path) == 0) {
        h5out_root_attrs(w, "ps%08T.h5", 1, 0, d->name);
        hid_t data, it = h5out_iteration(w, &data, S->step, S->step * d->dt, d->dt, u.time);
        hid_t meshes = h5out_group(w, it, "meshes");
        for (int k = 0; k < d->nphasespace && !w->err; k++)
            if (h[k])
                write_mesh(w, meshes, S, k, &g[k], h[k], &u);
        h5out_close(meshes, H5Gclose);
        h5out_close(it, H5Gclose);
        h5out_close(data, H5Gclose);
    }
    int rc = h5out_commit(w, path, "phase-space file");
    free(w);
    return rc;
}

int insitu_phasespace(sim *S, int final)
{
    const deck *d = &S->d;
    int any = 0;
    ps_grid g[DECK_MAX_PHASESPACE];
    double *h[DECK_MAX_PHASESPACE] = {NULL};
    /* the histograms first, on every rank (sums over the ranks); rank 0 writes them */
    for (int k = 0; k < d->nphasespace; k++) {
        long ev = d->phasespace[k].every;
        if (!(ev > 0 && (final || S->step % ev == 0)))
            continue;
        insitu_grid(S, &d->phasespace[k], &g[k]);
        h[k] = empic_alloc((size_t)g[k].n[0] * g[k].n[1] * sizeof(double), "histogram");
        S->be->phasespace(S->be_ctx, &S->st, d->phasespace[k].species, &g[k], h[k]);
        any = 1;
    }
    int rc = 0;
    if (any && comm_rank() == 0)
        rc = write_file(S, g, h);
    for (int k = 0; k < d->nphasespace; k++)
        free(h[k]);
    return rc;
}
