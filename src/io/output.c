/* output.c - openPMD 1.1.0 HDF5 dumps (design.md §9) with their XDMF descriptions.
 *
 * One file per dump, data/data%08T.h5, file-based iteration encoding. Mesh records hold the
 * interior cells as float32 [ny][nx] in normalised units with unitSI factors from n0; each
 * component's `position` is its Yee offset (§3) in (y, x) order. Particle records hold a
 * deterministic sample of each selected species within the region/energy selection (or, in
 * the tracks file tracks/tracks.h5, one group-based openPMD series per run with a group
 * /data/<step> per tracks step, every tracked particle):
 *   position/x,y   float64, absolute, in c/ω_p (positionOffset: constant zeros)
 *   momentum/x,y,z float32, p = m u in m_e c per real particle (macroWeighted 0,
 *                  weightingPower 1), at t - dt/2 (timeOffset)
 *   weighting      float64, real particles per macro-particle per metre in z (unitSI 1):
 *                  w dx dy n0 (c/ω_p)^2 = w dx dy / (4π r_e)
 *   charge, mass   constant records, per real particle, in e and m_e; for an ionizing
 *                  species charge is per particle (float64) and charge_state (uint8) its
 *                  charge state
 *   id             uint64 tracking id (0: untracked), for a species of diagnostics.tracks
 *   particlePatches one patch per cluster (the sample is written cluster by cluster).
 * Every dump goes to a temporary name first and is renamed when complete; the tracks file is
 * appended to in place and closed after each step. */
#include "output.h"
#include "comm.h"
#include "deck.h"
#include "empic.h"
#include "extfield.h"
#include "fileio.h"
#include "h5out.h"
#include "phasespace.h"
#include "xdmf.h"

#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* File series of a frame: "data" (meshes and particle samples) or "tracks". */
static const char *series(const output_frame *fr) { return fr->tracks ? "tracks" : "data"; }

/* ---- meshes ---- */

/* The attributes of a mesh record; an averaged one (fieldavg.h) also has averageSteps,
 * and its timeOffset is that of the middle of the steps it averages. */
static void mesh_record_attrs(h5w *w, hid_t rec, const output_frame *fr, const out_units *u,
                              const double dim[7], double time_offset, int averaged)
{
    if (averaged) {
        h5out_attr_u32(w, rec, "averageSteps", (uint32_t)fr->d->avg_steps);
        time_offset -= 0.5 * (double)(fr->d->avg_steps - 1) * fr->d->dt;
    }
    static const char *const labels[2] = {"y", "x"};
    double spacing[2] = {fr->f->dy, fr->f->dx}, offset[2] = {fr->y0, fr->x0};
    h5out_attr_str(w, rec, "geometry", "cartesian");
    h5out_attr_str(w, rec, "dataOrder", "C");
    h5out_attr_strs(w, rec, "axisLabels", 2, labels);
    h5out_attr_f64v(w, rec, "gridSpacing", 2, spacing);
    h5out_attr_f64v(w, rec, "gridGlobalOffset", 2, offset);
    h5out_attr_f64(w, rec, "gridUnitSI", u->length);
    h5out_attr_f64v(w, rec, "unitDimension", 7, dim);
    h5out_attr_f64(w, rec, "timeOffset", time_offset);
}

/* Interior cells of an emf-layout array as a float32 [ny][nx] dataset: this rank's, read
 * from the array in place. */
static hid_t mesh_data(h5w *w, hid_t loc, const char *name, const emf *f, const float *a)
{
    const hsize_t ni = (hsize_t)(f->i1 - f->i0), nj = (hsize_t)(f->j1 - f->j0);
    const hsize_t at = (hsize_t)emf_idx(f, f->i0, f->j0), stride = (hsize_t)f->stride;
    const h5slab cells = {{(hsize_t)f->j0, (hsize_t)f->i0}, {1, 1}, {1, 1}, {nj, ni}};
    const h5slab src = {{at / stride, at % stride}, {1, 1}, {1, 1}, {nj, ni}};
    const h5part part = {1, &cells, {(hsize_t)f->rows, stride}, &src};
    hsize_t dims[2] = {(hsize_t)f->ny, (hsize_t)f->nx};
    return h5out_dataset_part(w, loc, name, 2, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &part,
                              a);
}

/* The XDMF Information of an item: its normalised unit and that unit in SI. */
static void item_units(out_item *it, const char *norm, double si, const char *si_unit)
{
    if (it)
        snprintf(it->units, sizeof it->units, "%s = %.6g %s", norm, si, si_unit);
}

/* Normalised and SI unit names of the mesh records E, B, J and rho (charge densities), and
 * of the squares E2, B2. */
