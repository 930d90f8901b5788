/* backend.h - the state one PIC cycle advances and the table of functions a backend provides
 * to advance it (docs/design.md, "The cycle"). The CPU backend (cpu_backend.c) and the CUDA
 * backend (cuda/) each fill one table; sim.c calls them in the order of the cycle and owns
 * every counter: the time level of the fields, the window position, the particle counts. A
 * backend reports what changed (particles dropped, kinetic energy, phase times) and never
 * edits those counters itself.
 *
 * Host copies: st->f and st->sp hold the host arrays. The CPU backend works on them; a device
 * backend keeps the live state on the device and writes the host arrays only when fetched
 * (fetch_fields, fetch_particles), and reads them only in open (upload). */
#ifndef BACKEND_H
#define BACKEND_H

#include "ebal.h"
#include "emf.h"
#include "extfield.h"
#include "ionize.h"
#include "phasespace.h"
#include "probe.h"
#include "species.h"

#ifdef __cplusplus
extern "C" {
#endif

struct collide_par; /* collide.h */

/* Phases of the timing table; PH_EXCHANGE: time in exchanges with the neighbour ranks
 * (waiting on them included), taken out of the phase the exchange happens in. */
enum pic_phase { PH_PUSH = 0, PH_DEPOSIT, PH_SORT, PH_FIELD, PH_EXCHANGE, PH_OTHER, PH_COUNT };

/* What a backend advances. The cluster partition and the species' configuration are fixed
 * for the run; f->step is E's time level (E at t = f->step dt, B at the half step before or
 * at the same time after b_half), advanced by sim.c after `fields`. */
typedef struct {
    emf *f;                   /* fields, boundaries (f->fb) and the field clock */
    const clusters *cl;
    species *sp;              /* nsp species: cluster tables and particle arrays */
    int nsp;
    ext_fields ext;           /* the external fields the gather adds (extfield.h), at E's
                                 time level: uniform values and host arrays */
    int avg_q;                /* the quantities of the averaged field dumps (enum
                                 deck_fieldq; 0: none), and their sums (average.h: */
    double *avg;              /* avg_arrays(avg_q) arrays of f->size, the host's; a device
                                 backend keeps its own, copied here by avg_fetch) */
    int window;               /* the deck has a moving window */
    long window_cells;        /* cells the moving window has moved (box origin x0 = cells dx) */
    int window_next;          /* the window shifts after this step's `fields` (set before
                                 `particles`) */
    double phase_s[PH_COUNT]; /* wall (or device) seconds per phase: each backend adds its own */
    const char *transport;    /* how the ranks exchange, set by open: "none" (one rank),
                                 "staged" (GPU ranks through the host), "nccl"; NULL: the
                                 backend's own MPI calls */
    const char *simd;         /* the CPU's particle loops: "avx512" (the instance compiled
                                 for x86-64-v4) or "build" (the build's -march), set by the
                                 CPU backend (cpu_avx512); NULL on a device */
    int reopen;               /* close and open around a rebalance (rebalance.h): close may
                                 leave in `kept` what does not depend on the share (the GPU
                                 ranks' NCCL communicators) for open to take back */
    void *kept;
    /* The energy balance (ebal.h, docs/output.md): cumulative sums of this rank's slots,
     * zero in the others' (sims sum them over the ranks exactly). flow[term * nslot + slot]
     * (nterm = ebal_terms(lasers)): field energy out through each side, laser energy in
     * per laser (E plane, B column), each in energy units; lost[s * cl->n + c]: sum of
     * w (gamma - 1) of species s's particles that walls and the window took out of cluster
     * c, less what thermal walls gave back (times m dx dy in energy.csv). */
    ebal_region reg;
    int nslot, nterm;
    double *flow, *lost;
} pic_state;

typedef struct backend {
    const char *name; /* "cpu", "cuda" */
    int kind;         /* enum deck_backend (BACKEND_CPU, BACKEND_CUDA): checkpoints record it */
    /* 1: the backend computes on the host's cores in the host arrays (st->f, st->sp are the
     * live state). 0: on a device; the host arrays are copies that only fetch_* write, so a
     * dump may be written from them while the device steps on, the host's cores are free
     * for work ahead of the device, and a scan of the host state needs a fetch first. */
    int on_host;
    /* Take over st after the load, Poisson solve and half push back (or a checkpoint), so that
     * both backends start from identical state; *ctx is the backend's own state. 0, or -1
     * after reporting (e.g. too little device memory, with the bytes needed). */
    int (*open)(pic_state *st, void **ctx);
    void (*close)(void *ctx, pic_state *st);
    /* B -= dt/2 curl E with the boundary terms: B(n-1/2) -> B(n) (cycle step 1; again at
     * the end of a run so that B is dumped at the time of E). */
    void (*b_half)(void *ctx, pic_state *st);
    /* Cycle steps 2-3 for every mobile species: gather E(n), B(n), Boris u(n-1/2) ->
     * u(n+1/2), move x(n) -> x(n+1), J(n+1/2) deposited (zeroed first), migration codes,
     * particle walls. kinetic[s] = sum w m (gamma - 1) dx dy at time n when want_ke. */
    void (*particles)(void *ctx, pic_state *st, int want_ke, double *kinetic);
    /* Cycle steps 4-6: B(n) -> B(n+1/2), J(n+1/2) folded and filtered, E(n) -> E(n+1) with
     * boundaries and lasers at f->step; sim.c then sets f->step = n + 1. */
    void (*fields)(void *ctx, pic_state *st);
    /* The moving window is due (window.h): fields, boundary memories and particles one cell
     * toward -x (the back column's particles marked to drop); sim.c then counts the cell. */
    void (*window_shift)(void *ctx, pic_state *st);
    /* Cycle step 7: particles marked to drop removed, then the incremental sort of every
     * mobile species (of all after a window shift), movers into other ranks' clusters sent
     * there; dropped[s] = the particles this rank lost (dropped, plus sent less received;
     * sim.c updates np). */
    void (*sort)(void *ctx, pic_state *st, int window, long long *dropped);
    /* Field ionization (design.md §14) after the sort, at E(n+1) and x(n+1) (step = n + 1):
     * the particles of every ionizing species raise their charge states and their electrons
     * join the electron species' segments of their clusters (grown when full); out[s] = what
     * species s did (ionize.h: events on this rank; with `sums`, for an energy row, the sums
     * over all ranks, else 0). sim.c adds the events to the electron species' np. Returns 1
     * when done; 0 when a device backend only queued the work (never with `sums`): then
     * ionize_end, before anything else reads or moves the particles (sim.c calls it after
     * the next step's b_half), waits for it and fills out. */
    int (*ionize)(void *ctx, pic_state *st, long long step, int sums, ionize_stats *out);
    void (*ionize_end)(void *ctx, pic_state *st, ionize_stats *out);
    /* Cycle step 8: binary collisions of one entry of the deck (collide.h: species p->a with
     * p->b, at step p->step) among the particles of each cell, after the sort. The result
     * is a function of the cluster order and the keys of p alone: any thread or rank count
     * gives the same particles. */
    void (*collide)(void *ctx, pic_state *st, const struct collide_par *p);
    /* Append col[s] (species_column: add[s * (ncy + 1) + cy] particles for cluster row cy of
     * the last cell column) to species s, re-laying segments out when full; sim.c adds the
     * counts to np. */
    void (*inject)(void *ctx, pic_state *st, species *col, const int *add);
    /* Charge density of all species at the current positions into f->rho, and of each into
     * per + s * f->size when per != NULL; guards folded and filtered like J. */
    void (*rho)(void *ctx, pic_state *st, float *per);
    /* Field energies (E and B at their own time levels), the balance's field terms (ebal.h):
     * fbal[0] the part of both outside the balance region (st->reg: the absorbing layers and
     * edges), fbal[1] the stagger term (ebal_stagger) inside it, and max |div E - rho + rho_bg|, with
     * rho at the current positions deposited by field_diag itself (the caller does not call
     * `rho` first: a device backend keeps it on the device). */
    void (*field_diag)(void *ctx, pic_state *st, double *energy_e, double *energy_b,
                       double *fbal, double *gauss);
    /* The balance sums (st->flow, st->lost) up to date on the host: a device backend copies
     * its own; nothing on the CPU. */
    void (*flows)(void *ctx, pic_state *st);
    /* Device state into the host copies: E, B, J and the boundary memories and clocks
     * (f->fb: psi_step, shift) (with the charge densities into f->rho and per when per !=
     * NULL, as `rho`: a dump calls fetch_fields(per) alone); every species' particles and
     * tables. No-ops on the CPU (but for the charge densities). */
    void (*fetch_fields)(void *ctx, pic_state *st, float *per);
    void (*fetch_particles)(void *ctx, pic_state *st);
    /* The tracked particles (id != 0) of every species into out[s] (tables and arrays that
     * live until release_tracked); returns out. */
    species *(*fetch_tracked)(void *ctx, pic_state *st, species *out);
    void (*release_tracked)(void *ctx, species *out);
    /* Phase-space histogram of species s (sums of w per bin of g into h), and the extent
     * of one axis over its particles (insitu.h). */
    void (*phasespace)(void *ctx, pic_state *st, int s, const ps_grid *g, double *h);
    int (*phasespace_extent)(void *ctx, pic_state *st, int s, const ps_grid *g, int axis,
                             int positive, double mm[2]);
    /* The averaged field dumps (fieldavg.h): the arrays of st->avg_q (average.h) at their
     * current time levels (at a step's diagnostics E and B at t = n dt, J at t - dt/2, the
     * charge density deposited first at the current positions) added to the sums, which
     * start anew when first; avg_fetch: the sums into st->avg (a no-op on the CPU, whose
     * sums they are). A device backend uploads st->avg in open (a restart's sums). */
    void (*avg_add)(void *ctx, pic_state *st, int first);
    void (*avg_fetch)(void *ctx, pic_state *st);
    /* The arrays of st->ext changed on the host (extfield_update): a device backend copies
     * them (one host-to-device copy of each array); nothing on the CPU, which reads them. */
    void (*ext_fields)(void *ctx, pic_state *st);
    /* Field probes (diagnostics.probes): out[r] = quantity req[r].m at its point (probe.h's
     * probe_gather: E and B as a particle there gathers them, with the external fields'
     * arrays but not their uniform values, which the caller adds)
     * for r < n, this rank's points only; E and B at their current time levels (at a step's
     * diagnostics both at t = n dt), J at t - dt/2. need (probe.h): PROBE_NEED_RHO, the
     * charge density deposited first at the current positions (as `rho`) for the PROBE_RHO
     * requests; PROBE_NEED_J, J's guard cells filled first (the particles' next deposit
     * starts J anew). Every rank calls it together with the same `need` (n may be 0: both
     * exchange with the neighbours). Only the n values cross from a device to the host. */
    void (*probe)(void *ctx, pic_state *st, int need, int n, const probe_req *req, float *out);
    /* The particles per cluster of every species into count[s * cl->n + c] (this rank's
     * clusters; 0 elsewhere) without fetching the particles: what a load check reads
     * (rebalance.h). */
    void (*counts)(void *ctx, pic_state *st, int *count);
    /* Whether this rank's state would fit the backend's memory with `size` entries per field
     * array and alloc[s] particle slots holding np[s] particles per species (another split of
     * the run: rebalance.h) once this context's own allocations are freed; 1 on the CPU,
     * whose host memory the caller checks. */
    int (*fits)(void *ctx, const pic_state *st, size_t size, const size_t *alloc,
                const long long *np);
    /* Wait for the work queued so far and settle the phase timers (before the timing table
     * or a checkpoint). */
    void (*finish)(void *ctx, pic_state *st);
    /* Memory bandwidth in bytes/s (read + written), for the timing table's floor; bytes of
     * particle storage of all species (slots as allocated: they never shrink, so this is
     * the run's largest). */
    double (*bandwidth)(void *ctx);
    double (*particle_bytes)(void *ctx, const pic_state *st);
} backend;

extern const backend cpu_backend;
/* The CUDA backend when it is built in and a usable device exists (its name into name),
 * else NULL (the reason into name). */
const backend *cuda_backend(char *name, size_t len);
/* The backend for the deck's choice `want` (enum deck_backend: auto takes the GPU when there
 * is one), its device name into device; NULL after reporting when CUDA was asked for and
 * none can be had. */
const backend *backend_choose(int want, const char *deck_file, char *device, size_t len);

#ifdef __cplusplus
}
#endif
#endif
