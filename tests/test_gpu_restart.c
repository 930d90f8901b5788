/* test_gpu_restart.c - checkpoints on the CUDA backend: a GPU run continued from its own
 * checkpoint matches the straight GPU run, and a checkpoint of one backend continues on the
 * other (design.md §9: same physics; not bitwise, since the GPU deposit sums in another order).
 * Each continued run is compared with the straight run of the same deck: particle counts
 * exactly, E, B and the energy history to rounding-level tolerances, Gauss's law at rounding.
 * Skips cleanly, returning 0, where no GPU is available. */
#include "checkpoint.h"
#include "testutil.h"

#include <stdlib.h>


enum { STEPS = 60 };

/* The blob deck of testutil.h, as tests/test_restart.c runs it. */
static void blob_deck(deck *d, long steps, int backend, const char *tag)
{
    tu_deck(d, 48, 32, 0.2, 0.1, steps);
    tu_blob_species(d);
    d->energy_every = 5;
    d->pml_cells = 16;
    d->backend = backend;
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-gpurs-%d-%s", (int)getpid(), tag);
}

static void rm_dir(const char *dir)
{
    char cmd[DECK_PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* Run the deck straight to the end; the state is left on the host. */
static void run_straight(sim *S, int backend, const char *tag)
{
    deck d;
    blob_deck(&d, STEPS, backend, tag);
    CU_ASSERT_FATAL(sim_init(S, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(S) == 0);
    if (backend == BACKEND_CUDA) {
        sim_fetch(S);
    }
}

/* STEPS/2 on backend `first` with a checkpoint at the end, then a restart from that file on
 * backend `second` to STEPS; the state is left on the host. */
static void run_halves(sim *S, int first, int second, const char *tag)
{
    deck d, r;
    sim A;
    blob_deck(&d, STEPS / 2, first, tag);
    d.checkpoint_every = STEPS / 2;
    CU_ASSERT_FATAL(sim_init(&A, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&A) == 0);
    sim_free(&A);
    char path[DECK_PATH_MAX + 64];
    long step = -1;
    CU_ASSERT_FATAL(checkpoint_find(d.output, path, sizeof path, &step) == 0);
    CU_ASSERT_FATAL(step == STEPS / 2);
    CU_ASSERT_FATAL(checkpoint_read_deck(path, &r) == 0);
    r.steps = STEPS;
    r.backend = second;
    CU_ASSERT_FATAL(sim_init_from(S, &r, 1, path) == 0);
    CU_ASSERT_FATAL(S->backend == second);
    CU_ASSERT_FATAL(sim_run(S) == 0);
    if (second == BACKEND_CUDA) {
        sim_fetch(S);
    }
}

/* max |a - b| / max |a| over the interior of E and B (all components). */
static double field_diff(const sim *a, const sim *b)
{
    double dmax = 0.0, amax = 0.0;
    const emf *f = &a->f, *g = &b->f;
    for (int c = 0; c < 6; c++) {
        const float *p = c < 3 ? f->e[c] : f->b[c - 3], *q = c < 3 ? g->e[c] : g->b[c - 3];
        for (int j = 0; j < f->ny; j++)
            for (int i = 0; i < f->nx; i++) {
                int k = emf_idx(f, i, j);
                dmax = fmax(dmax, fabs((double)p[k] - q[k]));
                amax = fmax(amax, fabs((double)p[k]));
            }
    }
    return dmax / amax;
}

/* The total energy and gauss_max of the last row of energy.csv; returns the number of rows
 * or -1. */
static int last_energy(const sim *S, double *total, double *gauss)
{
    static double rows[STEPS + 1][TU_ECOLS];
    int ncol, n = tu_energy_rows(S->d.output, rows, STEPS + 1, &ncol);
    const int kt = tu_energy_col(S->d.output, "total"), kg = tu_energy_col(S->d.output, "gauss_max");
    if (n < 1 || kt < 0 || kg < 0)
        return -1;
    *total = rows[n - 1][kt];
    *gauss = rows[n - 1][kg];
    return n;
}

/* Compare a continued run with the straight one; tol bounds the relative field difference. */
static void compare(const sim *ref, const sim *run, double tol, const char *what)
{
    double t0 = NAN, g0 = NAN, t1 = NAN, g1 = NAN; /* NaN fails the asserts below */
    int r0 = last_energy(ref, &t0, &g0), r1 = last_energy(run, &t1, &g1);
    double df = field_diff(ref, run), de = fabs(t1 - t0) / t0;
    int same_np = 1;
    for (int s = 0; s < ref->nsp; s++)
        same_np &= ref->sp[s].np == run->sp[s].np;
    printf(" [%s: E,B %.1e of max; total energy %.1e; gauss_max %.1e; %d rows] ", what, df, de,
           g1, r1);
    CU_ASSERT(same_np);
    CU_ASSERT(run->step == STEPS);
    CU_ASSERT(r0 == r1 && r1 == STEPS / 5);
    CU_ASSERT(df < tol);
    CU_ASSERT(de < 1e-4);
    CU_ASSERT(g1 < 1e-5);
}

static sim cpu_ref, gpu_ref; /* the straight runs, made by the first test */
static int refs_ok;

static void test_straight(void)
{
    run_straight(&cpu_ref, BACKEND_CPU, "cpu");
    run_straight(&gpu_ref, BACKEND_CUDA, "gpu");
    double df = field_diff(&cpu_ref, &gpu_ref);
    refs_ok = 1;
    printf(" [CPU vs GPU after %d steps: E,B %.1e of max] ", STEPS, df);
    CU_ASSERT(df < 1e-4);
}

static int refs_free(void)
{
    if (!refs_ok)
        return 0;
    rm_dir(cpu_ref.d.output);
    rm_dir(gpu_ref.d.output);
    sim_free(&cpu_ref);
    sim_free(&gpu_ref);
    return 0;
}

/* STEPS/2 on `first`, checkpoint, STEPS/2 on `second`, against the straight run (the GPU one
 * when both halves ran there: two GPU runs differ only in the deposit's summation order). */
static void check_halves(int first, int second, const char *tag, const char *what)
{
    sim S;
    CU_ASSERT_FATAL(refs_ok);
    run_halves(&S, first, second, tag);
    compare(first == BACKEND_CUDA && second == BACKEND_CUDA ? &gpu_ref : &cpu_ref, &S, 1e-4,
            what);
    rm_dir(S.d.output);
    sim_free(&S);
}

static void test_gpu_gpu(void)
{
    check_halves(BACKEND_CUDA, BACKEND_CUDA, "gg", "GPU straight vs GPU halves");
}

static void test_cpu_gpu(void)
{
    check_halves(BACKEND_CPU, BACKEND_CUDA, "cg", "CPU straight vs CPU then GPU");
}

static void test_gpu_cpu(void)
{
    check_halves(BACKEND_CUDA, BACKEND_CPU, "gc", "CPU straight vs GPU then CPU");
}

int main(void)
{
    char name[128];
    if (!cuda_backend(name, sizeof name)) {
        printf("test_gpu_restart: no GPU: skipped (%s)\n", name);
        return 0;
    }
    printf("test_gpu_restart: %s\n", name);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("gpu restart", NULL, refs_free);
    CU_add_test(s, "straight runs, CPU and GPU", test_straight);
    CU_add_test(s, "GPU checkpoint, GPU restart", test_gpu_gpu);
    CU_add_test(s, "CPU checkpoint, GPU restart", test_cpu_gpu);
    CU_add_test(s, "GPU checkpoint, CPU restart", test_gpu_cpu);
    unsigned failed = tu_run_tests();
    return failed ? 1 : 0;
}

