/* kinds.h - the sizes and enumerations that the deck, the host code and both backends share
 * (the deck reader maps its strings onto them; the backends need no deck to use them). */
#ifndef KINDS_H
#define KINDS_H

#define DECK_NAME_MAX 64
#define DECK_EXPR_MAX 512
#define DECK_MAX_CONSTANTS 64
#define DECK_PATH_MAX 1024
#define DECK_MAX_SPECIES 16
#define DECK_MAX_LASERS 8
#define DECK_MAX_PHASESPACE 16
#define DECK_MAX_COLLISIONS 16
#define DECK_MAX_PROBES 16
#define DECK_PROBE_POINTS 4096 /* points of one line probe at most */

enum deck_side { SIDE_XMIN = 0, SIDE_XMAX, SIDE_YMIN, SIDE_YMAX };
enum deck_fbnd { FBND_PERIODIC = 0, FBND_PML, FBND_MUR };
enum deck_pbnd { PBND_PERIODIC = 0, PBND_ABSORBING, PBND_REFLECTING, PBND_THERMAL };
enum deck_profile { PROFILE_UNIFORM = 0, PROFILE_PIECEWISE, PROFILE_EXPR };
enum deck_backend { BACKEND_AUTO = 0, BACKEND_CPU, BACKEND_CUDA };
enum deck_envelope { ENV_SIN2 = 0, ENV_GAUSSIAN, ENV_FLATTOP };
enum deck_lprofile { LPROF_GAUSSIAN = 0, LPROF_SUPERGAUSSIAN, LPROF_FLATTOP }; /* transverse */
/* Field dump quantities; the averaged dumps (diagnostics.fields_avg) also take E2, B2: the
 * squares of E's and B's components. */
enum deck_fieldq { FQ_E = 1, FQ_B = 2, FQ_J = 4, FQ_RHO = 8, FQ_E2 = 16, FQ_B2 = 32 };
/* Phase-space axes: position, momentum u = gamma v, kinetic energy (gamma - 1) m c^2 per
 * particle of the species, in m_e c^2. */
enum deck_psaxis { PSA_X = 0, PSA_Y, PSA_UX, PSA_UY, PSA_UZ, PSA_ENERGY, PSA_COUNT };

/* The deck's structures, for headers that only pass pointers to them (deck.h defines them). */
struct deck;
struct deck_species;
struct deck_laser;

#endif
