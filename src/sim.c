/* sim.c - simulation setup and the PIC time cycle (DESIGN §3) over either backend. */
#include "sim.h"
#include "bnd.h"
#include "checkpoint.h"
#include "empic.h"
#include "guard.h"
#include "insitu.h"
#include "lasers.h"
#include "output.h"
#include "push.h"
#include "report.h"
#include "sort.h"
#ifdef EMPIC_CUDA
#include "../cuda/gpu.h"
#endif

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int use_gpu(const sim *S) { return S->backend == BACKEND_CUDA; }

static int resolve_backend(sim *S)
{
    int want = S->d.backend;
#ifdef EMPIC_CUDA
    int have = gpu_available(S->device, sizeof S->device);
#else
    int have = 0;
#endif
    if (want == BACKEND_CUDA && !have) {
#ifdef EMPIC_CUDA
        empic_report(S->d.file, 0, "backend \"cuda\" asked for, but no usable CUDA device found");
#else
        empic_report(S->d.file, 0, "backend \"cuda\" asked for, but this empic was built "
                                   "without CUDA (make CUDA=1 with nvcc installed)");
#endif
        return -1;
    }
    S->backend = (want == BACKEND_CPU || !have) ? BACKEND_CPU : BACKEND_CUDA;
    if (S->backend == BACKEND_CPU)
        report_cpu_name(S->device, sizeof S->device);
    return 0;
}

int sim_init(sim *S, const deck *d, int quiet) { return sim_init_from(S, d, quiet, NULL); }

int sim_init_from(sim *S, const deck *d, int quiet, const char *checkpoint)
{
    char *rows = NULL; /* energy.csv rows before the checkpoint's step */
    memset(S, 0, sizeof *S);
    S->d = *d;
    S->quiet = quiet;
    if (resolve_backend(S))
        return -1;
    clusters_init(&S->cl, &S->d); /* deck_load checked the split */
    emf_init(&S->f, &S->d);
    window_init(&S->win, &S->d);
    S->nsp = S->d.nspecies;
    for (int a = 0; a < 3; a++) {
        S->ext_e[a] = (float)S->d.ext_E[a];
        S->ext_b[a] = (float)S->d.ext_B[a];
    }
    if (checkpoint) {
        if (checkpoint_load(S, checkpoint, &rows))
            return -1;
    } else {
        for (int s = 0; s < S->nsp; s++)
            species_init(&S->sp[s], &S->d, s, &S->cl);
        /* E(0) from the initial charge so that div E = rho holds from the start (a box with
         * a non-periodic side starts from E = 0: see emf_poisson) */
        sim_rho(S, NULL);
        emf_poisson(&S->f, S->f.rho);
        double q = emf_gauss_max(&S->f, S->f.rho);
        if (!quiet && S->f.fb && q > 1e-6)
            fprintf(stderr, "empic: note: the box is not periodic and the initial plasma is "
                            "not neutral (max |rho| = %.3g): E starts at 0, so Gauss's law "
                            "is off by that charge from the start (gauss_max)\n", q);
        for (int s = 0; s < S->nsp; s++)
            push_half_back(&S->sp[s], &S->f, &S->cl, S->ext_e, S->ext_b);
    }
#ifdef EMPIC_CUDA
    if (use_gpu(S) && gpu_init(S)) {
        free(rows);
        return -1;
    }
#endif
    if (report_open(S)) {
        free(rows);
        return -1;
    }
    checkpoint_energy_resume(S, rows);
    return 0;
}

void sim_free(sim *S)
{
    writer_wait(&S->out);
    if (S->energy) /* a run that stopped before report_close */
        fclose(S->energy);
#ifdef EMPIC_CUDA
    if (use_gpu(S))
        gpu_free(S);
#endif
    for (int s = 0; s < S->nsp; s++)
        species_free(&S->sp[s]);
    emf_free(&S->f);
    clusters_free(&S->cl);
    free(S->rho_sp);
    deck_free(&S->d);
}

long long sim_particles(const sim *S)
{
    long long n = 0;
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].cfg->immobile)
            n += S->sp[s].np;
    return n;
}

