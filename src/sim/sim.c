/* sim.c - simulation setup and the PIC time cycle over the backend's table (backend.h). */
#include "sim.h"
#include "checkpoint.h"
#include "ebalsum.h"
#include "collide.h"
#include "empic.h"
#include "column.h"
#include "average.h"
#include "fieldavg.h"
#include "comm.h"
#include "fbnd.h"
#include "h5par.h"
#include "health.h"
#include "insitu.h"
#include "lasers.h"
#include "output.h"
#include "probes.h"
#include "rebalance.h"
#include "cpu_particles.h"
#include "report.h"
#include "particle.h"

#include <math.h>
#include <signal.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sim_init(sim *S, const deck *d, int quiet) { return sim_init_from(S, d, quiet, NULL); }

/* The deck's backend. */
static int choose_backend(sim *S)
{
    if (!(S->be = backend_choose(S->d.backend, S->d.file, S->device, sizeof S->device)))
        return -1;
    S->backend = S->be->kind;
    return 0;
}

/* The fields of this rank's share of the clusters. */
static void share_fields(sim *S)
{
    const clusters *cl = &S->cl;
    const int lo[2] = {cl->x0[cl->cx0], cl->y0[cl->cy0]};
    const int hi[2] = {cl->x0[cl->cx1], cl->y0[cl->cy1]};
    emf_init(&S->f, &S->d, lo, hi, cl->nb);
}

/* The clusters and this rank's share of them and of the fields (design.md §12). A restart
 * on another number of ranks than its checkpoint's parallel.ranks gets the split for the
 * grid. */
static int share(sim *S, int restarting)
{
    deck *d = &S->d;
    clusters_init(&S->cl, d); /* deck_load checked the split */
    if (restarting && d->ranks[0] > 0 && d->ranks[0] * d->ranks[1] != comm_size()) {
        if (!S->quiet)
            printf("empic: the checkpoint's run had parallel.ranks = [%d, %d]; continuing on "
                   "%d ranks split for the grid\n", d->ranks[0], d->ranks[1], comm_size());
        d->ranks[0] = d->ranks[1] = 0;
    }
    if (clusters_decompose(&S->cl, d, comm_size(), comm_rank(), S->backend == BACKEND_CUDA))
        return -1;
    share_fields(S);
    return 0;
}