static void mesh_units(const char *name, const char **norm, const char **si)
{
    const int sq = name[1] == '2';
    switch (name[0]) {
    case 'E': *norm = sq ? "(m_e c omega_p / e)^2" : "m_e c omega_p / e",
              *si = sq ? "V^2/m^2" : "V/m"; break;
    case 'B': *norm = sq ? "(m_e omega_p / e)^2" : "m_e omega_p / e", *si = sq ? "T^2" : "T";
              break;
    case 'J': *norm = "e n0 c", *si = "A/m^2"; break;
    default: *norm = "e n0", *si = "C/m^3"; break;
    }
}

/* The XDMF name of component comp of record name: the component after the record's first
 * part ("Ex", "Ex_ext"). */
static void item_name(char *dst, size_t len, const char *name, const char *comp)
{
    const size_t k = strcspn(name, "_");
    snprintf(dst, len, "%.*s%s%s", (int)k, name, comp, name + k);
}

/* Vector record NAME with components x, y, z at staggering st[c]. */
static void mesh_vector(h5w *w, hid_t meshes, const output_frame *fr, const out_units *u,
                        const char *name, float *const a[3], const int st[3], double unit,
                        const double dim[7], double time_offset)
{
    static const char *const comp[3] = {"x", "y", "z"};
    hid_t rec = h5out_group(w, meshes, name);
    mesh_record_attrs(w, rec, fr, u, dim, time_offset, strstr(name, "_avg") != NULL);
    for (int c = 0; c < 3; c++) {
        hid_t d = mesh_data(w, rec, comp[c], fr->f, a[c]);
        h5out_attr_f64(w, d, "unitSI", unit);
        h5out_attr_f64v(w, d, "position", 2, XDMF_ST_POS[st[c]]);
        char xname[96];
        const char *norm, *si;
        item_name(xname, sizeof xname, name, comp[c]);
        mesh_units(name, &norm, &si);
        item_units(h5out_add_item(w, 0, st[c], 4, 0, xname, d), norm, unit, si);
        h5out_close(d, H5Dclose);
    }
    h5out_close(rec, H5Gclose);
}

static void mesh_scalar(h5w *w, hid_t meshes, const output_frame *fr, const out_units *u,
                        const char *name, const float *a)
{
    hid_t d = mesh_data(w, meshes, name, fr->f, a);
    mesh_record_attrs(w, d, fr, u, H5OUT_DIM_RHO, 0.0, strstr(name, "_avg") != NULL);
    h5out_attr_f64(w, d, "unitSI", u->rho);
    h5out_attr_f64v(w, d, "position", 2, XDMF_ST_POS[ST_NODE]);
    item_units(h5out_add_item(w, 0, ST_NODE, 4, 0, name, d), "e n0", u->rho, "C/m^3");
    h5out_close(d, H5Dclose);
}

static const int ST_E[3] = {ST_X, ST_Y, ST_NODE}, ST_B[3] = {ST_Y, ST_X, ST_XY};

/* The averaged dump's records (fieldavg.h), from the means fr->avg in average.h's order:
 * E_avg, B_avg, J_avg, rho_avg and the squares E2_avg, B2_avg. */
static void write_averages(h5w *w, hid_t meshes, const output_frame *fr, const out_units *u)
{
    static const char *const name[5] = {"E_avg", "B_avg", "J_avg", "E2_avg", "B2_avg"};
    static const int bit[5] = {FQ_E, FQ_B, FQ_J, FQ_E2, FQ_B2};
    const size_t n = fr->f->size;
    const double unit[5] = {u->e, u->b, u->j, u->e * u->e, u->b * u->b};
    double dim[5][7];
    for (int k = 0; k < 7; k++) {
        dim[0][k] = H5OUT_DIM_E[k], dim[1][k] = H5OUT_DIM_B[k], dim[2][k] = H5OUT_DIM_J[k];
        dim[3][k] = 2 * H5OUT_DIM_E[k], dim[4][k] = 2 * H5OUT_DIM_B[k];
    }
    const int q = fr->d->avg_quantities;
    float *a = fr->avg;
    for (int r = 0; r < 5; r++) {
        if (r == 3 && (q & FQ_RHO)) { /* rho comes between J and the squares */
            mesh_scalar(w, meshes, fr, u, "rho_avg", a);
            a += n;
        }
        if (!(q & bit[r]))
            continue;
        float *const c[3] = {a, a + n, a + 2 * n};
        mesh_vector(w, meshes, fr, u, name[r], c, r == 1 || r == 4 ? ST_B : ST_E, unit[r],
                    dim[r], r == 2 ? -0.5 * fr->d->dt : 0.0);
        a += 3 * n;
    }
}