void sim_rho(sim *S, float *per)
{
    emf *f = &S->f;
    emf_zero(f, f->rho);
    for (int s = 0; s < S->nsp; s++) {
        float *r = per ? per + (size_t)s * f->size : f->rho;
        if (per)
            emf_zero(f, r);
        push_rho_cpu(&S->sp[s], f, &S->cl, r);
        if (per) { /* each species' own density, folded and filtered like J */
            emf_guard_fold(f, r);
            emf_filter(f, r);
            for (size_t k = 0; k < f->size; k++)
                f->rho[k] += r[k];
        }
    }
    if (!per) { /* all species deposited together: fold and filter once */
        emf_guard_fold(f, f->rho);
        emf_filter(f, f->rho);
    }
    emf_guard_fill(f, f->rho);
}

/* Field and particle dumps and particle tracks of the current step (fields at t = step dt),
 * then the phase-space histograms due (all of them when final). */
void sim_wait_writes(sim *S)
{
    if (writer_wait(&S->out))
        S->io_failed = 1;
}

void sim_fetch(sim *S)
{
    sim_wait_writes(S);
#ifdef EMPIC_CUDA
    if (use_gpu(S)) {
        gpu_fetch_fields(S, 0);
        gpu_fetch_particles(S);
    }
#endif
}

static void dump(sim *S, int fields, int parts, int tracks, int final)
{
    sim_wait_writes(S);
    if (S->io_failed)
        return; /* the run stops after this step (guard_after_step) */
    if (insitu_phasespace(S, final))
        S->io_failed = 1;
    if (S->io_failed || (!fields && !parts && !tracks))
        return;
    output_frame fr = {.d = &S->d, .f = &S->f, .sp = S->sp, .nspecies = S->nsp, .cl = &S->cl,
                       .step = S->step, .t = S->step * S->d.dt, .x0 = S->win.cells * S->d.dx,
                       .particles = 1, .tracks = 1};
    /* the GPU copies only what is written: all particles for a particle dump, else only the
     * tracked ones; the charge densities of a field dump are deposited on the device */
#ifdef EMPIC_CUDA
    if (use_gpu(S) && parts) {
        gpu_fetch_particles(S);
    } else if (use_gpu(S) && tracks) {
        species compact[DECK_MAX_SPECIES];
        fr.sp = gpu_fetch_tracked(S, compact);
        int rc = output_dump(S->d.output, &fr);
        gpu_release_tracked(S, compact);
        if (rc)
            S->io_failed = 1;
        fr.sp = S->sp;
        tracks = 0;
    }
#endif
    if (tracks && output_dump(S->d.output, &fr))
        S->io_failed = 1;
    if (S->io_failed || (!fields && !parts))
        return;
    if (!S->rho_sp)
        S->rho_sp = empic_alloc((size_t)S->nsp * S->f.size * sizeof(float), "charge dumps");
    if (use_gpu(S)) {
#ifdef EMPIC_CUDA
        gpu_fetch_fields(S, 1);
#endif
    } else {
        sim_rho(S, S->rho_sp);
    }
    const float *per[DECK_MAX_SPECIES];
    for (int s = 0; s < S->nsp; s++)
        per[s] = S->rho_sp + (size_t)s * S->f.size;
    fr.rho = S->f.rho;
    fr.rho_species = per;
    fr.fields = fields;
    fr.particles = parts;
    fr.tracks = 0;
    /* on the GPU the host copies stay as they are until the next fetch: written meanwhile */
    if (use_gpu(S) ? writer_start(&S->out, S->d.output, &fr) : output_dump(S->d.output, &fr))
        S->io_failed = 1;
}

static int due(long every, long step) { return every > 0 && step % every == 0; }

/* B -= dt/2 curl E on the active backend (step 1 of the cycle, or the final half step). */
static void b_half(sim *S)
{
    double t0 = omp_get_wtime();
    if (use_gpu(S)) {
#ifdef EMPIC_CUDA
        gpu_b_half(S);
#endif
    } else {
        emf_b_half(&S->f);
        S->phase_s[PH_FIELD] += omp_get_wtime() - t0;
    }
}

