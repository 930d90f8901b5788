/* sim.h - one simulation: deck, fields, clusters, species, backend, diagnostics, timers. */
#ifndef SIM_H
#define SIM_H

#include "deck.h"
#include "emf.h"
#include "species.h"
#include "window.h"
#include "writer.h"
#include <stdio.h>

enum sim_phase { PH_PUSH = 0, PH_DEPOSIT, PH_SORT, PH_FIELD, PH_OTHER, PH_COUNT };

typedef struct gpu_state gpu_state;

typedef struct {
    deck d;
    emf f;
    clusters cl;
    int nsp;
    species sp[DECK_MAX_SPECIES];
    int backend;              /* BACKEND_CPU or BACKEND_CUDA once resolved */
    char device[128];         /* CPU model or GPU name */
    gpu_state *gpu;
    long step;                /* steps done */
    window win;               /* moving window (box origin x0 = win.cells * dx) */
    float ext_e[3], ext_b[3];
    double phase_s[PH_COUNT]; /* wall seconds per phase */
    double wall_s;
    long long particle_steps; /* mobile particles x steps pushed */
    /* the last energy diagnostic (step en_step): fields at n dt, kinetic time-centred */
    long en_step;
    double en_e, en_b, en_kin[DECK_MAX_SPECIES], en_gauss;
    FILE *energy;             /* energy.csv (under its temporary name while running) */
    float *rho_sp;            /* per-species charge scratch, allocated at first dump */
    writer out;               /* the dump being written in the background (CUDA backend) */
    int io_failed;            /* an output file could not be written (it was reported): the
                                 run stops cleanly after the step */
    int quiet;
    double progress_at;       /* wall clock of the last progress line */
    char checkpoint_last[DECK_PATH_MAX + 64]; /* last checkpoint written or restarted from */
} sim;

/* Set up from a validated deck (takes ownership of *d). Returns 0 or -1 after reporting. */
int sim_init(sim *S, const deck *d, int quiet);
/* The same, continuing from the checkpoint file `checkpoint` (checkpoint.h) when not NULL:
 * no load, Poisson solve or half push; energy.csv keeps the rows before its step. */
int sim_init_from(sim *S, const deck *d, int quiet, const char *checkpoint);
/* Run to d.steps steps with diagnostics, guards and checkpoints; 0 on success, -1 after
 * reporting an error, 128 + signal when stopped by SIGINT/SIGTERM (after a checkpoint). */
int sim_run(sim *S);
/* One PIC cycle (DESIGN §3); diagnostics of step S->step are written when due. */
void sim_step(sim *S);
void sim_free(sim *S);
/* Charge density of all species (and of each when per != NULL) at the current positions,
 * guards folded and filtered like J, into f.rho. */
void sim_rho(sim *S, float *per);
/* Wait for the dump being written in the background (before the host copies of the device
 * state change, or HDF5 is used); sets io_failed when it failed (it said why). */
void sim_wait_writes(sim *S);
/* The whole device state into the host arrays (fields, particles; CUDA backend), after the
 * background dump: for checkpoints and guards. */
void sim_fetch(sim *S);
/* Total kinetic energy of mobile species at the last push and field energies now. */
long long sim_particles(const sim *S);

#endif
