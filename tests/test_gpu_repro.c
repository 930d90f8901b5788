/* test_gpu_repro.c - bitwise reproducibility (design.md §13) on the CUDA backend: two runs of
 * one deck give identical energy.csv, dumps (fields, particle samples, tracks, phase spaces),
 * field probes and checkpoints, and a run stopped at a checkpoint and restarted equals the
 * straight run, bit for bit. Two decks: a periodic warm electron-positron plasma, and a laser
 * entering through a PML into a plasma between a thermal and a reflecting wall under a moving
 * window (drops, injection, re-emission). HDF5 files are compared dataset by dataset (their
 * `date` attribute differs); the final states in memory (fields, every particle of every
 * cluster, in slot order) are compared too. Without a GPU the same checks run on the CPU
 * backend. First, on the host: the fixed-point deposit rule of include/particle.h (scale,
 * order independence, error against the exact sum). */
#include "checkpoint.h"
#include "particle.h"
#include "probe.h"
#include "testutil.h"

#include <dirent.h>
#include <hdf5.h>

enum { STEPS = 120 };

static int use_backend = BACKEND_CUDA;

static void out_dir(deck *d, const char *tag, const char *run)
{
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-repro-%d-%s-%s", (int)getpid(), tag,
             run);
}

/* Warm electrons and positrons drifting against each other along z (two-stream and Weibel
 * unstable), periodic; every kind of output on. */
static void warm_deck(deck *d)
{
    tu_deck(d, 64, 48, 0.1, 0.05, STEPS);
    d->pml_cells = 16; /* the default, which a checkpoint's deck text must hold */
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(d, s ? "positrons" : "electrons", s ? 1.0 : -1.0, 1.0,
                                      4, 0.1);
        snprintf(sp->drift[2], sizeof sp->drift[2], s ? "-0.6" : "0.6");
    }
}

/* A laser from xmin through a PML into a plasma ramp; Mur along y with a thermal wall at ymin
 * and a reflecting one at ymax for the electrons; the window moves once the pulse is in. */
static void open_deck(deck *d)
{
    tu_deck(d, 96, 32, 0.1, 0.05, STEPS);
    d->fbnd[SIDE_XMIN] = d->fbnd[SIDE_XMAX] = FBND_PML;
    d->fbnd[SIDE_YMIN] = d->fbnd[SIDE_YMAX] = FBND_MUR;
    d->pml_cells = 8;
    d->window_enabled = 1;
    d->window_t_start = 4.2; /* the pulse is in at t = 4.1 */
    deck_laser *L = &d->lasers[d->nlasers++];
    memset(L, 0, sizeof *L);
    L->a0 = 1.5;
    L->omega0 = 6.0;
    L->w0 = 1.0;
    L->focus = 4.0;
    L->center = 1.6;
    L->duration = 1.5;
    L->envelope = ENV_SIN2;
    L->ramp = L->duration / 4;
    L->boundary = SIDE_XMIN;
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(d, s ? "ions" : "electrons", s ? 1.0 : -1.0,
                                      s ? 1836.0 : 1.0, 2, s ? 0.0 : 0.05);
        sp->bnd[SIDE_XMIN] = sp->bnd[SIDE_XMAX] = PBND_ABSORBING;
        sp->bnd[SIDE_YMIN] = s ? PBND_REFLECTING : PBND_THERMAL;
        sp->bnd[SIDE_YMAX] = PBND_REFLECTING;
        const double xs[3] = {2.0, 5.0, 12.0}, fs[3] = {0.0, 1.0, 2.0};
        tu_profile_x(sp, 3, xs, fs);
    }
}

typedef void (*deck_maker)(deck *d);