void sim_step(sim *S)
{
    const deck *d = &S->d;
    double t0 = omp_get_wtime(), kin[DECK_MAX_SPECIES] = {0};
    const int want_e = due(d->energy_every, S->step);
    double fe = 0, fb = 0, gauss = 0;

    /* 1. B(n) = B(n-1/2) - dt/2 curl E(n) */
    b_half(S);
    /* diagnostics at t = n dt (E, B, x at n; kinetic energy from the push below) */
    double td = omp_get_wtime();
    dump(S, due(d->fields_every, S->step), due(d->particles_every, S->step),
         due(d->tracks_every, S->step), 0);
    if (want_e) {
        if (use_gpu(S)) {
#ifdef EMPIC_CUDA
            gpu_field_diag(S, &fe, &fb, &gauss);
#endif
        } else {
            sim_rho(S, NULL);
            fe = emf_energy_e(&S->f);
            fb = emf_energy_b(&S->f);
            gauss = emf_gauss_max(&S->f, S->f.rho);
        }
    }
    S->phase_s[PH_OTHER] += omp_get_wtime() - td;

    /* 2-3. push, move, deposit J(n+1/2) */
    if (use_gpu(S)) {
#ifdef EMPIC_CUDA
        gpu_particles(S, want_e, kin);
        gpu_sort_prepare(S);
        gpu_fields_rest(S);
        /* the moving window, as on the CPU below: shift, drop and sort, inject */
        int moved = window_due(&S->win, S->f.step * d->dt, d->dx);
        if (moved)
            gpu_window_shift(S);
        gpu_sort(S);
        if (moved)
            gpu_window_inject(S);
#endif
    } else {
        emf *f = &S->f;
        for (int c = 0; c < 3; c++)
            emf_zero(f, f->j[c]);
        for (int s = 0; s < S->nsp; s++) {
            push_stats st = {0};
            push_cpu(&S->sp[s], f, &S->cl, S->ext_e, S->ext_b, want_e, &st);
            kin[s] = st.kinetic;
            S->phase_s[PH_PUSH] += st.t_push;
            S->phase_s[PH_DEPOSIT] += st.t_deposit;
        }
        /* 4-6. B(n+1/2), fold and filter J, E(n+1) */
        double tf = omp_get_wtime();
        emf_b_half(f);
        emf_current_finish(f);
        emf_e_advance(f);
        double ts = omp_get_wtime();
        S->phase_s[PH_FIELD] += ts - tf;
        /* the moving window: fields and particle cells one cell back when due */
        int moved = window_due(&S->win, f->step * d->dt, d->dx);
        if (moved)
            window_shift(&S->win, f, S->sp, S->nsp, &S->cl);
        /* 7. incremental sort, particles that left the box dropped first */
        for (int s = 0; s < S->nsp; s++)
            if (!S->sp[s].cfg->immobile || moved) {
                bnd_drop(&S->sp[s], &S->cl, moved);
                sort_clusters(&S->sp[s], &S->cl);
            }
        if (moved)
            window_inject(&S->win, S->sp, S->nsp, d, &S->cl);
        S->phase_s[PH_SORT] += omp_get_wtime() - ts;
    }
    if (want_e) {
        S->en_step = S->step;
        S->en_e = fe;
        S->en_b = fb;
        S->en_gauss = gauss;
        memcpy(S->en_kin, kin, sizeof S->en_kin);
        report_energy_row(S, fe, fb, kin, gauss);
    }
    S->particle_steps += sim_particles(S);
    S->step++;
    S->wall_s += omp_get_wtime() - t0;
}

int sim_run(sim *S)
{
    const long n = S->d.steps;
    int stop = 0; /* guards, checkpoints and signals: guard.h */
    guard_signals(1);
    while (S->step < n && !stop) {
        sim_step(S);
        report_progress(S, 0);
        stop = guard_after_step(S);
    }
    guard_signals(0);
    sim_wait_writes(S);
    if (stop) {
        report_progress(S, 1);
        report_close(S);
        guard_stop_message(S, stop);
        return stop;
    }
    /* final dumps at t = steps dt: B advanced to the same time as E first */
    int fields = S->d.fields_every > 0, parts = S->d.particles_every > 0;
    int tracks = S->d.tracks_every > 0, hists = 0;
    for (int k = 0; k < S->d.nphasespace; k++)
        hists |= S->d.phasespace[k].every > 0;
    if (fields || parts || tracks || hists) {
        b_half(S);
        dump(S, fields, parts, tracks, 1);
        sim_wait_writes(S);
    }
    report_progress(S, 1);
    int rc = report_close(S);
    if (S->io_failed)
        guard_stop_message(S, -1);
    return S->io_failed ? -1 : rc;
}