static void write_meshes(h5w *w, hid_t it, const output_frame *fr, const out_units *u)
{
    const emf *f = fr->f;
    const int q = fr->fields ? fr->d->fields_quantities : 0;
    hid_t meshes = h5out_group(w, it, "meshes");
    if (q & FQ_E)
        mesh_vector(w, meshes, fr, u, "E", f->e, ST_E, u->e, H5OUT_DIM_E, 0.0);
    if (q & FQ_B)
        mesh_vector(w, meshes, fr, u, "B", f->b, ST_B, u->b, H5OUT_DIM_B, 0.0);
    if (fr->ext && q) { /* the external fields as the particles feel them at t (extfield.h) */
        float *const xe[3] = {fr->ext, fr->ext + f->size, fr->ext + 2 * f->size};
        float *const xb[3] = {fr->ext + 3 * f->size, fr->ext + 4 * f->size,
                              fr->ext + 5 * f->size};
        if ((q & FQ_E) && extfield_present(fr->d, 0))
            mesh_vector(w, meshes, fr, u, "E_ext", xe, ST_E, u->e, H5OUT_DIM_E, 0.0);
        if ((q & FQ_B) && extfield_present(fr->d, 1))
            mesh_vector(w, meshes, fr, u, "B_ext", xb, ST_B, u->b, H5OUT_DIM_B, 0.0);
    }
    if (q & FQ_J)
        mesh_vector(w, meshes, fr, u, "J", f->j, ST_E, u->j, H5OUT_DIM_J, -0.5 * fr->d->dt);
    if ((q & FQ_RHO) && fr->rho)
        mesh_scalar(w, meshes, fr, u, "rho", fr->rho);
    if ((q & FQ_RHO) && fr->rho_species)
        for (int s = 0; s < fr->nspecies; s++)
            if (fr->rho_species[s]) {
                char name[DECK_NAME_MAX + 8];
                snprintf(name, sizeof name, "rho_%s", w->species[s]);
                mesh_scalar(w, meshes, fr, u, name, fr->rho_species[s]);
            }
    if (fr->avg)
        write_averages(w, meshes, fr, u);
    h5out_close(meshes, H5Gclose);
}

/* ---- particles ---- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Deterministic sample: keep particle number p (in cluster order) of species s at this step
 * with probability fraction. */
static int sample_keep(long step, int s, size_t p, double fraction)
{
    if (fraction >= 1.0)
        return 1;
    uint64_t h = mix64(mix64((uint64_t)step ^ ((uint64_t)s << 48)) ^ (uint64_t)p);
    return (double)(h >> 11) * 0x1.0p-53 < fraction;
}

/* Whether slot p of species s, its particle number `ord` in cluster order (the same
 * whatever the storage layout or the ranks), goes into this dump: the tracked particles
 * (id != 0) of a tracks dump, else the fraction sample within the region/energy selection. */
static int keep(const output_frame *fr, const ps_select *sel, int s, size_t p, size_t ord)
{
    const species *sp = &fr->sp[s];
    if (fr->tracks)
        return sp->id[p] != 0;
    return sample_keep(fr->step, s, ord, fr->d->particles_fraction) &&
           ps_selected(sel, cell_i(sp->cell[p]), cell_j(sp->cell[p]), sp->x[p], sp->y[p],
                       sp->ux[p], sp->uy[p], sp->uz[p]);
}

static void particle_record_attrs(h5w *w, hid_t rec, const double dim[7], double time_offset,
                                  uint32_t macro_weighted, double weighting_power)
{
    h5out_attr_f64v(w, rec, "unitDimension", 7, dim);
    h5out_attr_f64(w, rec, "timeOffset", time_offset);
    h5out_attr_u32(w, rec, "macroWeighted", macro_weighted);
    h5out_attr_f64(w, rec, "weightingPower", weighting_power);
}

/* A constant record component: no dataset, `value` and `shape` attributes. */
static void constant_component(h5w *w, hid_t loc, const char *name, double value,
                               uint64_t n, double unit_si, hid_t *out)
{
    hid_t g = h5out_group(w, loc, name);
    h5out_attr_f64(w, g, "value", value);
    h5out_attr_u64v(w, g, "shape", 1, &n);
    h5out_attr_f64(w, g, "unitSI", unit_si);
    if (out)
        *out = g;
    else
        h5out_close(g, H5Gclose);
}

/* The particles of species s that a dump writes: this rank's slots in cluster order (idx,
 * mine of them), every cluster's number num[c] (of all ranks) and n in all, and where this
 * rank's lie in a dataset of them: nrun runs of rows of one column (run) and of two (run2). */
typedef struct {
    size_t *idx, mine;
    long long *num;
    uint64_t n;
    int nrun;
    h5slab *run, *run2;
} chosen;

static void chosen_free(chosen *ch)
{
    free(ch->idx);
    free(ch->num);
    free(ch->run);
    free(ch->run2);
}