int sim_init_from(sim *S, const deck *d, int quiet, const char *checkpoint)
{
    char run[DECK_PATH_MAX] = ""; /* the run a checkpoint continues */
    memset(S, 0, sizeof *S);
    S->d = *d;
    S->quiet = quiet || comm_rank() != 0; /* rank 0 speaks for the run */
    if (choose_backend(S) || share(S, checkpoint != NULL))
        return -1;
    int *load = NULL; /* a fresh run's initial load per cluster, balanced before it loads */
    if (!checkpoint && S->d.balance_every > 0 && comm_size() > 1) {
        load = empic_alloc((size_t)S->d.nspecies * S->cl.n * sizeof(int), "rebalance");
        if (rebalance_start(S, load)) {
            emf_free(&S->f);
            share_fields(S);
        }
    }
    S->f.fb = fbnd_new(&S->f, &S->d);
    window_init(&S->win, &S->d);
    S->nsp = S->d.nspecies;
    pic_state *st = &S->st;
    st->f = &S->f;
    st->cl = &S->cl;
    st->sp = S->sp;
    st->nsp = S->nsp;
    st->window = S->win.enabled;
    st->reg = fbnd_region(&S->d);
    st->nslot = S->cl.ncx > S->cl.ncy ? S->cl.ncx : S->cl.ncy;
    st->nterm = ebal_terms(S->d.nlasers);
    S->bal_n = (size_t)st->nterm * st->nslot + 2 * (size_t)S->nsp * S->cl.n;
    st->flow = empic_calloc(S->bal_n, sizeof(double), "energy balance");
    st->lost = st->flow + (size_t)st->nterm * st->nslot;
    S->gain = st->lost + (size_t)S->nsp * S->cl.n;
    extfield_init(&S->ext, &S->d, &S->f, &st->ext);
    st->avg_q = S->d.avg_every > 0 ? S->d.avg_quantities : 0;
    if (st->avg_q) /* the averaged dumps' sums (a restart inside a window reads them) */
        st->avg = empic_calloc((size_t)avg_arrays(st->avg_q) * S->f.size, sizeof(double),
                               "averaged field sums");
    if (checkpoint) {
        if (checkpoint_load(S, checkpoint))
            return -1;
        ebalsum_own(S);
        checkpoint_run_dir(checkpoint, run, sizeof run);
        S->f.acc_scale = species_acc_scale(S->sp, S->nsp, &S->f);
    } else {
        for (int s = 0; s < S->nsp; s++)
            species_init(&S->sp[s], &S->d, s, &S->cl, load ? load + (size_t)s * S->cl.n : NULL);
        free(load);
        S->f.acc_scale = species_acc_scale(S->sp, S->nsp, &S->f);
        /* E(0) from the initial charge so that div E = rho holds from the start (a box with
         * a non-periodic side starts from E = 0: see emf_poisson); the host state is set up
         * by the CPU's functions whichever backend then takes it over */
        cpu_backend.rho(NULL, st, NULL);
        emf_poisson(&S->f, S->f.rho);
        double q = emf_gauss_max(&S->f, S->f.rho);
        if (!quiet && S->f.fb && q > 1e-6)
            fprintf(stderr, "empic: note: the box is not periodic and the initial plasma is "
                            "not neutral (max |rho| = %.3g): E starts at 0, so Gauss's law "
                            "is off by that charge from the start (gauss_max)\n", q);
    }
    /* the external fields at E's time level (t = 0, or the checkpoint's) */
    extfield_update(&S->ext, S->f.step, S->win.cells, &st->ext);
    for (int s = 0; !checkpoint && s < S->nsp; s++)
        particles_half_back(&S->sp[s], &S->f, &S->cl, &st->ext);
    st->window_cells = S->win.cells;
    if (checkpoint) /* the split for the grid, balanced before the backend takes it */
        rebalance_check(S, 1);
    sim_note_peak(S);
    health_energy_ref(S); /* the host state, before a device backend takes it over */
    /* rank 0 alone creates the files: every rank learns whether it could */
    int bad = S->be->open(st, &S->be_ctx) || report_open(S, run[0] ? run : NULL);
    /* the run's tracks file: a fresh run's new, a restart's continued from its step */
    if (!bad && comm_rank() == 0 && S->d.tracks_every > 0)
        bad = output_tracks_begin(S->d.output, S->step, checkpoint != NULL);
    /* the field probes: this rank's points; their file, as the tracks file */
    if (!bad)
        bad = probes_open(S, checkpoint != NULL);
    comm_max_int(&bad, 1);
    if (bad)
        return -1;
    return 0;
}

void sim_free(sim *S)
{
    writer_wait(&S->out);
    probes_free(S);
    column_ahead_close(&S->ahead);
    if (S->energy) /* a run that stopped before report_close */
        fclose(S->energy);
    if (S->be_ctx)
        S->be->close(S->be_ctx, &S->st);
    for (int s = 0; s < S->nsp; s++)
        species_free(&S->sp[s]);
    fbnd_free(S->f.fb);
    extfield_free(&S->ext);
    emf_free(&S->f);
    clusters_free(&S->cl);
    rebalance_free(S);
    free(S->rho_sp);
    free(S->ext_dump);
    free(S->avg_dump);
    free(S->st.avg);
    free(S->st.flow);
    free(S->bal_ck);
    deck_free(&S->d);
}

void sim_wait_writes(sim *S)
{
    if (writer_wait(&S->out))
        S->io_failed = 1;
}

void sim_fetch(sim *S)
{
    sim_ionize_end(S);
    sim_wait_writes(S);
    S->be->finish(S->be_ctx, &S->st);
    S->be->fetch_fields(S->be_ctx, &S->st, NULL);
    S->be->fetch_particles(S->be_ctx, &S->st);
}

/* 1 when an output file failed on any rank: every rank then skips the rest of the step's
 * output alike. */
static int failed(sim *S)
{
    comm_max_int(&S->io_failed, 1);
    return S->io_failed;
}

/* The external fields at the dump's time into S->ext_dump, where a field dump writes them
 * (E_ext, B_ext: output.c); else NULL. */
static float *ext_for_dump(sim *S, int fields)
{
    const deck *d = &S->d;
    if (!fields || !((extfield_present(d, 0) && (d->fields_quantities & FQ_E)) ||
                     (extfield_present(d, 1) && (d->fields_quantities & FQ_B))))
        return NULL;
    if (!S->ext_dump)
        S->ext_dump = empic_alloc(6 * S->f.size * sizeof(float), "external field dumps");
    extfield_fill(&S->st.ext, &S->f, S->ext_dump);
    return S->ext_dump;
}

