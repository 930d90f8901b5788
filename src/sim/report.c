/* report.c - run.cfg, energy.csv, progress line, timing table and timing.json. */
#include "report.h"
#include "comm.h"
#include "empic.h"
#include "fileio.h"
#include "h5out.h"
#include "memory.h"
#include "rebalance.h"
#include "units.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Minimal device-memory traffic of one particle-step (one fused pass): read cell, x, y, u,
 * w (28 B), write cell, x, y, u (24 B) and the migration code (1 B), read the code in the
 * sort (1 B); plus per cell and step: gather E, B (24 B), current write-back (12 B) and the
 * Yee updates (read E, B, J, write E, B: 60 B), shared among the particles of the cell. */
#define BYTES_PARTICLE 54.0
#define BYTES_CELL 96.0

static const char *phase_name[PH_COUNT] = {"push", "deposit", "sort", "field", "exchange",
                                           "other"};

static void out_path(const sim *S, char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", S->d.output, name);
}

/* energy.csv rows of folder dir (energy.csv.tmp of an interrupted run first) for the steps
 * before `step`, header dropped; NULL when there is no such file (or no dir). */
/* How the ranks exchange (pic_state.transport, set by the backend's open): "none" on one
 * rank, "mpi" for a backend that leaves it unset (the CPU's own MPI calls). */
static const char *transport_of(const sim *S)
{
    return S->st.transport ? S->st.transport : comm_size() > 1 ? "mpi" : "none";
}

static char *energy_rows(const char *dir, long step)
{
    char path[DECK_PATH_MAX + 32];
    FILE *in = NULL;
    if (!dir)
        return NULL;
    for (int k = 0; k < 2 && !in; k++) {
        snprintf(path, sizeof path, "%s/energy.csv%s", dir, k ? "" : ".tmp");
        in = fopen(path, "r");
    }
    if (!in)
        return NULL;
    char *out = NULL, *line = NULL;
    size_t olen = 0, cap = 0;
    FILE *m = open_memstream(&out, &olen);
    if (!m)
        EMPIC_DIE("out of host memory reading energy.csv");
    ssize_t n;
    int first = 1;
    while ((n = getline(&line, &cap, in)) > 0) {
        char *end;
        long s = strtol(line, &end, 10);
        if (!first && line[n - 1] == '\n' && end != line && *end == ',' && s < step)
            fputs(line, m);
        first = 0;
    }
    free(line);
    fclose(in);
    fclose(m);
    return out;
}