/* A per-particle dataset of ch, 1-D, from this rank's values buf. */
static hid_t chosen_data(h5w *w, hid_t loc, const char *name, const chosen *ch, hid_t ftype,
                         hid_t mtype, const void *buf)
{
    hsize_t dim = (hsize_t)ch->n;
    const h5part part = {ch->nrun, ch->run, {0, 0}, NULL};
    return h5out_dataset_part(w, loc, name, 1, &dim, ftype, mtype, &part, buf);
}

static void species_patches(h5w *w, hid_t sg, const output_frame *fr, const out_units *u,
                            const long long *num)
{
    const clusters *cl = fr->cl;
    const int n = cl->n;
    /* (the file's types in memory: a shared file's collective writes convert none) */
    uint64_t *off = empic_alloc((size_t)n * 2 * sizeof(uint64_t), "output buffer"), *cnt = off + n;
    double *v = empic_alloc((size_t)n * 4 * sizeof(double), "output buffer");
    uint64_t acc = 0;
    for (int c = 0; c < n; c++) {
        int cx = c % cl->ncx, cy = c / cl->ncx;
        off[c] = acc;
        acc += cnt[c] = (uint64_t)num[c];
        v[c] = fr->x0 + cl->x0[cx] * fr->f->dx;
        v[n + c] = fr->y0 + cl->y0[cy] * fr->f->dy;
        v[2 * n + c] = (cl->x0[cx + 1] - cl->x0[cx]) * fr->f->dx;
        v[3 * n + c] = (cl->y0[cy + 1] - cl->y0[cy]) * fr->f->dy;
    }
    hsize_t dim = (hsize_t)n;
    hid_t pp = h5out_group(w, sg, "particlePatches");
    hid_t d = h5out_dataset(w, pp, "numParticles", 1, &dim, H5T_STD_U64LE, H5T_NATIVE_UINT64, cnt);
    h5out_attr_f64(w, d, "unitSI", 1.0);
    h5out_close(d, H5Dclose);
    d = h5out_dataset(w, pp, "numParticlesOffset", 1, &dim, H5T_STD_U64LE, H5T_NATIVE_UINT64, off);
    h5out_attr_f64(w, d, "unitSI", 1.0);
    h5out_close(d, H5Dclose);
    static const char *const rname[2] = {"offset", "extent"}, *const comp[2] = {"x", "y"};
    for (int r = 0; r < 2; r++) {
        hid_t g = h5out_group(w, pp, rname[r]);
        h5out_attr_f64v(w, g, "unitDimension", 7, H5OUT_DIM_LENGTH);
        for (int c = 0; c < 2; c++) {
            d = h5out_dataset(w, g, comp[c], 1, &dim, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                        v + (2 * r + c) * n);
            h5out_attr_f64(w, d, "unitSI", u->length);
            h5out_close(d, H5Dclose);
        }
        h5out_close(g, H5Gclose);
    }
    h5out_close(pp, H5Gclose);
    free(off);
    free(v);
}

/* The cloud's shape for XDMF readers, in /xdmf/<species> (outside the openPMD base path):
 * positions interleaved as [n][2] (Xdmf3 reads no X_Y geometry) and the vertex list of its
 * Polyvertex topology (Xdmf3 needs one), 0 .. n-1. */
static void write_xdmf_shape(h5w *w, hid_t xg, const output_frame *fr, int s, const chosen *ch)
{
    const species *sp = &fr->sp[s];
    const double dx = fr->f->dx, dy = fr->f->dy;
    const size_t n = ch->mine;
    double *xy = empic_alloc(2 * n * sizeof(double) + 1, "output buffer");
    for (size_t k = 0; k < n; k++) {
        size_t p = ch->idx[k];
        xy[2 * k] = fr->x0 + (cell_i(sp->cell[p]) + (double)sp->x[p]) * dx;
        xy[2 * k + 1] = fr->y0 + (cell_j(sp->cell[p]) + (double)sp->y[p]) * dy;
    }
    hid_t g = h5out_group(w, xg, w->species[s]);
    hsize_t dims[2] = {(hsize_t)ch->n, 2};
    const h5part rows = {ch->nrun, ch->run2, {0, 0}, NULL};
    hid_t d = h5out_dataset_part(w, g, "xy", 2, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &rows,
                                 xy);
    h5out_add_item(w, 1, s, 8, (long long)ch->n, "geom_xy", d);
    h5out_close(d, H5Dclose);
    int64_t *v = (int64_t *)xy; /* the particles' numbers in the whole cloud */
    size_t k = 0;
    for (int r = 0; r < ch->nrun; r++)
        for (hsize_t q = 0; q < ch->run[r].block[0]; q++)
            v[k++] = (int64_t)(ch->run[r].start[0] + q);
    d = chosen_data(w, g, "vertex", ch, H5T_STD_I64LE, H5T_NATIVE_INT64, v);
    out_item *it = h5out_add_item(w, 1, s, 8, (long long)ch->n, "vertex", d);
    if (it)
        snprintf(it->ntype, sizeof it->ntype, "Int");
    h5out_close(d, H5Dclose);
    h5out_close(g, H5Gclose);
    free(xy);
}

