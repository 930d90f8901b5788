/* guard.c - what keeps a run safe: sanity checks of the state (non-finite fields or particles,
 * lost particles), clean stops on SIGINT/SIGTERM with a checkpoint, and the checks and
 * checkpoints sim_run makes after each step. The scans read the host arrays once (OpenMP),
 * cheap next to a step, and never modify the state. */
#include "guard.h"
#include "checkpoint.h"
#include "empic.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const FIELD_NAME[9] = {"Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy", "Jz"};

int guard_fields(const emf *f, guard_hit *h)
{
    const float *a[9] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1],
                         f->b[2], f->j[0], f->j[1], f->j[2]};
    memset(h, 0, sizeof *h);
    for (int c = 0; c < 9; c++) {
        const float *o = a[c] + f->off;
        long first = LONG_MAX;
#pragma omp parallel for reduction(min : first)
        for (int j = 0; j < f->ny; j++)
            for (int i = 0; i < f->nx; i++)
                if (!isfinite(o[(long)j * f->stride + i])) {
                    long k = (long)j * f->nx + i;
                    first = k < first ? k : first;
                    break;
                }
        if (first != LONG_MAX) {
            h->found = 1;
            h->species = -1;
            h->i = (int)(first % f->nx);
            h->j = (int)(first / f->nx);
            h->value = o[(long)h->j * f->stride + h->i];
            snprintf(h->what, sizeof h->what, "%s", FIELD_NAME[c]);
            return 1;
        }
    }
    return 0;
}

/* First slot of cluster c whose momentum, offset or weight is not finite, or -1. */
static long first_bad(const species *s, int c)
{
    for (long p = s->start[c]; p < (long)s->start[c] + s->count[c]; p++)
        if (!isfinite(s->ux[p]) || !isfinite(s->uy[p]) || !isfinite(s->uz[p]) ||
            !isfinite(s->x[p]) || !isfinite(s->y[p]) || !isfinite(s->w[p]))
            return p;
    return -1;
}

int guard_particles(const sim *S, guard_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        if (sp->immobile)
            continue;
        int first = INT_MAX;
#pragma omp parallel for schedule(dynamic, 4) reduction(min : first)
        for (int c = 0; c < S->cl.n; c++)
            if (c < first && first_bad(sp, c) >= 0)
                first = c;
        if (first == INT_MAX)
            continue;
        long p = first_bad(sp, first);
        const float v[6] = {sp->ux[p], sp->uy[p], sp->uz[p], sp->x[p], sp->y[p], sp->w[p]};
        const char *name[6] = {"ux", "uy", "uz", "x offset", "y offset", "weight"};
        int q = 0;
        while (q < 5 && isfinite(v[q]))
            q++;
        h->found = 1;
        h->species = s;
        h->i = cell_i(sp->cell[p]);
        h->j = cell_j(sp->cell[p]);
        h->value = v[q];
        snprintf(h->what, sizeof h->what, "%s", name[q]);
        return 1;
    }
    return 0;
}

int guard_counts(const sim *S, guard_hit *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < S->nsp; s++) {
        const species *sp = &S->sp[s];
        long long n = 0;
        int bad = 0, closed = 1;
        for (int k = 0; k < 4; k++)
            closed &= sp->bnd[k] == PBND_PERIODIC;
        for (int c = 0; c < S->cl.n; c++) {
            n += sp->count[c];
            bad |= sp->count[c] < 0 || sp->count[c] > sp->cap[c];
        }
        if ((closed && n != sp->np) || bad) {
            h->found = 1;
            h->species = s;
            h->have = n;
            h->want = sp->np;
            snprintf(h->what, sizeof h->what, "count");
            return 1;
        }
    }
    return 0;
}

