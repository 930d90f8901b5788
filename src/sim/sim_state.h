/* sim_state.h - the state of one run: the deck, the PIC state a backend advances
 * (backend.h), the run's counters and what it writes. The modules around the time loop
 * (report, checkpoint, guard, insitu) read and fill it; sim.c owns the loop and every
 * counter. */
#ifndef SIM_STATE_H
#define SIM_STATE_H

#include "backend.h"
#include "column.h"
#include "deck.h"
#include "emf.h"
#include "species.h"
#include "window.h"
#include "writer.h"
#include <stdio.h>

/* A rebalance of the ranks (rebalance.h), as timing.json lists it. */
typedef struct {
    long step;                /* after this step */
    long long load[4];        /* mobile particles of the least and the most loaded rank,
                                 before, then after */
    double seconds;           /* wall time of the check and the move */
    double part_s[3];         /* of which: the state fetched from the backend, moved to its
                                 new owners (reshare.h), the backend opened on the new share */
    int *cells;               /* the new rank borders in cells: nrx + 1 along x, then nry + 1
                                 along y */
} rebalance_entry;

typedef struct {
    deck d;
    emf f;
    clusters cl;
    int nsp;
    species sp[DECK_MAX_SPECIES];
    pic_state st;             /* what the backend advances: points at f, cl, sp */
    const backend *be;        /* the backend, and its own state */
    void *be_ctx;
    int backend;              /* BACKEND_CPU or BACKEND_CUDA once chosen */
    char device[128];         /* CPU model or GPU name */
    long step;                /* steps done */
    struct {                  /* the counters when this process started (after a restart,
                                 the checkpoint's): the timing report covers what it ran */
        long step;
        long long particle_steps;
        double wall_s, phase_s[PH_COUNT];
    } run0;
    window win;               /* moving window (box origin x0 = win.cells * dx) */
    double wall_s;
    long long particle_steps; /* mobile particles x steps pushed, all ranks' (summed every
                                 few steps: sim_count_pushed) */
    long long pushed_here;    /* this rank's particle-steps not yet in particle_steps */
    long counted_to;          /* the steps that particle_steps covers */
    long long np_here;        /* this rank's mobile particles after the last step */
    long long np_peak;        /* this rank's largest particle count (all species) since this
                                 process started: the storage per particle is taken there */
    /* the last energy diagnostic (step en_step): fields at n dt, kinetic time-centred */
    long en_step;
    double en_e, en_b, en_kin[DECK_MAX_SPECIES], en_gauss;
    FILE *energy;             /* energy.csv (under its temporary name while running) */
    float *rho_sp;            /* per-species charge scratch, allocated at first dump */
    extfield ext;             /* the external fields' formulas and arrays (st.ext's values) */
    float *ext_dump;          /* the external fields at a dump's time (6 x f.size), written
                                 while the run steps on; allocated at the first such dump */
    float *avg_dump;          /* the means of an averaged dump (fieldavg.h), likewise */
    writer out;               /* the dump being written in the background (CUDA backend) */
    struct probes *probes;    /* the field probes (probes.h), or NULL */
    column_ahead ahead;       /* on a device backend, the window's next front column made
                                 while the device steps */
    int io_failed;            /* an output file could not be written (it was reported): the
                                 run stops cleanly after the step */
    int quiet;
    double progress_at;       /* wall clock of the last progress line */
    char checkpoint_last[DECK_PATH_MAX + 64]; /* last checkpoint written or restarted from */
    /* stops on request and the wall-clock limit (sim.c), the energy guard (health.c) */
    long long np_all;         /* mobile particles of all ranks at the last sum */
    int ion_open;             /* the last step's ionization is queued on the device and its
                                 electrons not yet counted (sim_ionize_end) */
    double wall_prev;         /* wall_s after the step before */
    double step_max_s;        /* longest step of this process */
    double ckpt_s;            /* wall time of this process's last checkpoint (0: none yet) */
    int stop_req;             /* why sim_after_step stopped the run (sim.c's REQ_*), or 0 */
    double energy_ref;        /* total energy the guard compares with (0: guard off) */
    /* the energy balance (ebal.h): st.flow and st.lost (the backend's), gain[s * cl.n + c]
     * the energy w (gamma - 1) of the particles the window brought into cluster c; bal_ck
     * (when set) all three summed over the ranks, as a checkpoint keeps them */
    double *gain, *bal_ck;
    size_t bal_n;             /* entries of bal_ck: nterm nslot + 2 nsp cl.n */
    rebalance_entry *rebal;   /* the rebalances this process made (rebalance.h) */
    int nrebal, rebal_refused; /* their number; the ones refused for want of memory */
} sim;

/* Particles of the mobile species (those a step pushes). */
static inline long long sim_particles(const sim *S)
{
    long long n = 0;
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].immobile)
            n += S->sp[s].np;
    return n;
}

/* Raise np_peak to this rank's particles now (all species). */
static inline void sim_note_peak(sim *S)
{
    long long n = 0;
    for (int s = 0; s < S->nsp; s++)
        n += S->sp[s].np;
    S->np_peak = n > S->np_peak ? n : S->np_peak;
}

#endif