/* The particles of species s that the dump writes (chosen): this rank's selection, numbered
 * in the cluster order of all ranks (the sample's keys), and its place among them. */
static void choose(const output_frame *fr, int s, chosen *ch)
{
    const species *sp = &fr->sp[s];
    const clusters *cl = fr->cl;
    const deck *dk = fr->d;
    const ps_select sel = {dk->particles_region, dk->particles_energy,
                           {dk->particles_box[0], dk->particles_box[1], dk->particles_box[2],
                            dk->particles_box[3]},
                           {dk->particles_erange[0], dk->particles_erange[1]},
                           fr->x0, fr->y0, fr->f->dx, fr->f->dy, sp->cfg->mass};
    const int ncl = cl->n;
    /* the number of every cluster's first particle in cluster order (a tracks dump keeps the
     * tracked ones and numbers none) */
    long long *first = empic_calloc((size_t)ncl, sizeof(long long), "output buffer");
    for (int c = 0; c < ncl && !fr->tracks; c++)
        first[c] = sp->count[c]; /* 0 in the other ranks' clusters */
    if (fr->shared && !fr->tracks)
        comm_sum_ll(first, (size_t)ncl);
    long long at = 0;
    for (int c = 0; c < ncl; c++) {
        const long long n = first[c];
        first[c] = at;
        at += n;
    }
    ch->num = empic_calloc((size_t)ncl, sizeof(long long), "output buffer");
    ch->mine = 0;
    for (int pass = 0; pass < 2; pass++) { /* count, then list */
        size_t k = 0;
        for (int c = 0; c < ncl; c++)
            for (size_t p = (size_t)sp->start[c]; p < (size_t)sp->start[c] + sp->count[c]; p++)
                if (keep(fr, &sel, s, p, (size_t)first[c] + (p - (size_t)sp->start[c]))) {
                    if (pass)
                        ch->idx[k] = p;
                    else
                        ch->num[c]++;
                    k++;
                }
        if (!pass)
            ch->idx = empic_alloc((k ? k : 1) * sizeof(size_t), "output buffer");
    }
    free(first);
    if (fr->shared)
        comm_sum_ll(ch->num, (size_t)ncl);
    ch->n = 0;
    for (int c = 0; c < ncl; c++)
        ch->n += (uint64_t)ch->num[c];
    const size_t rows = (size_t)(cl->cy1 - cl->cy0);
    ch->run = empic_alloc(rows * sizeof(h5slab), "output buffer");
    ch->run2 = empic_alloc(rows * sizeof(h5slab), "output buffer");
    ch->nrun = h5par_runs(cl, ch->num, 1, ch->run, &ch->mine);
    h5par_runs(cl, ch->num, 2, ch->run2, &ch->mine);
}

/* An ionizing species' charge per particle, in e (its charge state z), and charge_state, z
 * as an integer; buf: this rank's particles' doubles of scratch. */
static void write_charge(h5w *w, hid_t sg, const out_units *u, int s, const species *sp,
                         const chosen *ch, double *buf)
{
    for (size_t k = 0; k < ch->mine; k++)
        buf[k] = (double)sp->q * sp->z[ch->idx[k]];
    hid_t d = chosen_data(w, sg, "charge", ch, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, buf);
    particle_record_attrs(w, d, H5OUT_DIM_CHARGE, 0.0, 0, 1.0);
    h5out_attr_f64(w, d, "unitSI", u->charge);
    item_units(h5out_add_item(w, 1, s, 8, (long long)ch->n, "charge", d), "e", u->charge, "C");
    h5out_close(d, H5Dclose);
    uint8_t *zs = (uint8_t *)buf;
    for (size_t k = 0; k < ch->mine; k++)
        zs[k] = sp->z[ch->idx[k]];
    d = chosen_data(w, sg, "charge_state", ch, H5T_STD_U8LE, H5T_NATIVE_UINT8, zs);
    particle_record_attrs(w, d, H5OUT_DIM_NONE, 0.0, 0, 0.0);
    h5out_attr_f64(w, d, "unitSI", 1.0);
    h5out_close(d, H5Dclose);
}