/* A phase-space histogram due at this step (insitu_phasespace writes it with HDF5). */
static int hists_due(const sim *S, int final)
{
    for (int k = 0; k < S->d.nphasespace; k++) {
        const long ev = S->d.phasespace[k].every;
        if (ev > 0 && (final || S->step % ev == 0))
            return 1;
    }
    return 0;
}

/* Field and particle dumps and particle tracks of the current step (fields at t = step dt),
 * then the phase-space histograms due (all of them when final). The backend copies only
 * what is written, of this rank's share: all particles for a particle dump, else the
 * tracked ones; the charge densities of a field dump are deposited where the particles
 * live. A backend with a state of its own (the GPU) on one rank steps on while a background
 * thread writes the host copies. */
static void dump(sim *S, int fields, int parts, int tracks, int final)
{
    const backend *be = S->be;
    fieldavg_sample(S); /* the averaged dumps' sums (on the backend) */
    const int avg = fieldavg_due(&S->d, S->step);
    /* a step with nothing due leaves the background writes going (they read host copies
     * that no step changes, and only they use HDF5 meanwhile); a failure they report stops
     * the run after the step (sim_after_step) */
    if (!(fields || parts || tracks || avg || hists_due(S, final))) {
        if (writer_poll(&S->out))
            S->io_failed = 1;
        return;
    }
    sim_wait_writes(S);
    if (failed(S))
        return; /* the run stops after this step (sim_after_step) */
    if (insitu_phasespace(S, final))
        S->io_failed = 1;
    if (failed(S) || (!fields && !parts && !tracks && !avg))
        return;
    /* one rank: a background thread writes the host copies, which stay untouched until the
     * next fetch; several: every rank writes its share into the one file with the others,
     * here (MPI is called on this thread alone) */
    const int shared = h5par_shared(), own = !be->on_host && !shared;
    const output_frame at = {.d = &S->d, .f = &S->f, .sp = S->sp, .nspecies = S->nsp,
                             .cl = &S->cl, .step = S->step, .t = S->step * S->d.dt,
                             .x0 = S->win.cells * S->d.dx, .particles = 1, .tracks = 1,
                             .shared = shared};
    output_frame fr[WRITER_FRAMES];
    const float *per[DECK_MAX_SPECIES];
    int n = 0;
    if (parts)
        be->fetch_particles(S->be_ctx, &S->st);
    if (tracks) { /* all particles when fetched, else the tracked ones alone */
        fr[n] = at;
        if (!parts) {
            fr[n].sp = be->fetch_tracked(S->be_ctx, &S->st, S->out.tracked);
            S->out.release = be->release_tracked; /* by writer_wait, once written */
            S->out.release_ctx = S->be_ctx;
        }
        n++;
    }
    if (fields || parts || avg) {
        fr[n] = at;
        if (fields || parts) {
            if (!S->rho_sp)
                S->rho_sp = empic_alloc((size_t)S->nsp * S->f.size * sizeof(float),
                                        "charge dumps");
            be->fetch_fields(S->be_ctx, &S->st, S->rho_sp);
            for (int s = 0; s < S->nsp; s++)
                per[s] = S->rho_sp + (size_t)s * S->f.size;
            fr[n].rho = S->f.rho;
            fr[n].rho_species = per;
        }
        fr[n].ext = ext_for_dump(S, fields);
        fr[n].avg = avg ? fieldavg_means(S) : NULL;
        fr[n].fields = fields;
        fr[n].particles = parts;
        fr[n].tracks = 0;
        n++;
    }
    if (own) {
        if (writer_start(&S->out, S->d.output, fr, n))
            S->io_failed = 1;
        return;
    }
    for (int k = 0; k < n && !S->io_failed; k++)
        if (output_dump(S->d.output, &fr[k]))
            S->io_failed = 1;
    sim_wait_writes(S); /* releases the tracked particles */
}

static int due(long every, long step) { return every > 0 && step % every == 0; }

/* The balance terms of an energy row at t = n dt (what crossed up to it), in fixed order. */
static void balance(sim *S, ebal_row *r)
{
    const pic_state *st = &S->st;
    const double *a = ebalsum_all(S);
    const int ns = st->nslot, ncl = S->cl.n;
    memset(r->out, 0, sizeof r->out);
    r->in = 0.0;
    for (int k = 0; k < st->nterm; k++) {
        double v = 0.0;
        for (int sl = 0; sl < ns; sl++)
            v += a[(size_t)k * ns + sl];
        if (k < EBAL_SIDES)
            r->out[k] = v;
        else
            r->in += v;
    }
    const double *lost = a + (size_t)st->nterm * ns, *gain = lost + (size_t)S->nsp * ncl;
    for (int s = 0; s < S->nsp; s++) {
        double l = 0.0, g = 0.0;
        for (int c = 0; c < ncl; c++) {
            l += lost[(size_t)s * ncl + c];
            g += gain[(size_t)s * ncl + c];
        }
        r->lost[s] = kinetic_total(l - g, S->sp[s].m, S->d.dx, S->d.dy);
    }
}