static void make(deck *d, deck_maker m, const char *tag, const char *run, long steps)
{
    m(d);
    d->backend = use_backend;
    d->steps = steps;
    d->energy_every = 5;
    d->fields_every = 30;
    d->particles_every = 30;
    d->particles_fraction = 0.05;
    d->tracks_every = 10;
    d->tracks_fraction = 0.05;
    d->checkpoint_every = STEPS / 2;
    d->tracks_species_mask = 3; /* both species (the deck text of a checkpoint names them) */
    /* field probes: a point with every quantity, a line of E and B (gathered on the device) */
    d->nprobes = 2;
    memset(d->probes, 0, 2 * sizeof d->probes[0]);
    snprintf(d->probes[0].name, sizeof d->probes[0].name, "p");
    d->probes[0].n = 1;
    d->probes[0].x0 = d->probes[0].x1 = 1.234;
    d->probes[0].y0 = d->probes[0].y1 = 2.345;
    d->probes[0].fields = (1 << PROBE_COUNT) - 1;
    d->probes[0].every = 3;
    snprintf(d->probes[1].name, sizeof d->probes[1].name, "l");
    d->probes[1].line = 1;
    d->probes[1].n = 20;
    d->probes[1].x1 = 3.0;
    d->probes[1].y0 = 0.5;
    d->probes[1].y1 = 2.9;
    d->probes[1].fields = (1 << PROBE_JX) - 1;
    d->probes[1].every = 1;
    /* in-code phase spaces: x-uz of species 0 over the particles' extent (device reductions),
     * and the energy spectrum of species 1 */
    d->nphasespace = 2;
    memset(d->phasespace, 0, 2 * sizeof d->phasespace[0]);
    d->phasespace[0].naxes = 2;
    d->phasespace[0].axis[0] = PSA_X;
    d->phasespace[0].axis[1] = PSA_UZ;
    d->phasespace[0].bins[0] = d->phasespace[0].bins[1] = 64;
    d->phasespace[0].every = 30;
    d->phasespace[1].species = 1;
    d->phasespace[1].naxes = 1;
    d->phasespace[1].axis[0] = PSA_ENERGY;
    d->phasespace[1].bins[0] = 100;
    d->phasespace[1].every = 30;
    out_dir(d, tag, run);
}

