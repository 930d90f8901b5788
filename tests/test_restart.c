/* test_restart.c - checkpoints: a run continued from a checkpoint is bitwise the straight run
 * (periodic plasma; laser, CPML, Mur, moving window and particle walls);
 * the guards catch non-finite values and lost particles with their location; a checkpoint
 * that cannot be written (blocked name, full disk, read-only folder) leaves the previous one
 * intact; damaged files are refused. */
#include "checkpoint.h"
#include "health.h"
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char base_dir[256];

static void out_dir(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", base_dir, name);
}

/* The blob deck of testutil.h on a 48 x 32 grid. */
static void restart_deck(deck *d, long steps, const char *name)
{
    tu_deck(d, 48, 32, 0.2, 0.1, steps);
    tu_blob_species(d);
    d->energy_every = 5;
    d->pml_cells = 16; /* what deck_load fills in, so that the stored deck loads back */
    out_dir(d->output, sizeof d->output, name);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The bytes of a file (NUL-terminated; length in *len when len != NULL), or NULL. */
static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = calloc((size_t)n + 1, 1);
    if (fread(t, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    fclose(f);
    if (len)
        *len = n;
    return t;
}

/* Bitwise equality of everything that evolves: fields with guards, the cluster tables and
 * the live particles of every species. */
static int same_state(const sim *a, const sim *b)
{
    int same = a->step == b->step && a->particle_steps == b->particle_steps;
    const size_t fb = a->f.size * sizeof(float);
    for (int c = 0; c < 3; c++)
        same &= !memcmp(a->f.e[c], b->f.e[c], fb) && !memcmp(a->f.b[c], b->f.b[c], fb) &&
                !memcmp(a->f.j[c], b->f.j[c], fb);
    same &= a->f.rho_bg == b->f.rho_bg;
    for (int s = 0; s < a->nsp; s++) {
        const species *p = &a->sp[s], *q = &b->sp[s];
        const size_t nc = (size_t)a->cl.n * sizeof(int);
        same &= p->np == q->np && p->rearrangements == q->rearrangements;
        same &= !memcmp(p->start, q->start, nc) && !memcmp(p->count, q->count, nc) &&
                !memcmp(p->cap, q->cap, nc);
        if (!same)
            return 0;
        for (int c = 0; c < a->cl.n; c++) {
            size_t o = (size_t)p->start[c], n = (size_t)p->count[c];
            same &= !memcmp(p->cell + o, q->cell + o, n * 4) &&
                    !memcmp(p->x + o, q->x + o, n * 4) && !memcmp(p->y + o, q->y + o, n * 4) &&
                    !memcmp(p->ux + o, q->ux + o, n * 4) &&
                    !memcmp(p->uy + o, q->uy + o, n * 4) &&
                    !memcmp(p->uz + o, q->uz + o, n * 4) &&
                    !memcmp(p->w + o, q->w + o, n * 4) && !memcmp(p->code + o, q->code + o, n);
        }
    }
    return same;
}

/* N steps straight == N/2 steps, checkpoint, restart from the file, N/2 steps. */
static void test_bitwise_restart(void)
{
    const long n = 60;
    deck d;
    sim A, B;
    restart_deck(&d, n, "straight");
    CU_ASSERT_FATAL(sim_init(&A, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&A) == 0);

    restart_deck(&d, n / 2, "halves");
    d.checkpoint_every = 10;
    CU_ASSERT_FATAL(sim_init(&B, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    long long rear = B.sp[0].rearrangements;
    sim_free(&B);
    printf(" [%lld re-layouts before the checkpoint] ", rear);
    CU_ASSERT(rear > 0);
    char dir[300], path[DECK_PATH_MAX + 64], p[DECK_PATH_MAX + 64];
    out_dir(dir, sizeof dir, "halves");
    /* the newest two are kept */
    snprintf(p, sizeof p, "%s/checkpoint/ckpt00000010.h5", dir);
    CU_ASSERT(!exists(p));
    snprintf(p, sizeof p, "%s/checkpoint/ckpt00000020.h5", dir);
    CU_ASSERT(exists(p));

    long step = -1;
    deck r;
    CU_ASSERT_FATAL(checkpoint_find(dir, path, sizeof path, &step) == 0);
    CU_ASSERT_EQUAL(step, n / 2);
    CU_ASSERT_FATAL(checkpoint_read_deck(path, &r) == 0);
    CU_ASSERT_STRING_EQUAL(r.output, dir);
    CU_ASSERT_EQUAL(r.steps, n / 2);
    r.steps = n; /* --steps extends the run */
    CU_ASSERT_FATAL(sim_init_from(&B, &r, 1, path) == 0);
    CU_ASSERT_EQUAL(B.step, n / 2);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    CU_ASSERT(same_state(&A, &B));
    snprintf(p, sizeof p, "%s/checkpoint/ckpt00000030.h5", dir); /* restarted from: kept */
    CU_ASSERT(!exists(p));
    snprintf(p, sizeof p, "%s/checkpoint/ckpt00000060.h5", dir);
    CU_ASSERT(exists(p));

    /* energy.csv: the rows before the restart kept, the rest appended, same as straight */
    char ea[DECK_PATH_MAX + 64], eb[DECK_PATH_MAX + 64];
    snprintf(ea, sizeof ea, "%s/energy.csv", A.d.output);
    snprintf(eb, sizeof eb, "%s/energy.csv", dir);
    char *ta = slurp(ea, NULL), *tb = slurp(eb, NULL);
    CU_ASSERT_FATAL(ta && tb);
    CU_ASSERT_STRING_EQUAL(ta, tb);
    free(ta);
    free(tb);
    sim_free(&A);
    sim_free(&B);
}

/* The same with binary collisions (e-e every other step, e-i with a computed Coulomb
 * logarithm): they add no state but the step, which keys their random numbers. */
static void collision_deck(deck *d, long steps, const char *name)
{
    restart_deck(d, steps, name);
    d->species[2].immobile = 0;
    tu_collisions(d, 0, 1, 0.0, 1e22);
    tu_collisions(d, 1, 1, 0.0, 1e22);
    tu_collisions(d, 1, 2, 0.0, 1e22);
    d->collisions[1].every = 2;
}

static void test_bitwise_restart_collisions(void)
{
    const long n = 40;
    deck d, r;
    sim A, B;
    collision_deck(&d, n, "coll-straight");
    CU_ASSERT_FATAL(sim_init(&A, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&A) == 0);
    collision_deck(&d, n / 2 + 1, "coll-halves"); /* an odd step: e-e not due at the restart */
    d.checkpoint_every = n / 2 + 1;
    CU_ASSERT_FATAL(sim_init(&B, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    sim_free(&B);
    char dir[300], path[DECK_PATH_MAX + 64];
    long step = -1;
    out_dir(dir, sizeof dir, "coll-halves");
    CU_ASSERT_FATAL(checkpoint_find(dir, path, sizeof path, &step) == 0);
    CU_ASSERT_EQUAL(step, n / 2 + 1);
    CU_ASSERT_FATAL(checkpoint_read_deck(path, &r) == 0);
    CU_ASSERT_EQUAL(r.ncollisions, 3);
    r.steps = n;
    CU_ASSERT_FATAL(sim_init_from(&B, &r, 1, path) == 0);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    CU_ASSERT(same_state(&A, &B));
    sim_free(&A);
    sim_free(&B);
}

/* The same with a laser, CPML and Mur field boundaries, the moving window and absorbing,
 * thermal and reflecting particle walls: their memories and clocks travel too. */
static const char OPEN_DECK[] =
    "simulation = { name = \"open\"; backend = \"cpu\"; seed = 3; };\n"
    "grid = { cells = [96, 48]; dx = [0.1, 0.2]; cluster = [8, 8]; };\n"
    "time = { dt = 0.05; steps = 200; };\n"
    "fields = { boundary = { xmin = \"pml\"; xmax = \"pml\"; ymin = \"mur\"; ymax = \"mur\"; };\n"
    "  pml = { cells = 8; }; moving_window = { enabled = true; t_start = 5.0; }; };\n"
    "lasers = ( { a0 = 0.5; omega0 = 10.0; w0 = 2.0; focus = 3.0; center = 4.8;\n"
    "  duration = 1.5; envelope = \"sin2\"; polarization = 0.0; boundary = \"xmin\"; } );\n"
    "species = (\n"
    "  { name = \"e\"; charge = -1.0; ppc = [2, 2]; momentum = { thermal = [0.05, 0.05, 0.05]; };\n"
    "    density = { profile = \"piecewise\"; n = 0.05; x = [2.0, 3.0]; fx = [0.0, 1.0]; };\n"
    "    boundary = { xmin = \"absorbing\"; xmax = \"absorbing\"; ymin = \"thermal\";\n"
    "                 ymax = \"reflecting\"; }; },\n"
    "  { name = \"i\"; charge = 1.0; mass = 1836.0; ppc = [1, 1];\n"
    "    density = { profile = \"piecewise\"; n = 0.05; x = [2.0, 3.0]; fx = [0.0, 1.0]; };\n"
    "    boundary = { xmin = \"absorbing\"; xmax = \"absorbing\"; ymin = \"reflecting\";\n"
    "                 ymax = \"reflecting\"; }; } );\n"
    "diagnostics = { energy = { every = 10; }; };\n";

static void open_deck(deck *d, long steps, const char *name)
{
    char path[300];
    out_dir(path, sizeof path, "open.cfg");
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(OPEN_DECK, f);
    fclose(f);
    CU_ASSERT_FATAL(deck_load(path, d) == 0);
    d->steps = steps;
    out_dir(d->output, sizeof d->output, name);
}

static void test_bitwise_restart_open(void)
{
    const long n = 200;
    deck d, r;
    sim A, B;
    mkdir(base_dir, 0755);
    open_deck(&d, n, "open-straight");
    CU_ASSERT_FATAL(sim_init(&A, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&A) == 0);
    open_deck(&d, 130, "open-halves");
    d.checkpoint_every = 130;
    CU_ASSERT_FATAL(sim_init(&B, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    printf(" [window moved %ld cells by the checkpoint; %lld of %lld electrons left] ",
           B.win.cells, B.sp[0].np, A.sp[0].np);
    CU_ASSERT(B.win.cells > 0);
    sim_free(&B);
    char dir[300], path[DECK_PATH_MAX + 64];
    long step = -1;
    out_dir(dir, sizeof dir, "open-halves");
    CU_ASSERT_FATAL(checkpoint_find(dir, path, sizeof path, &step) == 0);
    CU_ASSERT_EQUAL(step, 130);
    CU_ASSERT_FATAL(checkpoint_read_deck(path, &r) == 0);
    r.steps = n;
    CU_ASSERT_FATAL(sim_init_from(&B, &r, 1, path) == 0);
    CU_ASSERT_FATAL(sim_run(&B) == 0);
    CU_ASSERT(same_state(&A, &B));
    CU_ASSERT(A.win.cells == B.win.cells && A.f.step == B.f.step);
    char ea[DECK_PATH_MAX + 64], eb[DECK_PATH_MAX + 64];
    snprintf(ea, sizeof ea, "%s/energy.csv", A.d.output);
    snprintf(eb, sizeof eb, "%s/energy.csv", dir);
    char *ta = slurp(ea, NULL), *tb = slurp(eb, NULL);
    CU_ASSERT_FATAL(ta && tb);
    CU_ASSERT_STRING_EQUAL(ta, tb);
    free(ta);
    free(tb);
    sim_free(&A);
    sim_free(&B);
}

static void test_guards_locate(void)
{
    deck d;
    sim S;
    health_hit h;
    restart_deck(&d, 10, "guards");
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    for (int k = 0; k < 3; k++)
        sim_step(&S);
    CU_ASSERT_EQUAL(health_check(&S, &h), 0);
    CU_ASSERT_EQUAL(h.found, 0);

    float *e = &S.f.e[1][emf_idx(&S.f, 5, 7)], keep = *e;
    *e = NAN;
    CU_ASSERT_EQUAL(health_check(&S, &h), -1);
    CU_ASSERT(h.found && h.species == -1 && h.i == 5 && h.j == 7);
    CU_ASSERT_STRING_EQUAL(h.what, "Ey");
    *e = keep;
    float *b = &S.f.b[2][emf_idx(&S.f, 47, 31)];
    keep = *b;
    *b = INFINITY;
    CU_ASSERT_EQUAL(health_fields(&S.f, &h), 1);
    CU_ASSERT(h.i == 47 && h.j == 31 && isinf(h.value));
    CU_ASSERT_STRING_EQUAL(h.what, "Bz");
    *b = keep;

    species *w = &S.sp[1];
    int c = 5;
    size_t q = (size_t)w->start[c] + 2;
    CU_ASSERT_FATAL(w->count[c] > 2);
    keep = w->uz[q];
    w->uz[q] = INFINITY;
    CU_ASSERT_EQUAL(health_check(&S, &h), -1);
    CU_ASSERT(h.found && h.species == 1 && h.i == cell_i(w->cell[q]) &&
              h.j == cell_j(w->cell[q]));
    CU_ASSERT_STRING_EQUAL(h.what, "uz");
    w->uz[q] = keep;

    w->count[c]--;
    CU_ASSERT_EQUAL(health_check(&S, &h), -1);
    CU_ASSERT(h.species == 1 && h.have == w->np - 1 && h.want == w->np);
    w->count[c]++;
    CU_ASSERT_EQUAL(health_check(&S, NULL), 0);
    sim_free(&S);
}

/* A NaN in the running state stops sim_run with -1; the last checkpoint stays the newest. */
static void test_guard_stops_run(void)
{
    deck d;
    sim S;
    restart_deck(&d, 10, "nan");
    d.checkpoint_every = 10;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_run(&S) == 0);
    S.f.e[2][emf_idx(&S.f, 3, 4)] = NAN;
    S.d.steps = 40;
    CU_ASSERT_EQUAL(sim_run(&S), -1);
    printf(" [stopped at step %ld] ", S.step);
    CU_ASSERT(S.step > 10 && S.step <= 15);
    char dir[300], path[DECK_PATH_MAX + 64];
    long step = -1;
    out_dir(dir, sizeof dir, "nan");
    CU_ASSERT_FATAL(checkpoint_find(dir, path, sizeof path, &step) == 0);
    CU_ASSERT_EQUAL(step, 10);
    sim_free(&S);
}

/* SIGTERM during a run: the step ends with a checkpoint and status 143. */
static void test_signal_checkpoint(void)
{
    deck d;
    sim S;
    restart_deck(&d, 10, "signal");
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    sim_signals(1);
    sim_step(&S);
    CU_ASSERT_EQUAL(sim_after_step(&S), 0);
    sim_step(&S);
    raise(SIGTERM);
    CU_ASSERT_EQUAL(sim_signal_pending(), SIGTERM);
    CU_ASSERT_EQUAL(sim_after_step(&S), 128 + SIGTERM);
    sim_signals(0);
    char path[DECK_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/checkpoint/ckpt00000002.h5", S.d.output);
    CU_ASSERT(exists(path));
    sim_free(&S);
}

static void test_failed_writes(void)
{
    deck d, r;
    sim S, T;
    char dir[300], path[DECK_PATH_MAX + 64], p4[400], p6[400], tmp6[420];
    long step = -1;
    restart_deck(&d, 10, "fail");
    out_dir(dir, sizeof dir, "fail");
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    for (int k = 0; k < 4; k++)
        sim_step(&S);
    CU_ASSERT_FATAL(checkpoint_write(&S) == 0);
    snprintf(p4, sizeof p4, "%s/checkpoint/ckpt00000004.h5", dir);
    snprintf(p6, sizeof p6, "%s/checkpoint/ckpt00000006.h5", dir);
    snprintf(tmp6, sizeof tmp6, "%s.tmp", p6);
    long nb = 0, na = 0;
    char *before = slurp(p4, &nb);
    sim_step(&S);
    sim_step(&S);

    /* the temporary name is taken (by a folder): the write fails, ckpt 4 stays */
    CU_ASSERT_FATAL(mkdir(tmp6, 0755) == 0);
    CU_ASSERT_EQUAL(checkpoint_write(&S), -1);
    CU_ASSERT(!exists(p6));
    rmdir(tmp6);

    /* a full disk (file size limit): the write fails, no partial file is left */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64 << 10;
    signal(SIGXFSZ, SIG_IGN);
    CU_ASSERT_FATAL(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = checkpoint_write(&S);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT(!exists(p6) && !exists(tmp6));

    /* a read-only folder (meaningless for root, who writes anyway) */
    char cdir[320];
    snprintf(cdir, sizeof cdir, "%s/checkpoint", dir);
    if (geteuid() != 0) {
        chmod(cdir, 0555);
        CU_ASSERT_EQUAL(checkpoint_write(&S), -1);
        chmod(cdir, 0755);
        CU_ASSERT(!exists(p6));
    }
    char *after = slurp(p4, &na);
    CU_ASSERT_FATAL(before && after);
    CU_ASSERT(nb > 0 && na == nb && !memcmp(before, after, (size_t)nb));
    CU_ASSERT_EQUAL(checkpoint_find(dir, path, sizeof path, &step), 0);
    CU_ASSERT_EQUAL(step, 4);
    free(before);
    free(after);

    /* then a good write: 6 and its predecessor 4 are kept */
    CU_ASSERT_EQUAL(checkpoint_write(&S), 0);
    CU_ASSERT(exists(p4) && exists(p6));

    /* a damaged newer file is skipped, temporary files are ignored */
    char junk[420];
    snprintf(junk, sizeof junk, "%s/ckpt00000099.h5", cdir);
    FILE *f = fopen(junk, "w");
    fputs("not a checkpoint", f);
    fclose(f);
    snprintf(junk, sizeof junk, "%s/ckpt00000100.h5.tmp", cdir);
    f = fopen(junk, "w");
    fputs("half written", f);
    fclose(f);
    CU_ASSERT_EQUAL(checkpoint_find(dir, path, sizeof path, &step), 0);
    CU_ASSERT_EQUAL(step, 6);

    /* a flipped byte inside the particle data is caught by the checksums */
    f = fopen(p6, "r+b");
    CU_ASSERT_FATAL(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    int byte = fgetc(f);
    fseek(f, size / 2, SEEK_SET);
    fputc(byte ^ 0x5a, f);
    fclose(f);
    CU_ASSERT_FATAL(checkpoint_read_deck(p6, &r) == 0);
    CU_ASSERT_EQUAL(sim_init_from(&T, &r, 1, p6), -1);
    sim_free(&T); /* what the failed restart had set up */
    sim_free(&S);
}

/* stderr of the calls between capture_begin and capture_end, as a string (malloc'd). */
static int saved_err = -1;
static char capture_path[320];
static void capture_begin(void)
{
    fflush(stderr);
    out_dir(capture_path, sizeof capture_path, "stderr.txt");
    saved_err = dup(STDERR_FILENO);
    FILE *f = fopen(capture_path, "w");
    CU_ASSERT_FATAL(f != NULL);
    dup2(fileno(f), STDERR_FILENO);
    fclose(f);
}
static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_err, STDERR_FILENO);
    close(saved_err);
    char *t = slurp(capture_path, NULL);
    fputs(t ? t : "", stdout);
    return t;
}

/* The guards name the quantity, the species, the cell and the likely cause; the stop message
 * tells a checkpoint not yet due from none asked for. */
static void test_guard_messages(void)
{
    deck d;
    sim S;
    restart_deck(&d, 10, "messages");
    d.checkpoint_every = 100;
    CU_ASSERT_FATAL(sim_init(&S, &d, 1) == 0);
    sim_step(&S);
    sim_step(&S);
    species *w = &S.sp[0];
    size_t q = (size_t)w->start[3];
    CU_ASSERT_FATAL(w->count[3] > 0);
    float keep = w->w[q];
    w->w[q] = INFINITY; /* an infinite weight, the fields still finite */
    capture_begin();
    CU_ASSERT_EQUAL(health_check(&S, NULL), -1);
    char *t = capture_end();
    CU_ASSERT(t && strstr(t, "species blob") && strstr(t, "has weight = inf") &&
              strstr(t, "born in the particles"));
    free(t);
    w->w[q] = keep;

    /* an energy diagnostic that overflows while the state is finite: its column is named */
    S.step = 10;
    S.en_step = 9;
    S.en_kin[0] = INFINITY;
    capture_begin();
    CU_ASSERT_EQUAL(sim_after_step(&S), -1);
    t = capture_end();
    CU_ASSERT(t && strstr(t, "kinetic_blob = inf") && !strstr(t, "field_E"));
    free(t);

    capture_begin();
    sim_stop_message(&S, -1);
    t = capture_end();
    CU_ASSERT(t && strstr(t, "no checkpoint of this run exists (the first is due at step 100"));
    free(t);
    sim_free(&S);
}

int main(void)
{
    snprintf(base_dir, sizeof base_dir, "/tmp/empic-test-restart-%d", (int)getpid());
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("restart", NULL, NULL);
    CU_add_test(s, "N steps == N/2 + checkpoint + restart + N/2, bitwise", test_bitwise_restart);
    CU_add_test(s, "the same with binary collisions", test_bitwise_restart_collisions);
    CU_add_test(s, "the same with laser, CPML, Mur, moving window, particle walls",
                test_bitwise_restart_open);
    CU_add_test(s, "guards locate NaN/Inf fields, momenta, lost particles", test_guards_locate);
    CU_add_test(s, "NaN stops the run, last checkpoint intact", test_guard_stops_run);
    CU_add_test(s, "SIGTERM: checkpoint and status 143", test_signal_checkpoint);
    CU_add_test(s, "failed checkpoint writes keep the previous one", test_failed_writes);
    CU_add_test(s, "guard messages: quantity, species, cell, cause", test_guard_messages);
    unsigned fails = tu_run_tests();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", base_dir);
    if (!fails && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base_dir);
    return fails ? 1 : 0;
}