/* Dumps and energies at t = n dt (E, B and x at n). */
static void diagnose(sim *S, int want_e, double *fe, double *fb, double *gauss, ebal_row *r)
{
    const deck *d = &S->d;
    double t0 = omp_get_wtime();
    dump(S, due(d->fields_every, S->step), due(d->particles_every, S->step),
         due(d->tracks_every, S->step), 0);
    if (!S->io_failed)
        probes_sample(S); /* E(n), B(n) (+ the external fields), J(n-1/2) */
    if (want_e) {
        double fbal[2];
        S->be->field_diag(S->be_ctx, &S->st, fe, fb, fbal, gauss);
        r->layers = fbal[0];
        r->stagger = fbal[1];
        balance(S, r);
    }
    S->st.phase_s[PH_OTHER] += omp_get_wtime() - t0;
}

/* The lab column of the grid's last cell column. */
static long front_column(const sim *S) { return S->d.nx - 1 + S->win.cells; }

/* The moving window has shifted one cell: fresh plasma in the new last column, generated
 * on the host with the initial load's RNG keys (so identical on both backends; column.h),
 * or collected from the thread that made it ahead. */
static void inject(sim *S)
{
    double t0 = omp_get_wtime();
    const long ig = front_column(S);
    column col, *c = &col;
    if (!column_collect(&S->ahead, ig, c))
        column_make(c, S->sp, S->nsp, &S->d, &S->cl, ig);
    for (int s = 0; s < S->nsp; s++) {
        S->sp[s].np += c->n[s];
        if (c->col[s].bad.found && !S->sp[s].bad.found) /* sim_after_step stops the run */
            S->sp[s].bad = c->col[s].bad;
        for (int cy = 0; cy < S->cl.ncy; cy++) { /* the energy the fresh plasma brings */
            const int cl = S->cl.ncx - 1 + S->cl.ncx * cy;
            if (S->cl.own[cl])
                S->gain[(size_t)s * S->cl.n + cl] += c->energy[s * S->cl.ncy + cy];
        }
    }
    S->st.phase_s[PH_SORT] += omp_get_wtime() - t0;
    S->be->inject(S->be_ctx, &S->st, c->col, c->add);
    if (!S->be->on_host) /* the next one while the device steps */
        column_ask(&S->ahead, S->sp, S->nsp, &S->d, &S->cl, ig + 1);
    column_free(c);
}

/* The electrons of the step's ionization counted into their species (this rank's), the
 * events of all ranks into ist when sums (an energy row's). */
static void ionize_count(sim *S, int sums, ionize_stats *ist)
{
    long long ev[DECK_MAX_SPECIES];
    for (int s = 0; s < S->nsp; s++) {
        ev[s] = S->sp[s].ion ? ist[s].events : 0;
        if (S->sp[s].ion)
            S->sp[S->sp[s].ion_to].np += ev[s];
    }
    if (sums) {
        comm_sum_ll(ev, (size_t)S->nsp);
        for (int s = 0; s < S->nsp; s++)
            ist[s].events = ev[s];
    }
}

/* Field ionization of the step (design.md §14): after the sort and the window's injection,
 * E(n+1) and x(n+1) final; the stats of the energy row into ist (events of all ranks when
 * want_e). A device backend may leave it queued (S->ion_open) for sim_ionize_end. */
static void ionize(sim *S, int want_e, ionize_stats *ist)
{
    int any = 0;
    for (int s = 0; s < S->nsp; s++)
        any |= S->sp[s].ion != NULL;
    if (!any)
        return;
    if (S->be->ionize(S->be_ctx, &S->st, S->f.step, want_e, ist))
        ionize_count(S, want_e, ist);
    else
        S->ion_open = 1;
}

void sim_ionize_end(sim *S)
{
    if (!S->ion_open)
        return;
    ionize_stats ist[DECK_MAX_SPECIES] = {{0, 0.0, 0.0}};
    S->be->ionize_end(S->be_ctx, &S->st, ist);
    ionize_count(S, 0, ist);
    S->ion_open = 0;
}