static void rm_dir(const char *dir)
{
    char cmd[DECK_PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- comparison of files ---- */

static long file_bytes(const char *path, char **buf)
{
    FILE *f = fopen(path, "rb");
    *buf = NULL;
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    if (fread(*buf, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    fclose(f);
    return n;
}

/* 1 when the two files hold the same bytes. */
static int same_bytes(const char *a, const char *b)
{
    char *pa, *pb;
    long na = file_bytes(a, &pa), nb = file_bytes(b, &pb);
    int same = na >= 0 && na == nb && memcmp(pa, pb, (size_t)na) == 0;
    free(pa);
    free(pb);
    return same;
}

typedef struct {
    hid_t other;  /* the file compared with, or -1 to count only */
    long n, differ;
} h5cmp;

static herr_t h5_visit(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    h5cmp *c = data;
    /* a checkpoint's wall clock and phase timers, and its deck text (which names the output
     * folder), are not results */
    if (!strcmp(name, "run/wall_s") || !strcmp(name, "run/phase_s") || !strcmp(name, "deck"))
        return 0;
    hid_t o = H5Oopen(g, name, H5P_DEFAULT);
    if (o < 0 || H5Iget_type(o) != H5I_DATASET) {
        if (o >= 0)
            H5Oclose(o);
        return 0;
    }
    c->n++;
    if (c->other >= 0) {
        hid_t p = H5Dopen2(c->other, name, H5P_DEFAULT);
        int same = 0;
        if (p >= 0) {
            hid_t ta = H5Dget_type(o), tb = H5Dget_type(p);
            hid_t sa = H5Dget_space(o), sb = H5Dget_space(p);
            hssize_t n = H5Sget_simple_extent_npoints(sa);
            size_t bytes = (size_t)n * H5Tget_size(ta);
            same = H5Tequal(ta, tb) > 0 && n == H5Sget_simple_extent_npoints(sb);
            if (same && H5Tis_variable_str(ta) <= 0 && bytes > 0) {
                char *a = malloc(bytes), *b = malloc(bytes);
                same = H5Dread(o, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, a) >= 0 &&
                       H5Dread(p, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) >= 0 &&
                       memcmp(a, b, bytes) == 0;
                free(a);
                free(b);
            }
            H5Sclose(sa);
            H5Sclose(sb);
            H5Tclose(ta);
            H5Tclose(tb);
            H5Dclose(p);
        }
        if (!same) {
            if (c->differ < 3)
                printf(" [dataset %s differs] ", name);
            c->differ++;
        }
    }
    H5Oclose(o);
    return 0;
}

/* Datasets of file a that are missing from b or differ, plus the difference in their
 * number; *n the datasets of a. */
static long h5_differ(const char *a, const char *b, long *n)
{
    hid_t fa = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(b, H5F_ACC_RDONLY, H5P_DEFAULT);
    *n = 0;
    if (fa < 0 || fb < 0) {
        if (fa >= 0)
            H5Fclose(fa);
        if (fb >= 0)
            H5Fclose(fb);
        return 1;
    }
    h5cmp ca = {fb, 0, 0}, cb = {-1, 0, 0};
    H5Lvisit(fa, H5_INDEX_NAME, H5_ITER_INC, h5_visit, &ca);
    H5Lvisit(fb, H5_INDEX_NAME, H5_ITER_INC, h5_visit, &cb);
    H5Fclose(fa);
    H5Fclose(fb);
    *n = ca.n;
    return ca.differ + labs(ca.n - cb.n);
}

typedef struct {
    int files, missing, differ;
    long datasets;
} dircmp;

/* Every .h5 file in a/sub against the file of the same name in b/sub. */
static void compare_dir(const char *a, const char *b, const char *sub, dircmp *r)
{
    char da[DECK_PATH_MAX + 32];
    snprintf(da, sizeof da, "%s/%s", a, sub);
    DIR *dir = opendir(da);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".h5") != 0)
            continue;
        char pa[2 * DECK_PATH_MAX], pb[2 * DECK_PATH_MAX];
        snprintf(pa, sizeof pa, "%s/%s/%s", a, sub, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s/%s", b, sub, e->d_name);
        long n;
        r->files++;
        if (access(pb, R_OK) != 0) {
            r->missing++;
            printf(" [%s/%s missing] ", sub, e->d_name);
            continue;
        }
        if (h5_differ(pa, pb, &n)) {
            r->differ++;
            printf(" [%s/%s differs] ", sub, e->d_name);
        }
        r->datasets += n;
    }
    closedir(dir);
}

/* ---- comparison of states in memory ---- */

static int same_floats(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Fields (E, B, J) and every particle, cluster by cluster in slot order. */
static int same_state(const sim *a, const sim *b)
{
    int same = a->step == b->step && a->nsp == b->nsp;
    for (int c = 0; c < 3 && same; c++)
        same = same_floats(a->f.e[c], b->f.e[c], a->f.size) &&
               same_floats(a->f.b[c], b->f.b[c], a->f.size) &&
               same_floats(a->f.j[c], b->f.j[c], a->f.size);
    if (!same)
        printf(" [fields differ] ");
    for (int s = 0; s < a->nsp && same; s++) {
        const species *p = &a->sp[s], *q = &b->sp[s];
        same = p->np == q->np;
        for (int c = 0; c < a->cl.n && same; c++) {
            const size_t i = (size_t)p->start[c], k = (size_t)q->start[c];
            const size_t n = (size_t)p->count[c];
            same = n == (size_t)q->count[c] &&
                   memcmp(p->cell + i, q->cell + k, n * sizeof(uint32_t)) == 0 &&
                   same_floats(p->x + i, q->x + k, n) && same_floats(p->y + i, q->y + k, n) &&
                   same_floats(p->ux + i, q->ux + k, n) &&
                   same_floats(p->uy + i, q->uy + k, n) &&
                   same_floats(p->uz + i, q->uz + k, n) && same_floats(p->w + i, q->w + k, n) &&
                   (!p->id || memcmp(p->id + i, q->id + k, n * sizeof(uint64_t)) == 0);
        }
        if (!same)
            printf(" [particles of %s differ] ", p->name);
    }
    return same;
}

/* ---- the fixed-point rule (particle.h) on the host ---- */

/* The weights of one piece (deposit_add's layout) added in double at cell k. */
static void add_exact(double *t, int k, int s, const float *w) /* s x s tile */
{
    const int at[8] = {k, k + s, k, k + 1, k, k + 1, k + s, k + s + 1};
    for (int e = 0; e < 8; e++)
        t[(e < 2 ? 0 : e < 4 ? 1 : 2) * s * s + at[e]] += w[e];
}

/* fixed_scale maps the bound to [2^29, 2^30); a deposit of random moves gives the same tile
 * in any order, within half a quantum per add of the exact sum of the float weights (the
 * float deposit's rounding error is far larger). */
static void test_fixed_point(void)
{
    const double bounds[4] = {1.0, 0.75, 3.1e-4, 1234.5};
    for (int k = 0; k < 4; k++) {
        double m = bounds[k] * fixed_scale(bounds[k]);
        CU_ASSERT(m >= 536870912.0 && m < 1073741824.0);
    }
    CU_ASSERT(fixed_of(2.5f, 1.0f) == 2 && fixed_of(-2.5f, 1.0f) == -2); /* to nearest even */
    enum { N = 2000, S = 8, SZ = 3 * S * S };
    static long long a[SZ], b[SZ];
    static float f[SZ];
    static double x[SZ];
    float x0[N], y0[N], x1[N], y1[N];
    unsigned r = 12345u;
    for (int p = 0; p < N; p++) { /* moves from cell (3, 3) of an 8 x 8 tile, < 1 cell */
        float v[4];
        for (int q = 0; q < 4; q++) {
            r = r * 1664525u + 1013904223u;
            v[q] = (float)(r >> 8) / 16777216.0f;
        }
        x0[p] = v[0];
        y0[p] = v[1];
        x1[p] = v[0] + 1.8f * v[2] - 0.9f;
        y1[p] = v[1] + 1.8f * v[3] - 0.9f;
    }
    const float cx = 1.3f, cy = 1.3f, qvz = 0.4f; /* q w dx/dt, q w vz: bound 1.3 */
    const float scale = fixed_scale(1.3);
    for (int pass = 0; pass < 2; pass++) {
        long long *t = pass ? b : a;
        for (int n = 0; n < N; n++) {
            int p = pass ? N - 1 - n : n, o[3];
            float w[24];
            int mid = move_pieces(x0[p], y0[p], x1[p], y1[p], cx, cy, qvz, S, o, w, 1);
            for (int m = 0; m < 3; m++)
                if (m != 1 || mid) {
                    deposit_add_fixed(t, t + S * S, t + 2 * S * S, 3 + 3 * S + o[m], S,
                                      w + 8 * m, 1, scale);
                    if (!pass)
                        add_exact(x, 3 + 3 * S + o[m], S, w + 8 * m);
                }
            if (!pass) /* the float deposit of the same pieces */
                deposit_pieces(f, f + S * S, f + 2 * S * S, 3 + 3 * S, S, mid ? 7u : 5u, o, w,
                               1);
        }
    }
    double dfix = 0.0, dflt = 0.0;
    for (int e = 0; e < SZ; e++) {
        dfix = fmax(dfix, fabs((double)a[e] / scale - x[e]) * scale);
        dflt = fmax(dflt, fabs((double)f[e] - x[e]) * scale);
    }
    printf(" [%d moves: fixed-point tile %s in reverse order; largest error %.0f quanta "
           "(float deposit: %.0f)] ", N, memcmp(a, b, sizeof a) ? "DIFFERS" : "the same",
           dfix, dflt);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
    CU_ASSERT(dfix <= 0.5 * 3 * N); /* half a quantum per add, at most 3 adds per move */
    CU_ASSERT(dfix < dflt);
}

/* ---- the runs ---- */

static void run_straight(sim *S, deck_maker m, const char *tag, const char *run)
{
    deck d;
    make(&d, m, tag, run, STEPS);
    CU_ASSERT_FATAL(sim_init(S, &d, 1) == 0);
    CU_ASSERT_FATAL(S->backend == use_backend);
    CU_ASSERT_FATAL(sim_run(S) == 0);
    sim_fetch(S);
}

/* STEPS/2 steps with a checkpoint at the end, then a restart from it to STEPS, in one
 * folder (energy.csv, dumps and checkpoints of both halves there). */
static void run_halves(sim *S, deck_maker m, const char *tag)
{
    deck d, r;
    sim A;
    make(&d, m, tag, "halves", STEPS / 2);
    CU_ASSERT_FATAL(sim_init(&A, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&A) == 0);
    sim_free(&A);
    char path[DECK_PATH_MAX + 64];
    long step = -1;
    CU_ASSERT_FATAL(checkpoint_find(d.output, path, sizeof path, &step) == 0);
    CU_ASSERT_FATAL(step == STEPS / 2);
    CU_ASSERT_FATAL(checkpoint_read_deck(path, &r) == 0);
    r.steps = STEPS;
    r.backend = use_backend;
    CU_ASSERT_FATAL(sim_init_from(S, &r, 1, path) == 0);
    CU_ASSERT_FATAL(sim_run(S) == 0);
    sim_fetch(S);
}

/* Output folder b equals a: energy.csv byte for byte, every dump and checkpoint of a dataset
 * for dataset; the states in memory too. */
static void compare_runs(const sim *a, const sim *b, const char *what)
{
    char ea[DECK_PATH_MAX + 16], eb[DECK_PATH_MAX + 16];
    snprintf(ea, sizeof ea, "%s/energy.csv", a->d.output);
    snprintf(eb, sizeof eb, "%s/energy.csv", b->d.output);
    int csv = same_bytes(ea, eb);
    dircmp r = {0, 0, 0, 0};
    const char *subs[5] = {"data", "tracks", "phasespace", "checkpoint", "probes"};
    for (int k = 0; k < 5; k++)
        compare_dir(a->d.output, b->d.output, subs[k], &r);
    int state = same_state(a, b);
    printf(" [%s: energy.csv %s, %d HDF5 files (%ld datasets): %d missing, %d differ; "
           "state %s] ", what, csv ? "same" : "DIFFERS", r.files, r.datasets, r.missing,
           r.differ, state ? "same" : "DIFFERS");
    CU_ASSERT(csv);
    CU_ASSERT(r.files >= 12); /* dumps and phase spaces at 0, 30, 60, 90; tracks.h5;
                                 checkpoints at 60, 120; probes.h5 */
    CU_ASSERT(r.missing == 0 && r.differ == 0);
    CU_ASSERT(state);
}

/* gauss_tol: bound on gauss_max at the end (0: not checked; a warm plasma in a PML layer
 * breaks Gauss's law there, and the window carries that into the box) */
static void check_deck(deck_maker m, const char *tag, double gauss_tol)
{
    sim A, B, H;
    run_straight(&A, m, tag, "a");
    run_straight(&B, m, tag, "b");
    compare_runs(&A, &B, "two runs");
    run_halves(&H, m, tag);
    compare_runs(&A, &H, "straight vs restarted");
    double gauss = NAN;
    int ncol;
    static double rows[STEPS][TU_ECOLS];
    int n = tu_energy_rows(A.d.output, rows, STEPS, &ncol);
    const int kg = tu_energy_col(A.d.output, "gauss_max");
    if (n > 0 && kg >= 0)
        gauss = rows[n - 1][kg];
    printf(" [gauss_max at the end %.1e] ", gauss);
    CU_ASSERT(n == STEPS / 5);
    CU_ASSERT(gauss_tol == 0 || gauss < gauss_tol);
    rm_dir(A.d.output);
    rm_dir(B.d.output);
    rm_dir(H.d.output);
    sim_free(&A);
    sim_free(&B);
    sim_free(&H);
}

static void test_warm(void)
{
    check_deck(warm_deck, "warm", 1e-5);
}

static void test_open(void)
{
    check_deck(open_deck, "open", 0);
}

int main(void)
{
    char name[128];
    if (!cuda_backend(name, sizeof name)) {
        printf("test_gpu_repro: no GPU (%s): the checks run on the CPU backend\n", name);
        use_backend = BACKEND_CPU;
    } else {
        printf("test_gpu_repro: %s\n", name);
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("bitwise reproducibility", NULL, NULL);
    CU_add_test(s, "fixed-point deposit: scale, order, agreement", test_fixed_point);
    CU_add_test(s, "periodic warm e-/e+ plasma", test_warm);
    CU_add_test(s, "laser, PML, Mur, walls, moving window", test_open);
    unsigned failed = tu_run_tests();
    return failed ? 1 : 0;
}