static void write_species(h5w *w, hid_t parts, hid_t xg, const output_frame *fr,
                          const out_units *u, int s)
{
    const species *sp = &fr->sp[s];
    const double dx = fr->f->dx, dy = fr->f->dy, dt = fr->d->dt;
    chosen ch;
    choose(fr, s, &ch);
    const size_t n = ch.mine, *idx = ch.idx;
    size_t k;
    double *buf = empic_alloc((n ? n : 1) * sizeof(double), "output buffer");
    float *fbuf = (float *)buf;
    const double m = sp->cfg->mass;
    hid_t sg = h5out_group(w, parts, w->species[s]), rec, d;

    /* position (absolute) and its zero offset */
    rec = h5out_group(w, sg, "position");
    particle_record_attrs(w, rec, H5OUT_DIM_LENGTH, 0.0, 0, 0.0);
    for (int c = 0; c < 2; c++) {
        for (k = 0; k < n; k++) {
            size_t p = idx[k];
            buf[k] = c == 0 ? fr->x0 + (cell_i(sp->cell[p]) + (double)sp->x[p]) * dx
                            : fr->y0 + (cell_j(sp->cell[p]) + (double)sp->y[p]) * dy;
        }
        d = chosen_data(w, rec, c ? "y" : "x", &ch, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, buf);
        h5out_attr_f64(w, d, "unitSI", u->length);
        h5out_close(d, H5Dclose);
    }
    h5out_close(rec, H5Gclose);
    rec = h5out_group(w, sg, "positionOffset");
    particle_record_attrs(w, rec, H5OUT_DIM_LENGTH, 0.0, 0, 0.0);
    constant_component(w, rec, "x", 0.0, ch.n, u->length, NULL);
    constant_component(w, rec, "y", 0.0, ch.n, u->length, NULL);
    h5out_close(rec, H5Gclose);

    /* momentum p = m u per real particle, in m_e c, at t - dt/2 */
    static const char *const comp[3] = {"x", "y", "z"}, *const pname[3] = {"px", "py", "pz"};
    const float *ua[3] = {sp->ux, sp->uy, sp->uz};
    rec = h5out_group(w, sg, "momentum");
    particle_record_attrs(w, rec, H5OUT_DIM_MOMENTUM, -0.5 * dt, 0, 1.0);
    for (int c = 0; c < 3; c++) {
        for (k = 0; k < n; k++)
            fbuf[k] = (float)(m * ua[c][idx[k]]);
        d = chosen_data(w, rec, comp[c], &ch, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, fbuf);
        h5out_attr_f64(w, d, "unitSI", u->momentum);
        item_units(h5out_add_item(w, 1, s, 4, (long long)ch.n, pname[c], d), "m_e c",
                   u->momentum, "kg m/s");
        h5out_close(d, H5Dclose);
    }
    h5out_close(rec, H5Gclose);

    /* weighting: real particles per macro-particle (per metre in z) */
    for (k = 0; k < n; k++)
        buf[k] = (double)sp->w[idx[k]] * dx * dy * u->n0len2;
    d = chosen_data(w, sg, "weighting", &ch, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, buf);
    particle_record_attrs(w, d, H5OUT_DIM_NONE, 0.0, 1, 1.0);
    h5out_attr_f64(w, d, "unitSI", 1.0);
    item_units(h5out_add_item(w, 1, s, 8, (long long)ch.n, "weighting", d),
               "real particles per macro-particle per metre in z", 1.0, "/m");
    h5out_close(d, H5Dclose);

    if (sp->id) { /* tracking ids (0 = untracked) */
        uint64_t *ids = (uint64_t *)buf;
        for (k = 0; k < n; k++)
            ids[k] = sp->id[idx[k]];
        d = chosen_data(w, sg, "id", &ch, H5T_STD_U64LE, H5T_NATIVE_UINT64, ids);
        particle_record_attrs(w, d, H5OUT_DIM_NONE, 0.0, 0, 0.0);
        h5out_attr_f64(w, d, "unitSI", 1.0);
        out_item *it = h5out_add_item(w, 1, s, 8, (long long)ch.n, "id", d);
        if (it)
            snprintf(it->ntype, sizeof it->ntype, "UInt");
        h5out_close(d, H5Dclose);
    }

    if (sp->z) {
        write_charge(w, sg, u, s, sp, &ch, buf);
    } else {
        constant_component(w, sg, "charge", sp->cfg->charge, ch.n, u->charge, &rec);
        particle_record_attrs(w, rec, H5OUT_DIM_CHARGE, 0.0, 0, 1.0);
        h5out_close(rec, H5Gclose);
    }
    constant_component(w, sg, "mass", m, ch.n, u->mass, &rec);
    particle_record_attrs(w, rec, H5OUT_DIM_MASS, 0.0, 0, 1.0);
    h5out_close(rec, H5Gclose);

    species_patches(w, sg, fr, u, ch.num);
    h5out_close(sg, H5Gclose);
    write_xdmf_shape(w, xg, fr, s, &ch);
    free(buf);
    chosen_free(&ch);
}

/* ---- the tracks file: one per run, an openPMD group-based series ---- */

/* Open OUTDIR/tracks/tracks.h5 for appending into w->file, or make it with its root
 * attributes (iterationEncoding groupBased) when missing; 0, or -1 with w->err set. */