static void energy_row(sim *S, const double *kin, double fe, double fb, double gauss,
                       const ionize_stats *ist, const ebal_row *bal)
{
    S->en_step = S->step;
    S->en_e = fe;
    S->en_b = fb;
    S->en_gauss = gauss;
    memcpy(S->en_kin, kin, sizeof S->en_kin);
    report_energy_row(S, fe, fb, kin, gauss, ist, bal);
}

/* The entries of the collisions list due at this step (every), each a fresh pairing keyed by
 * the step: a restart continues with the same random numbers. */
static void collide(sim *S)
{
    const deck *d = &S->d;
    for (int i = 0; i < d->ncollisions; i++) {
        const deck_collision *e = &d->collisions[i];
        if (S->step % e->every)
            continue;
        sim_ionize_end(S); /* the new electrons collide too */
        collide_par p = {.a = e->species[0], .b = e->species[1], .lnl = e->coulomb_log,
                         .dt = e->every * d->dt, .seed = d->seed, .entry = (unsigned)i,
                         .step = S->step, .window_cells = S->win.cells};
        collide_scale(d->n0, &p.re_kp, &p.lc_kp);
        S->be->collide(S->be_ctx, &S->st, &p);
    }
}

/* The ranks' particle-steps since the last sum into particle_steps (collective). Every
 * PUSHED_EVERY steps, at checkpoints and at the end: a sum each step would hold every rank's
 * host at the slowest one's before it may queue the next step. */
#define PUSHED_EVERY 16

static void sim_count_pushed(sim *S)
{
    long long v[2] = {S->pushed_here, S->np_here};
    comm_sum_ll(v, 2);
    S->particle_steps += v[0];
    S->np_all = v[1];
    S->pushed_here = 0;
    S->counted_to = S->step;
}

void sim_step(sim *S)
{
    const backend *be = S->be;
    void *bc = S->be_ctx;
    pic_state *st = &S->st;
    const int want_e = due(S->d.energy_every, S->step);
    double t0 = omp_get_wtime(), kin[DECK_MAX_SPECIES] = {0}, fe = 0, fb = 0, gauss = 0;
    long long dropped[DECK_MAX_SPECIES] = {0};
    ionize_stats ist[DECK_MAX_SPECIES] = {{0, 0.0, 0.0}};
    ebal_row bal;
    memset(&bal, 0, sizeof bal);

    /* 1. B(n) = B(n-1/2) - dt/2 curl E(n) */
    be->b_half(bc, st);
    /* the electrons of the last step's ionization, which a device backend kept queued so
     * that B's half step runs meanwhile */
    sim_ionize_end(S);
    /* dumps and field energies at t = n dt: E(n), B(n), x(n) */
    diagnose(S, want_e, &fe, &fb, &gauss, &bal);
    /* whether the window shifts after this step's fields (a backend may start the sort
     * right after the push when it does not) */
    const int moved = window_due(&S->win, (S->f.step + 1) * S->d.dt, S->d.dx);
    st->window_next = moved;
    /* 2-3. u(n-1/2) -> u(n+1/2) with E(n), B(n) at x(n); x(n) -> x(n+1); J(n+1/2);
     * kinetic energy at n from u(n-1/2) and u(n+1/2) */
    be->particles(bc, st, want_e, kin);
    /* 4-6. B(n+1/2) = B(n) - dt/2 curl E(n); J(n+1/2) folded, filtered;
     * E(n+1) = E(n) + dt (curl B(n+1/2) - J(n+1/2)) with boundaries and lasers */
    be->fields(bc, st);
    S->f.step++;
    /* moving window: E(n+1), B(n+1/2), x(n+1) one cell toward -x when due */
    if (moved) {
        be->window_shift(bc, st);
        st->window_cells = ++S->win.cells;
        if (!be->on_host) /* the new column made while the device works, unless it was */
            column_ask(&S->ahead, S->sp, S->nsp, &S->d, &S->cl, front_column(S));
    }
    /* 7. particles that left the box dropped; x(n+1) sorted into their clusters (those of
     * other ranks' clusters sent there: dropped counts them out of this rank) */
    be->sort(bc, st, moved, dropped);
    for (int s = 0; s < S->nsp; s++)
        S->sp[s].np -= dropped[s];
    if (moved)
        inject(S);
    /* the external fields at t = (n+1) dt: the ionization's and the next push's */
    const double t1 = omp_get_wtime();
    if (extfield_update(&S->ext, S->f.step, S->win.cells, &st->ext))
        be->ext_fields(bc, st);
    st->phase_s[PH_FIELD] += omp_get_wtime() - t1;
    /* 8. field ionization at E(n+1), x(n+1): new charge states and electrons */
    ionize(S, want_e, ist);
    /* 9. binary collisions among the particles of each cell at x(n+1), u(n+1/2) */
    collide(S);
    if (want_e)
        energy_row(S, kin, fe, fb, gauss, ist, &bal);
    sim_note_peak(S);
    S->np_here = sim_particles(S);
    S->pushed_here += S->np_here;
    S->step++;
    if (S->step % PUSHED_EVERY == 1) /* after the first step too: np_all from the start */
        sim_count_pushed(S);
    S->wall_s += omp_get_wtime() - t0;
}

