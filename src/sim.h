/* sim.h - one simulation: the deck, the state a backend advances (backend.h), the run's
 * counters and what it writes. sim.c owns the time loop and every counter in here. */
#ifndef SIM_H
#define SIM_H

#include "backend.h"
#include "deck.h"
#include "emf.h"
#include "species.h"
#include "window.h"
#include "writer.h"
#include <stdio.h>

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
    window win;               /* moving window (box origin x0 = win.cells * dx) */
    double wall_s;
    long long particle_steps; /* mobile particles x steps pushed */
    /* the last energy diagnostic (step en_step): fields at n dt, kinetic time-centred */
    long en_step;
    double en_e, en_b, en_kin[DECK_MAX_SPECIES], en_gauss;
    FILE *energy;             /* energy.csv (under its temporary name while running) */
    float *rho_sp;            /* per-species charge scratch, allocated at first dump */
    writer out;               /* the dump being written in the background (CUDA backend) */
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
/* One PIC cycle (docs/design.md, "The cycle"); diagnostics of step S->step are written
 * when due. */
void sim_step(sim *S);
void sim_free(sim *S);
/* Wait for the dump being written in the background (before the host copies of the device
 * state change, or HDF5 is used); exits with status 1 when it failed (it said why). */
void sim_wait_writes(sim *S);
/* The whole backend state into the host arrays (fields, particles), after the background
 * dump: for checkpoints and guards. */
void sim_fetch(sim *S);
/* Particles of the mobile species (those a step pushes). */
long long sim_particles(const sim *S);

#endif