static int tracks_open(h5w *w, const char *path, const output_frame *fr)
{
    /* in place, by every rank of a shared file (MPI-IO) */
    hid_t fapl = w->shared ? h5par_fapl(1, 0) : H5P_DEFAULT;
    if (access(path, F_OK) == 0) {
        w->file = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDWR, fapl);
        if (w->file < 0)
            h5out_fail(w, "opening the file for appending");
    } else {
        w->file = fapl < 0 ? -1 : H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
        if (w->file < 0)
            h5out_fail(w, "file creation");
        else
            h5out_root_attrs(w, "/data/%T/", 0, 1, fr->d->name);
    }
    if (fapl != H5P_DEFAULT)
        h5out_close(fapl, H5Pclose);
    return w->file < 0 ? -1 : 0;
}

/* Group `name` of loc, opened when it exists, else made. */
static hid_t open_or_make(h5w *w, hid_t loc, const char *name)
{
    if (w->err)
        return -1;
    if (H5Lexists(loc, name, H5P_DEFAULT) > 0) {
        hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
        if (g < 0)
            h5out_fail(w, name);
        return g;
    }
    return h5out_group(w, loc, name);
}

/* The step's tracked particles appended to the tracks file as /data/<step>/particles (and
 * the clouds' XDMF shapes as /xdmf/<step>, the step's XDMF text, *text (malloc'd), as
 * /xdmf_text/<step>); a step already there is replaced. */
static void write_tracks(h5w *w, const char *path, const output_frame *fr, const out_units *u,
                         char **text)
{
    if (tracks_open(w, path, fr))
        return;
    char name[32];
    snprintf(name, sizeof name, "%ld", fr->step);
    hid_t data = open_or_make(w, w->file, "data"), xall = open_or_make(w, w->file, "xdmf");
    if (!w->err && H5Lexists(data, name, H5P_DEFAULT) > 0 && H5Ldelete(data, name, H5P_DEFAULT) < 0)
        h5out_fail(w, name);
    if (!w->err && H5Lexists(xall, name, H5P_DEFAULT) > 0 && H5Ldelete(xall, name, H5P_DEFAULT) < 0)
        h5out_fail(w, name);
    hid_t it = h5out_group(w, data, name);
    h5out_attr_f64(w, it, "time", fr->t);
    h5out_attr_f64(w, it, "dt", fr->d->dt);
    h5out_attr_f64(w, it, "timeUnitSI", u->time);
    hid_t parts = h5out_group(w, it, "particles"), xg = h5out_group(w, xall, name);
    for (int s = 0; s < fr->nspecies; s++) /* (every rank: after a failure too) */
        if (fr->sp[s].id != NULL)
            write_species(w, parts, xg, fr, u, s);
    h5out_close(xg, H5Gclose);
    /* the step's XDMF text (no .xmf file per step): the series is rebuilt from these */
    hid_t xt = open_or_make(w, w->file, "xdmf_text");
    if (!w->err && H5Lexists(xt, name, H5P_DEFAULT) > 0 && H5Ldelete(xt, name, H5P_DEFAULT) < 0)
        h5out_fail(w, name);
    *text = xdmf_tracks(w, fr);
    hsize_t len = strlen(*text);
    h5out_close(h5out_dataset(w, xt, name, 1, &len, H5T_STD_U8LE, H5T_NATIVE_UCHAR, *text),
                H5Dclose);
    h5out_close(xt, H5Gclose);
    h5out_close(parts, H5Gclose);
    h5out_close(it, H5Gclose);
    h5out_close(xall, H5Gclose);
    h5out_close(data, H5Gclose);
}

/* Close the tracks file (flushed to the file system: a run killed later keeps the step). */
static int tracks_close(h5w *w, const char *path)
{
    h5out_agree(w);
    if (w->file >= 0 && !w->err && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0)
        h5out_fail(w, "flushing the file");
    if (w->file >= 0 && H5Fclose(w->file) < 0)
        h5out_fail(w, "file close");
    w->file = -1;
    h5out_agree(w);
    if (w->err && (!w->shared || comm_rank() == 0))
        empic_report(path, 0, "HDF5 error at %s; tracks of this step not written", w->what);
    return w->err ? -1 : 0;
}

/* Steps >= first removed from a group of an open series file (output_drop_steps). */
typedef struct {
    long first;
    int n, cap;
    char (*names)[32];
} later_steps;

static herr_t later_step(hid_t g, const char *name, const H5L_info_t *info, void *arg)
{
    (void)g, (void)info;
    later_steps *l = arg;
    char *end;
    long step = strtol(name, &end, 10);
    if (*end || end == name || step < l->first)
        return 0;
    if (l->n == l->cap) {
        l->cap = 2 * l->cap + 16;
        l->names = realloc(l->names, (size_t)l->cap * sizeof *l->names);
        if (!l->names)
            return -1;
    }
    snprintf(l->names[l->n++], sizeof *l->names, "%s", name);
    return 0;
}