/* ---------------------------------------------------------------- run policy: signals, checks,
 * checkpoints and stops after each step */

/* Signal state is process-wide by nature: the handler can only reach a static flag. */
static volatile sig_atomic_t sig_seen;
static int sig_speak; /* this process says so (rank 0: every rank gets mpirun's signal) */
#define SIG_N 4
static struct sigaction sig_old[SIG_N];
static int sig_installed;
/* SIGUSR1 and SIGUSR2: what OpenMPI's mpirun (and Slurm's --signal) forward to the ranks
 * without killing them */
static const int SIG_HANDLED[SIG_N] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
static double clock_t0 = -1; /* sim_clock_start */

void sim_clock_start(void) { clock_t0 = omp_get_wtime(); }

static void on_signal(int sig)
{
    static const char msg[] = "\nempic: signal received: stopping after this step with a "
                              "checkpoint (send it again to stop at once)\n";
    sig_seen = sig;
    if (sig_speak) {
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
    }
}

void sim_signals(int on)
{
    if (on && !sig_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sig_seen = 0;
        sig_speak = comm_rank() == 0;
        for (int k = 0; k < SIG_N; k++) {
            sigaction(SIG_HANDLED[k], &sa, &sig_old[k]);
            if (sig_old[k].sa_handler == SIG_IGN) /* e.g. SIGINT of a background job */
                sigaction(SIG_HANDLED[k], &sig_old[k], NULL);
        }
        sig_installed = 1;
    } else if (!on && sig_installed) {
        for (int k = 0; k < SIG_N; k++)
            sigaction(SIG_HANDLED[k], &sig_old[k], NULL);
        sig_installed = 0;
    }
}

int sim_signal_pending(void) { return sig_seen; }

/* A checkpoint of the whole run, every rank writing its share into the one file. */
static int write_checkpoint(sim *S)
{
    sim_ionize_end(S);
    ebalsum_all(S); /* the balance sums of all ranks into S->bal_ck, which it keeps */
    if (fieldavg_held(&S->d, S->step)) /* inside an averaging window: its sums */
        S->be->avg_fetch(S->be_ctx, &S->st);
    /* B's guards as one rank holds them: over several ranks the CUDA backend's B half steps
     * leave the outermost upper line, which nothing reads, as it was, and a checkpoint
     * keeps the guards of the box edges */
    for (int c = 0; c < 3 && comm_size() > 1; c++)
        emf_guard_fill(&S->f, S->f.b[c]);
    const double t0 = omp_get_wtime();
    const int rc = checkpoint_write(S);
    S->ckpt_s = omp_get_wtime() - t0;
    return rc;
}

/* Stop requests, in increasing priority (comm_max_int picks one for every rank). */
enum { REQ_WALL = 1000, REQ_FILE = 1001, REQ_SIG = 2000 /* + the signal */ };

/* Seconds a checkpoint of this run takes: 1.25 times the last one, else a guess from the
 * state's size at 100 MB/s. */
static double ckpt_estimate(const sim *S)
{
    if (S->ckpt_s > 0)
        return 1.25 * S->ckpt_s;
    const double bytes = 40.0 * (double)S->np_all + 80.0 * S->d.nx * (double)S->d.ny;
    return 0.2 + bytes / 1e8;
}

/* 1 when the run must checkpoint now to end before the wall-clock limit: the time so far,
 * the longest step, the checkpoint and a margin (2 % of the limit, 0.5 s to 60 s). */
static int wall_due(const sim *S)
{
    const double lim = S->d.wall_time;
    if (!(lim > 0) || clock_t0 < 0)
        return 0;
    const double margin = fmin(60.0, fmax(0.5, 0.02 * lim));
    return omp_get_wtime() - clock_t0 + S->step_max_s + ckpt_estimate(S) + margin > lim;
}

/* This rank's stop request after the step: a signal; on rank 0 also the STOP file in the
 * output folder and the wall-clock limit (not after the last step: the run ends anyway). */