int guard_check(const sim *S, guard_hit *h)
{
    guard_hit own, part;
    if (!h)
        h = &own;
    const int field = guard_fields(&S->f, h);
    /* E and B finite while particles are not: the bad values were born in the particles
     * (their current J comes from them) */
    const int eb = field && h->what[0] != 'J';
    if (guard_particles(S, &part)) {
        const species *sp = &S->sp[part.species];
        empic_report(NULL, 0, "step %ld: species %s: a particle in cell (i, j) = (%d, %d) has "
                     "%s = %g (not finite)", S->step, sp->cfg->name, part.i, part.j, part.what,
                     part.value);
        if (eb)
            empic_report(NULL, 0, "  and field %s = %g at cell (i, j) = (%d, %d): fields and "
                         "particles went unstable together (check dt against the Courant "
                         "limit, dx against the Debye length, the lasers and external fields)",
                         h->what, h->value, h->i, h->j);
        else
            empic_report(NULL, 0, "  E and B are finite: the bad values were born in the "
                         "particles; check species %s: charge %g, mass %g (q/m = %g in single "
                         "precision), its density (weights) and drift", sp->cfg->name,
                         sp->cfg->charge, sp->cfg->mass, (double)sp->qm);
        *h = part;
        return -1;
    }
    if (field) {
        empic_report(NULL, 0, "step %ld: field %s = %g at cell (i, j) = (%d, %d) is not finite; "
                     "the particles are finite: %s", S->step, h->what, h->value, h->i, h->j,
                     eb ? "the fields have gone unstable (check dt against the Courant limit, "
                          "the external fields and the lasers' a0 and omega0)"
                        : "their current overflows (check the species' densities and charges)");
        return -1;
    }
    if (guard_counts(S, h)) {
        empic_report(NULL, 0, "step %ld: species %s: the clusters hold %lld particles but the "
                     "species has %lld (particles lost or duplicated, or a cluster over its "
                     "capacity); this is a bug in empic, please report it with the deck",
                     S->step, S->sp[h->species].cfg->name, h->have, h->want);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- signals and the loop */

/* Signal state is process-wide by nature: the handler can only reach a static flag. */
static volatile sig_atomic_t sig_seen;
static struct sigaction sig_old[2];
static int sig_installed;
static const int SIG_HANDLED[2] = {SIGINT, SIGTERM};

static void on_signal(int sig)
{
    static const char msg[] = "\nempic: signal received: stopping after this step with a "
                              "checkpoint (send it again to stop at once)\n";
    sig_seen = sig;
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

void guard_signals(int on)
{
    if (on && !sig_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sig_seen = 0;
        for (int k = 0; k < 2; k++) {
            sigaction(SIG_HANDLED[k], &sa, &sig_old[k]);
            if (sig_old[k].sa_handler == SIG_IGN) /* e.g. SIGINT of a background job */
                sigaction(SIG_HANDLED[k], &sig_old[k], NULL);
        }
        sig_installed = 1;
    } else if (!on && sig_installed) {
        for (int k = 0; k < 2; k++)
            sigaction(SIG_HANDLED[k], &sig_old[k], NULL);
        sig_installed = 0;
    }
}

int guard_signal_pending(void) { return sig_seen; }

/* The first non-finite quantity of the last energy diagnostic (its energy.csv column), with
 * its likely cause; NULL when all are finite. */
static const char *energy_bad(const sim *S, char *what, size_t len)
{
    if (!isfinite(S->en_e) || !isfinite(S->en_b)) {
        snprintf(what, len, "%s = %g: the fields are finite but their energy overflows "
                 "(fields near the single-precision limit: check the lasers' a0 omega0 and "
                 "the external fields)", isfinite(S->en_e) ? "field_B" : "field_E",
                 isfinite(S->en_e) ? S->en_b : S->en_e);
        return what;
    }
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].immobile && !isfinite(S->en_kin[s])) {
            snprintf(what, len, "kinetic_%s = %g: species %s has finite momenta and weights "
                     "but their energy overflows (check its density (weights), mass and "
                     "drift)", S->sp[s].name, S->en_kin[s], S->sp[s].name);
            return what;
        }
    if (!isfinite(S->en_gauss)) {
        snprintf(what, len, "gauss_max = %g: the charge density overflows (check the "
                 "species' densities and charges)", S->en_gauss);
        return what;
    }
    return NULL;
}

int guard_after_step(sim *S)
{
    const deck *d = &S->d;
    const int gpu = S->backend == BACKEND_CUDA, sig = sig_seen;
    const int ckpt = sig || (d->checkpoint_every > 0 && S->step % d->checkpoint_every == 0);
    char what[320];
    if (S->io_failed)
        return -1; /* the file was named when it failed */
    for (int s = 0; s < S->nsp; s++)
        if (S->sp[s].bad.found) { /* beyond what deck_load checked (--steps, large decks) */
            const species_fault *b = &S->sp[s].bad;
            empic_report(NULL, 0, "step %ld: species %s: the moving window's injection met %s "
                         "= %g at (x, y) = (%.9g, %.9g) (lab frame); expected a finite value "
                         ">= 0", S->step, S->sp[s].cfg->name, b->what, b->value, b->x, b->y);
            return -1;
        }
    const char *bad_energy = d->energy_every > 0 && S->step > 0 && S->en_step == S->step - 1
                                 ? energy_bad(S, what, sizeof what)
                                 : NULL;
    const long every = d->energy_every > 0 ? d->energy_every : GUARD_EVERY;
    /* the GPU screens through the energy diagnostic and fetches only when it must */
    const int scan =
        bad_energy || ckpt || (S->step % every == 0 && (!gpu || d->energy_every <= 0));
    if (scan) {
        if (gpu)
            sim_fetch(S);
        if (guard_check(S, NULL))
            return -1;
        if (bad_energy) {
            empic_report(NULL, 0, "step %ld: energy diagnostic %s", S->en_step, bad_energy);
            return -1;
        }
    }
    if (ckpt && checkpoint_write(S))
        return -1;
    return sig ? 128 + sig : 0;
}

void guard_stop_message(const sim *S, int st)
{
    fflush(stdout); /* after the timing table */
    if (st > 0) {
        int sig = st - 128;
        empic_report(NULL, 0, "stopped by %s after step %ld of %ld; checkpoint written: %s\n"
                     "  continue with: empic --restart %s   (add --steps N to run longer)",
                     sig == SIGINT ? "SIGINT" : (sig == SIGTERM ? "SIGTERM" : "a signal"),
                     S->step, S->d.steps, S->checkpoint_last, S->d.output);
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