int output_drop_steps(hid_t file, const char *group, long first)
{
    if (H5Lexists(file, group, H5P_DEFAULT) <= 0)
        return 0;
    hid_t g = H5Gopen2(file, group, H5P_DEFAULT);
    later_steps l = {first, 0, 0, NULL};
    int rc = g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, later_step, &l) < 0;
    for (int k = 0; k < l.n && !rc; k++)
        rc = H5Ldelete(g, l.names[k], H5P_DEFAULT) < 0;
    free(l.names);
    h5out_close(g, H5Gclose);
    return rc ? -1 : 0;
}

/* The tracks file's steps from first on: their data, XDMF shapes and XDMF texts. */
static int tracks_trim(hid_t file, long first)
{
    return output_drop_steps(file, "data", first) || output_drop_steps(file, "xdmf", first) ||
           output_drop_steps(file, "xdmf_text", first);
}

int output_tracks_begin(const char *outdir, long first, int restart)
{
    char path[OUT_PATH + 64];
    snprintf(path, sizeof path, "%s/tracks/tracks.h5", outdir);
    return h5out_continue(path, "tracks", first, restart, tracks_trim);
}

/* ---- the file ---- */

static void write_file(h5w *w, const char *name, const output_frame *fr, const out_units *u)
{
    if (h5out_create(w, name))
        return;
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%s%%08T.h5", series(fr));
    /* The same openPMD root attributes in every dump of the series (openPMD-viewer reads them
     * from one file for all): meshesPath and particlesPath whenever the run dumps them at
     * all, with an empty group in a dump without them (the standard wants the group behind
     * a set path to exist). */
    const int meshes = fr->fields || fr->avg || (!fr->tracks && deck_dumps_meshes(fr->d));
    const int parts = fr->particles || (!fr->tracks && fr->d->particles_every > 0);
    h5out_root_attrs(w, fmt, meshes, parts, fr->d->name);
    hid_t data, it = h5out_iteration(w, &data, fr->step, fr->t, fr->d->dt, u->time);
    if (fr->fields || fr->avg)
        write_meshes(w, it, fr, u);
    else if (meshes)
        h5out_close(h5out_group(w, it, "meshes"), H5Gclose);
    if (!fr->particles && parts)
        h5out_close(h5out_group(w, it, "particles"), H5Gclose);
    if (fr->particles) {
        hid_t parts = h5out_group(w, it, "particles"), xg = h5out_group(w, w->file, "xdmf");
        for (int s = 0; s < fr->nspecies; s++) /* (every rank: after a failure too) */
            if (fr->tracks ? fr->sp[s].id != NULL : (fr->d->particles_species_mask >> s) & 1)
                write_species(w, parts, xg, fr, u, s);
        h5out_close(xg, H5Gclose);
        h5out_close(parts, H5Gclose);
    }
    h5out_close(it, H5Gclose);
    h5out_close(data, H5Gclose);
}

/* ---- entry point ---- */

int output_dump(const char *outdir, const output_frame *fr)
{
    char dir[OUT_PATH], path[OUT_PATH + 64];
    const int root = !fr->shared || comm_rank() == 0; /* writes the XDMF files */
    snprintf(dir, sizeof dir, "%s/%s", outdir, series(fr));
    int rc = root ? fileio_mkdir_p(dir, "dump folder") : 0;
    if (fr->shared)
        comm_bcast(&rc, sizeof rc, 0);
    if (rc)
        return -1;
    if (fr->tracks)
        snprintf(path, sizeof path, "%s/tracks.h5", dir);
    else
        snprintf(path, sizeof path, "%s/%s%08ld.h5", dir, series(fr), fr->step);
    out_units u;
    h5out_units(fr->d->n0, &u);
    h5w *w = empic_calloc(1, sizeof *w, "output writer");
    w->file = -1;
    w->shared = fr->shared;
    for (int s = 0; s < fr->nspecies && s < DECK_MAX_SPECIES; s++)
        h5out_safe_name(w->species[s], DECK_NAME_MAX, fr->sp[s].cfg->name);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (fr->tracks) {
        char *text = NULL;
        write_tracks(w, path, fr, &u, &text);
        rc = tracks_close(w, path);
        if (rc == 0 && root)
            rc = xdmf_tracks_series(dir, fr, text);
        free(text);
    } else {
        write_file(w, path, fr, &u);
        rc = h5out_commit(w, path, "dump");
        if (rc == 0 && root)
            rc = xdmf_dump(dir, series(fr), w, fr);
    }
    if (fr->shared) /* the XDMF files' status too */
        comm_bcast(&rc, sizeof rc, 0);
    free(w);
    return rc;
}