/* Rank 0 writes the run's files and lines; the others only join the collective counts. */
int report_open(sim *S, const char *resume_dir)
{
    char path[DECK_PATH_MAX + 64];
    S->run0.step = S->step;
    S->run0.particle_steps = S->particle_steps;
    S->run0.wall_s = S->wall_s;
    memcpy(S->run0.phase_s, S->st.phase_s, sizeof S->st.phase_s);
    long long np[2] = {0, sim_particles(S)};
    for (int s = 0; s < S->nsp; s++)
        np[0] += S->sp[s].np;
    comm_sum_ll(np, 2);
    if (comm_rank() != 0)
        return 0;
    if (fileio_mkdir_p(S->d.output, "output folder"))
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fprintf(m, "# written by empic %s\n", empic_version_string());
    deck_write(&S->d, m);
    fclose(m);
    out_path(S, path, sizeof path, "run.cfg");
    int rc = fileio_write_atomic(path, text, len);
    free(text);
    if (rc)
        return -1;
    if (S->d.energy_every > 0) {
        /* a restart keeps the rows before its step: from this folder (read before the new
         * file replaces an interrupted run's energy.csv.tmp), else from the run it continues */
        char *rows = S->step > 0 ? energy_rows(S->d.output, S->step) : NULL;
        if (!rows && S->step > 0)
            rows = energy_rows(resume_dir, S->step);
        out_path(S, path, sizeof path, "energy.csv");
        if (!(S->energy = fileio_open_tmp(path))) {
            free(rows);
            return -1;
        }
        fprintf(S->energy, "step,t,field_E,field_B");
        for (int s = 0; s < S->nsp; s++)
            fprintf(S->energy, ",kinetic_%s", S->sp[s].cfg->name);
        fprintf(S->energy, ",total,gauss_max");
        for (int s = 0; s < S->nsp; s++)
            if (S->sp[s].ion)
                fprintf(S->energy, ",ionized_%s,zmean_%s", S->sp[s].cfg->name,
                        S->sp[s].cfg->name);
        fprintf(S->energy, ",field_layers,field_stagger,in,out_xmin,out_xmax,out_ymin,out_ymax");
        for (int s = 0; s < S->nsp; s++)
            fprintf(S->energy, ",lost_%s", S->sp[s].cfg->name);
        fprintf(S->energy, ",balance");
        fputc('\n', S->energy);
        if (rows)
            fputs(rows, S->energy);
        free(rows);
        fflush(S->energy);
    }
    if (!S->quiet) {
        printf("empic: %s  %dx%d cells, %d species, %lld particles (%lld pushed), %ld steps, "
               "backend %s [%s]",
               S->d.name, S->d.nx, S->d.ny, S->nsp, np[0], np[1], S->d.steps, S->be->name,
               S->device);
        if (comm_size() > 1)
            printf(", %d x %d MPI ranks (%s)", S->cl.nrx, S->cl.nry, transport_of(S));
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

void report_energy_row(sim *S, double fe, double fb, const double *kin, double gauss,
                       const ionize_stats *ist, const ebal_row *bal)
{
    if (!S->energy)
        return;
    double total = fe + fb;
    fprintf(S->energy, "%ld,%.9g,%.12g,%.12g", S->step, S->step * S->d.dt, fe, fb);
    for (int s = 0; s < S->nsp; s++) {
        fprintf(S->energy, ",%.12g", kin[s]);
        total += kin[s];
    }
    fprintf(S->energy, ",%.12g,%.6g", total, gauss);
    for (int s = 0; s < S->nsp; s++)
        if (S->sp[s].ion)
            fprintf(S->energy, ",%lld,%.9g", ist[s].events,
                    ist[s].w > 0 ? ist[s].zw / ist[s].w : (double)S->sp[s].z0);
    /* balance = total - field_layers - field_stagger + out + lost - in */
    double b = total - bal->layers - bal->stagger - bal->in;
    fprintf(S->energy, ",%.12g,%.12g,%.12g", bal->layers, bal->stagger, bal->in);
    for (int k = 0; k < 4; k++) {
        fprintf(S->energy, ",%.12g", bal->out[k]);
        b += bal->out[k];
    }
    for (int s = 0; s < S->nsp; s++) {
        fprintf(S->energy, ",%.12g", bal->lost[s]);
        b += bal->lost[s];
    }
    fprintf(S->energy, ",%.12g", b);
    fputc('\n', S->energy);
    fflush(S->energy);
}

void report_progress(sim *S, int final)
{
    double now = omp_get_wtime();
    if (S->quiet || comm_rank() != 0 || (!final && now - S->progress_at < 0.5))
        return;
    S->progress_at = now;
    int tty = isatty(STDERR_FILENO);
    if (!tty && !final && S->step % (S->d.steps / 10 > 0 ? S->d.steps / 10 : 1) != 0)
        return;
    const long run = S->step - S->run0.step;
    /* the steps since the ranks' last sum (sim_count_pushed) at its particle count */
    const long long ps = S->particle_steps - S->run0.particle_steps +
                         (S->step - S->counted_to) * S->np_all;
    const double wall = S->wall_s - S->run0.wall_s;
    const int pic = ps > 0;
    double rate = wall > 0 ? (pic ? (double)ps : (double)run * S->d.nx * S->d.ny) / wall : 0.0;
    double eta = run > 0 ? wall / run * (S->d.steps - S->step) : 0.0;
    fprintf(stderr, "%sstep %ld/%ld  t = %.3f  %.3g %s-steps/s  ETA %.0f s%s",
            tty ? "\r" : "", S->step, S->d.steps, S->step * S->d.dt, rate,
            pic ? "particle" : "cell", eta, tty && !final ? "   " : "\n");
}

/* The run's timing, over the steps this process ran (after a restart: since the checkpoint).
 * Per particle-step (mobile particles x steps, as OSIRIS reports it) and per cell-step; a
 * particle-free run is reported per cell-step only. */
typedef struct {
    long steps;                          /* steps run by this process */
    double wall;                         /* its wall seconds */
    long long np;                        /* mobile particles */
    double cell_steps;
    int per_cell;                        /* no particle-steps: the table is per cell-step */
    double ns_part[PH_COUNT], ns_cell[PH_COUNT], total_part, total_cell;
    double bytes, bw, floor_ns, mem;     /* floor_ns and bytes per unit of the table */
    int ranks;
    double np_min, np_max, busy_min, busy_max; /* per rank: mobile particles, and seconds
                                                  in the phases (waits at exchanges in) */
    double ex_min, ex_max;               /* per rank: seconds in exchanges */
    double rss0, rss_min, rss_max;       /* peak resident bytes of rank 0, and the least and
                                            most of the other ranks (-1: none) */
} timing;

static void timing_measure(sim *S, timing *t)
{
    t->steps = S->step - S->run0.step;
    t->wall = S->wall_s - S->run0.wall_s;
    long long np = sim_particles(S);
    double busy = 0.0;
    for (int p = 0; p < PH_OTHER; p++)
        busy += S->st.phase_s[p] - S->run0.phase_s[p];
    const double ex = S->st.phase_s[PH_EXCHANGE] - S->run0.phase_s[PH_EXCHANGE];
    /* the peak memory so far (before the bandwidth probe below), rank 0's apart */
    struct rusage ru;
    const double rss = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss * 1024.0 : 0.0;
    const int other = comm_rank() > 0;
    double mm[9] = {(double)np, -(double)np, busy, -busy, ex, -ex, other ? rss : -1.0,
                    other ? -rss : -1e300, other ? 0.0 : rss};
    comm_max_double(mm, 9);
    t->rss0 = mm[8];
    t->rss_max = mm[6];
    t->rss_min = mm[7] > -1e300 ? -mm[7] : -1.0;
    t->ranks = comm_size();
    t->np_max = mm[0];
    t->np_min = -mm[1];
    t->busy_max = mm[2];
    t->busy_min = -mm[3];
    t->ex_max = mm[4];
    t->ex_min = -mm[5];
    comm_sum_ll(&np, 1);
    t->np = np;
    t->cell_steps = (double)S->d.nx * S->d.ny * t->steps;
    const double ps = (double)(S->particle_steps - S->run0.particle_steps);
    t->per_cell = ps <= 0;
    double known = 0.0, phase[PH_COUNT];
    for (int p = 0; p < PH_OTHER; p++)
        known += phase[p] = S->st.phase_s[p] - S->run0.phase_s[p];
    phase[PH_OTHER] = t->wall > known ? t->wall - known : 0.0;
    S->st.phase_s[PH_OTHER] = S->run0.phase_s[PH_OTHER] + phase[PH_OTHER];
    for (int p = 0; p < PH_COUNT; p++) {
        t->ns_part[p] = ps > 0 ? phase[p] / ps * 1e9 : 0.0;
        t->ns_cell[p] = t->cell_steps > 0 ? phase[p] / t->cell_steps * 1e9 : 0.0;
    }
    t->total_part = ps > 0 ? t->wall / ps * 1e9 : 0.0;
    t->total_cell = t->cell_steps > 0 ? t->wall / t->cell_steps * 1e9 : 0.0;
    t->bytes = t->per_cell ? BYTES_CELL
                           : BYTES_PARTICLE + BYTES_CELL * S->d.nx * S->d.ny /
                                                  (t->np > 0 ? (double)t->np : 1.0);
    /* measured by rank 0 alone, which reports it: one probe per run, not one per rank */
    t->bw = t->steps > 0 && comm_rank() == 0 ? S->be->bandwidth(S->be_ctx) : 0.0;
    t->mem = S->be->particle_bytes(S->be_ctx, &S->st) /
             (double)(S->np_peak > 0 ? S->np_peak : 1); /* at the run's largest count */
    t->floor_ns = t->bw > 0 ? t->bytes / t->bw * 1e9 : 0.0;
}

static void json_phases(FILE *m, const char *key, double total, const double *ns)
{
    fprintf(m, "  \"%s\": {\"total\": %.6g", key, total);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(m, ", \"%s\": %.6g", phase_name[p], ns[p]);
    fprintf(m, "},\n");
}

static void timing_json(const sim *S, const timing *t, FILE *m)
{
    const double total = t->per_cell ? t->total_cell : t->total_part;
    fprintf(m, "{\n  \"version\": \"%s\",\n  \"commit\": \"%s\",\n", EMPIC_VERSION,
            empic_commit());
    fprintf(m, "  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"threads\": %d,\n",
            S->be->name, S->device, omp_get_max_threads());
    fprintf(m, "  \"steps\": %ld,\n  \"first_step\": %ld,\n  \"last_step\": %ld,\n", t->steps,
            S->run0.step, S->step);
    fprintf(m, "  \"particles\": %lld,\n  \"cells\": %d,\n  \"wall_s\": %.6f,\n", t->np,
            S->d.nx * S->d.ny, t->wall);
    fprintf(m, "  \"per\": \"%s\",\n", t->per_cell ? "cell-step" : "particle-step");
    if (t->per_cell)
        fprintf(m, "  \"ns_per_particle_step\": null,\n");
    else
        json_phases(m, "ns_per_particle_step", t->total_part, t->ns_part);
    json_phases(m, "ns_per_cell_step", t->total_cell, t->ns_cell);
    fprintf(m, "  \"bytes_per_%s\": %.2f,\n", t->per_cell ? "cell_step" : "particle_step",
            t->bytes);
    if (t->bw > 0) /* null: not measured (too little free memory for the probe) */
        fprintf(m, "  \"bandwidth_bytes_per_s\": %.4g,\n", t->bw);
    else
        fprintf(m, "  \"bandwidth_bytes_per_s\": null,\n");
    fprintf(m, "  \"bandwidth_floor_ns\": %.6g,\n  \"bandwidth_fraction\": %.4f,\n",
            t->floor_ns, total > 0 && t->floor_ns > 0 ? t->floor_ns / total : 0.0);
    fprintf(m, "  \"memory_bytes_per_particle\": %.2f,\n", t->mem);
    long long relaid = 0; /* segment re-layouts after a cluster overflowed (this rank) */
    for (int s = 0; s < S->nsp; s++)
        relaid += S->sp[s].rearrangements;
    fprintf(m, "  \"rearrangements\": %lld,\n", relaid);
    fprintf(m, "  \"transport\": \"%s\",\n", transport_of(S));
    if (S->st.simd)
        fprintf(m, "  \"cpu_simd\": \"%s\",\n", S->st.simd);
    else
        fprintf(m, "  \"cpu_simd\": null,\n");
    rebalance_json(S, m);
    fprintf(m, "  \"ranks\": %d,\n  \"rank_particles\": {\"min\": %.0f, \"max\": %.0f},\n"
               "  \"rank_phase_s\": {\"min\": %.6g, \"max\": %.6g},\n"
               "  \"rank_exchange_s\": {\"min\": %.6g, \"max\": %.6g},\n",
            t->ranks, t->np_min, t->np_max, t->busy_min, t->busy_max, t->ex_min, t->ex_max);
    fprintf(m, "  \"peak_rss_bytes\": {\"rank0\": %.0f", t->rss0);
    if (t->rss_max >= 0)
        fprintf(m, ", \"others_min\": %.0f, \"others_max\": %.0f}\n}\n", t->rss_min, t->rss_max);
    else
        fprintf(m, ", \"others_min\": null, \"others_max\": null}\n}\n");
}

static void timing_table(const sim *S, const timing *t)
{
    const double *ns = t->per_cell ? t->ns_cell : t->ns_part;
    const double total = t->per_cell ? t->total_cell : t->total_part;
    const char *unit = t->per_cell ? "cell" : "particle";
    printf("\n%-9s %12s %8s\n", "phase", t->per_cell ? "ns/cell-step" : "ns/part-step",
           "share");
    for (int p = 0; p < PH_COUNT; p++)
        printf("%-9s %12.3f %7.1f%%\n", phase_name[p], ns[p],
               total > 0 ? 100.0 * ns[p] / total : 0.0);
    if (t->bw > 0)
        printf("%-9s %12.3f %7.1f%%   (%.0f B/%s-step; bandwidth floor %.3f ns = %.1f%%"
               " of the time)\n",
               "total", total, 100.0, t->bytes, unit, t->floor_ns,
               total > 0 ? 100 * t->floor_ns / total : 0.0);
    else
        printf("%-9s %12.3f %7.1f%%   (%.0f B/%s-step; bandwidth not measured: too little free"
               " memory for the probe)\n", "total", total, 100.0, t->bytes, unit);
    if (t->ranks > 1)
        printf("exchange with the neighbour ranks (%s): %.3f to %.3f s per rank\n",
               transport_of(S), t->ex_min, t->ex_max);
    double sum = 0.0;
    for (int p = 0; p < PH_OTHER; p++)
        sum += ns[p];
    if (sum > 1.001 * total) /* a device backend runs the field phase beside the sort */
        printf("the phases overlap (they add up to %.0f%% of the time)\n", 100.0 * sum / total);
    printf("wall %.2f s for %ld steps", t->wall, t->steps);
    if (S->run0.step > 0)
        printf(" (%ld to %ld, after the restart)", S->run0.step, S->step);
    printf(" on %s; output in %s/\n", S->device, S->d.output);
}

int report_close(sim *S)
{
    char fin[DECK_PATH_MAX + 64];
    int bad = 0;
    if (S->energy) { /* a failure here still leaves timing.json and the table to write */
        out_path(S, fin, sizeof fin, "energy.csv");
        bad = fileio_finish(S->energy, fin);
        S->energy = NULL;
    }
    timing t;
    timing_measure(S, &t);
    if (comm_rank() != 0)
        return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    timing_json(S, &t, m);
    fclose(m);
    out_path(S, fin, sizeof fin, "timing.json");
    bad |= fileio_sync_all(S->d.output); /* the dumps (fileio_write_replace) to disk */
    int rc = fileio_write_atomic(fin, text, len) | bad;
    free(text);
    if (!S->quiet)
        timing_table(S, &t);
    return rc;
}

static const char *const SIDES[4] = {"xmin", "xmax", "ymin", "ymax"};

/* Per laser: lambda0, omega0/omega_p, n_c, a0 and intensity, peak field, duration, w0, and
 * the angle of incidence of a tilted one. */
static void scales_lasers(const deck *d, FILE *o, const out_units *u)
{
    const double um = u->length * 1e6, fs = u->time * 1e15;
    for (int k = 0; k < d->nlasers; k++) {
        const deck_laser *l = &d->lasers[k];
        const double lambda = units_lambda_um(l->omega0, d->n0);
        fprintf(o, "# laser %d: lambda0 = %.4g um, omega0 = %.6g omega_p, critical density "
                   "n_c = %.6g n0 = %.4g cm^-3, a0 = %.4g, I = %.4g W/cm^2 (%s),\n#   peak E = "
                   "a0 omega0 E0 = %.4g V/m, duration (FWHM of the field) = %.6g/omega_p = "
                   "%.4g fs, w0 = %.6g c/omega_p = %.4g um\n",
                k, lambda, l->omega0, l->omega0 * l->omega0, l->omega0 * l->omega0 * d->n0,
                l->a0, units_intensity(l->a0, lambda, l->circular),
                l->circular ? "circular" : "linear", l->a0 * l->omega0 * u->e, l->duration,
                l->duration * fs, l->w0, l->w0 * um);
        if (l->angle != 0.0)
            fprintf(o, "#   angle of incidence %g degrees from the %s normal (toward +%c), "
                       "transverse wavelength on the boundary lambda0/|sin| = %.4g um\n",
                    l->angle, SIDES[l->boundary & 3], l->boundary >= SIDE_YMIN ? 'x' : 'y',
                    lambda / fabs(sin(l->angle * (3.14159265358979323846 / 180.0))));
    }
}

/* The external fields' components that are formulas, with how the run evaluates each
 * (extfield.h). */
static void scales_external(const deck *d, FILE *o)
{
    for (int m = 0; m < 6; m++) {
        formula *f = formula_new(d->ext[m], 1, NULL, 0);
        const int v = f ? formula_vars(f) : 0;
        formula_free(f);
        if (!v) /* a number, or a formula of constants */
            continue;
        const int space = v & (FORMULA_X | FORMULA_Y);
        fprintf(o, "# external %c%c = %s: %s, evaluated %s\n", "EB"[m / 3], "xyz"[m % 3],
                d->ext[m], space ? "sampled at its Yee points" : "uniform",
                v & FORMULA_T ? (space ? "at every step (the whole array, copied to a GPU)"
                                       : "at every step")
                : v & FORMULA_X && d->window_enabled ? "once, and its new column at each "
                                                       "window shift"
                                                     : "once");
    }
}

/* Per species: its density scale in n0, cm^-3 and n_c, its temperature in keV. */
static void scales_species(const deck *d, FILE *o)
{
    const double nc = d->nlasers > 0 ? d->lasers[0].omega0 * d->lasers[0].omega0 : 0;
    for (int s = 0; s < d->nspecies; s++) {
        const deck_species *sp = &d->species[s];
        const double mc2 = sp->mass * units_mc2_eV() * 1e-3; /* keV */
        fprintf(o, "# species %s: n = %.6g n0 = %.4g cm^-3", sp->name, sp->n, sp->n * d->n0);
        if (nc > 0)
            fprintf(o, " = %.4g n_c", sp->n / nc);
        fprintf(o, "%s, temperature m c^2 u_th^2 = [%.4g, %.4g, %.4g] keV\n",
                sp->profile == PROFILE_UNIFORM ? "" : " (times the profile)",
                mc2 * sp->uth[0] * sp->uth[0], mc2 * sp->uth[1] * sp->uth[1],
                mc2 * sp->uth[2] * sp->uth[2]);
    }
}

void report_scales(const deck *d, FILE *o)
{
    out_units u;
    h5out_units(d->n0, &u);
    const double um = u.length * 1e6, fs = u.time * 1e15;
    const int nc = d->nlasers > 0 && d->lasers[0].omega0 == 1.0; /* n0 from lambda0 */
    fprintf(o, "# SI scales for n0 = %.6g cm^-3%s: omega_p = %.4g rad/s, 1/omega_p = %.4g fs, "
               "c/omega_p = %.4g um,\n#   E0 = m_e c omega_p/e = %.4g V/m, "
               "B0 = m_e omega_p/e = %.4g T\n",
            d->n0, nc ? " (the critical density of laser 0)" : "", 1.0 / u.time, fs, um, u.e,
            u.b);
    fprintf(o, "# box %.4g x %.4g um (cells %.4g x %.4g nm), dt = %.4g fs, %ld steps = %.4g fs\n",
            d->nx * d->dx * um, d->ny * d->dy * um, d->dx * um * 1e3, d->dy * um * 1e3,
            d->dt * fs, d->steps, d->steps * d->dt * fs);
    scales_lasers(d, o, &u);
    scales_species(d, o);
    scales_external(d, o);
}