static int stop_request(sim *S)
{
    const double step_s = S->wall_s - S->wall_prev;
    S->wall_prev = S->wall_s;
    S->step_max_s = step_s > S->step_max_s ? step_s : S->step_max_s;
    if (sig_seen)
        return REQ_SIG + sig_seen;
    if (comm_rank() != 0 || S->step >= S->d.steps)
        return 0;
    char path[DECK_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/STOP", S->d.output);
    if (access(path, F_OK) == 0)
        return REQ_FILE;
    return wall_due(S) ? REQ_WALL : 0;
}

/* The health checks after the step: 1 when the run must stop (reported), as when `bad`,
 * the faults of all ranks (an output file that failed was named when it failed). The energy
 * guard also checks the state a checkpoint (ckpt) would keep, so that a blown-up state never
 * replaces the last good checkpoint. */
static int unhealthy(sim *S, int ckpt, int bad)
{
    const deck *d = &S->d;
    const int copies = !S->be->on_host;
    char what[640];
    const int row = !bad && d->energy_every > 0 && S->step > 0 && S->en_step == S->step - 1;
    const char *bad_energy = row ? health_energy(S, what, sizeof what) : NULL;
    double total = S->en_e + S->en_b;
    for (int s = 0; row && s < S->nsp; s++)
        total += S->sp[s].immobile ? 0.0 : S->en_kin[s];
    const char *grown = row && !bad_energy ? health_growth(S, S->en_step, total, what,
                                                           sizeof what) : NULL;
    const long every = d->energy_every > 0 ? d->energy_every : HEALTH_EVERY;
    /* a device backend screens through the energy diagnostic and fetches only when it must */
    const int scan = bad_energy || grown || ckpt ||
                     (S->step % every == 0 && (!copies || d->energy_every <= 0));
    if (!bad && scan) {
        if (copies)
            sim_fetch(S);
        bad = health_check(S, NULL) != 0;
        if (!bad && (bad_energy || grown)) { /* the same energies on every rank */
            if (comm_rank() == 0 && bad_energy)
                empic_report(NULL, 0, "step %ld: energy diagnostic %s", S->en_step,
                             bad_energy);
            else if (comm_rank() == 0)
                empic_report(NULL, 0, "%s", grown);
            bad = 1;
        }
        comm_max_int(&bad, 1); /* every rank stops together (scan is the same on all) */
    }
    /* the state a checkpoint keeps (on the host: scan fetched it on every rank); the same
     * on every rank, as bad and ckpt are now, so the collective sums match */
    if (!bad && ckpt && S->energy_ref > 0 &&
        (grown = health_growth(S, S->step, health_energy_total(S, 0), what, sizeof what))) {
        if (comm_rank() == 0)
            empic_report(NULL, 0, "%s", grown);
        bad = 1;
    }
    return bad;
}

int sim_after_step(sim *S)
{
    const deck *d = &S->d;
    /* a request any rank saw stops every rank after this step; a fault any rank met (an
     * output file, the window's injection) too: one collective a step for both */
    int any[2] = {stop_request(S), S->io_failed || health_faults(S)};
    comm_max_int(any, 2);
    const int req = any[0];
    /* and after the last step, so that --restart --steps N can extend any run */
    const int ckpt = req || (d->checkpoint_every > 0 && (S->step % d->checkpoint_every == 0 ||
                                                         S->step == d->steps));
    /* the probe samples held in memory into their file before the checkpoint: a restart
     * continues the file from the checkpoint's step */
    if (ckpt && probes_flush(S))
        S->io_failed = 1;
    if (ckpt) { /* the flush's failure too, and the particle-steps the checkpoint keeps */
        any[1] |= S->io_failed;
        comm_max_int(&any[1], 1);
        sim_count_pushed(S);
    }
    if (unhealthy(S, ckpt, any[1]) || (ckpt && write_checkpoint(S)))
        return -1;
    S->stop_req = req;
    if (req == REQ_FILE && comm_rank() == 0) { /* acted on: the restart goes on */
        char path[DECK_PATH_MAX + 8];
        snprintf(path, sizeof path, "%s/STOP", d->output);
        unlink(path);
    }
    if (req)
        return req >= REQ_SIG ? 128 + req - REQ_SIG : SIM_STOPPED;
    if (rebalance_due(S, 0)) /* it counts the particles */
        sim_ionize_end(S);
    rebalance_check(S, 0); /* the split for the steps that follow */
    return 0;
}

static const char *signal_name(int sig)
{
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGUSR1 ? "SIGUSR1"
           : sig == SIGUSR2 ? "SIGUSR2"
                            : "a signal";
}

void sim_stop_message(const sim *S, int status)
{
    fflush(stdout); /* after the timing table */
    if (comm_rank() != 0)
        return; /* the same on every rank */
    if (status > 0) {
        char why[DECK_PATH_MAX + 160];
        if (S->stop_req == REQ_FILE)
            snprintf(why, sizeof why, "the file %s/STOP (removed)", S->d.output);
        else if (S->stop_req == REQ_WALL)
            snprintf(why, sizeof why, "the wall-clock limit of %g s (simulation.wall_time or "
                     "--wall-time; the checkpoint took %.3g s)", S->d.wall_time, S->ckpt_s);
        else
            snprintf(why, sizeof why, "%s", signal_name(status - 128));
        empic_report(NULL, 0, "stopped by %s after step %ld of %ld; checkpoint written: %s\n"
                     "  continue with: empic --restart %s   (add --steps N to run longer)",
                     why, S->step, S->d.steps, S->checkpoint_last, S->d.output);
    } else if (S->checkpoint_last[0]) {
        empic_report(NULL, 0, "stopped at step %ld%s; the last checkpoint is intact: %s\n"
                     "  continue from it with: empic --restart %s", S->step,
                     S->io_failed ? " (an output file could not be written)" : "",
                     S->checkpoint_last, S->checkpoint_last);
    } else if (S->d.checkpoint_every > 0) {
        empic_report(NULL, 0, "stopped at step %ld; no checkpoint of this run exists (the first "
                     "is due at step %ld: diagnostics.checkpoint.every = %ld), nothing to "
                     "restart from",
                     S->step, S->d.checkpoint_every, S->d.checkpoint_every);
    } else {
        empic_report(NULL, 0, "stopped at step %ld; this run writes no checkpoints (set "
                     "diagnostics.checkpoint.every to have them)", S->step);
    }
}

/* A fatal error during the run (e.g. out of memory staging a checkpoint): what the clean
 * stop leaves, as far as this rank alone can (the others may be inside a collective): one
 * rank writes energy.csv and timing.json; every rank names the last checkpoint. */
static void last_words(void *arg)
{
    sim *S = arg;
    if (comm_size() == 1) {
        sim_count_pushed(S);
        report_close(S);
    }
    fflush(stdout);
    if (S->checkpoint_last[0])
        empic_report(NULL, 0, "stopped at step %ld by the error above; the last checkpoint is "
                     "intact: %s\n  continue from it with: empic --restart %s", S->step,
                     S->checkpoint_last, S->checkpoint_last);
    else
        empic_report(NULL, 0, "stopped at step %ld by the error above; no checkpoint of this "
                     "run exists", S->step);
}

int sim_run(sim *S)
{
    const long n = S->d.steps;
    int stop = 0; /* checks, checkpoints and signals: sim_after_step */
    sim_signals(1);
    empic_on_fatal(last_words, S);
    while (S->step < n && !stop) {
        sim_step(S);
        report_progress(S, 0);
        stop = sim_after_step(S);
    }
    sim_count_pushed(S);
    sim_ionize_end(S);
    empic_on_fatal(NULL, NULL);
    sim_signals(0);
    sim_wait_writes(S);
    S->be->finish(S->be_ctx, &S->st);
    if (probes_flush(S))
        S->io_failed = 1;
    if (stop) {
        report_progress(S, 1);
        report_close(S);
        sim_stop_message(S, stop);
        /* every rank leaves together: a launcher that sees one rank end may kill the others
         * while rank 0 still writes */
        comm_barrier();
        return stop;
    }
    /* final dumps at t = steps dt: B advanced to the same time as E first */
    int fields = S->d.fields_every > 0, parts = S->d.particles_every > 0;
    int tracks = S->d.tracks_every > 0, hists = 0;
    for (int k = 0; k < S->d.nphasespace; k++)
        hists |= S->d.phasespace[k].every > 0;
    const int avg = fieldavg_due(&S->d, S->step);
    if (fields || parts || tracks || hists || avg) {
        S->be->b_half(S->be_ctx, &S->st);
        dump(S, fields, parts, tracks, 1);
        sim_wait_writes(S);
    }
    if (S->probes && !S->io_failed) { /* the probes due at the last step's time, as dumps */
        if (!(fields || parts || tracks || hists || avg))
            S->be->b_half(S->be_ctx, &S->st);
        probes_sample(S);
        if (probes_flush(S))
            S->io_failed = 1;
    }
    report_progress(S, 1);
    int rc = report_close(S);
    if (S->io_failed)
        sim_stop_message(S, -1);
    return S->io_failed ? -1 : rc;
}
