/* test_gpu.c - the CUDA backend against the CPU backend from the same deck: one step
 * (momenta, positions, J and E to float rounding), a few hundred steps of a warm plasma
 * (Gauss's law at rounding on the GPU, energies as the CPU's for the first 100 steps), a
 * drifting plasma front that overflows cluster segments (global rearrangement on the device,
 * no particle lost, tracking ids kept), the in-situ phase-space histograms binned on the
 * device against the CPU's, field ionization of He and N in a static field (helium's
 * ionized fraction as ADK's, nitrogen's charge states as the CPU's, one electron each),
 * neutral atoms (a drifting gas moves as on the CPU, one at rest stays: the particle
 * kernel's skip of clusters at rest), binary collisions against the CPU's, and the field
 * probes' device gather against the CPU's. Skips cleanly, returning 0, where no GPU is
 * available. */
#include "adk.h"
#include "elements.h"
#include "emf.h"
#include "fbnd.h"
#include "insitu.h"
#include "species.h"
#include "testutil.h"

#include <stdlib.h>


/* Warm electrons with a drift (so that J does not cancel) on immobile ions. */
static void warm_deck(deck *d, int nx, int ny, long steps, int backend, const char *tag)
{
    tu_deck(d, nx, ny, 0.1, 0.05, steps);
    deck_species *e = tu_species(d, "electrons", -1.0, 1.0, 3, 0.05);
    snprintf(e->drift[0], sizeof e->drift[0], "0.1");
    snprintf(e->drift[2], sizeof e->drift[2], "-0.05");
    tu_species(d, "ions", 1.0, 1836.0, 3, 0.0)->immobile = 1;
    d->energy_every = 0;
    d->backend = backend;
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-gpu-%d-%s", (int)getpid(), tag);
}

static void remove_output(const sim *S)
{
    char cmd[DECK_PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", S->d.output);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", S->d.output);
}

typedef struct {
    uint32_t cell;
    float x, y, u[3];
} part;

static int part_cmp(const void *pa, const void *pb)
{
    const part *a = pa, *b = pb;
    if (a->cell != b->cell)
        return a->cell < b->cell ? -1 : 1;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return a->y < b->y ? -1 : (a->y > b->y);
}

/* The particles of cluster c, sorted by cell and offset. */
static part *cluster_parts(const species *s, int c)
{
    part *p = malloc((size_t)(s->count[c] + 1) * sizeof *p);
    for (int k = 0; k < s->count[c]; k++) {
        size_t q = (size_t)s->start[c] + k;
        p[k] = (part){s->cell[q], s->x[q], s->y[q], {s->ux[q], s->uy[q], s->uz[q]}};
    }
    qsort(p, (size_t)s->count[c], sizeof *p, part_cmp);
    return p;
}

/* species_misplaced, printing the first violations. */
static long long check_species(const species *s, const clusters *cl)
{
    long long bad = species_misplaced(s, cl), shown = 0, n = 0;
    for (int c = 0; c < cl->n && bad && shown < 3; c++) {
        int cx = c % cl->ncx, cy = c / cl->ncx;
        n += s->count[c];
        if (s->count[c] > s->cap[c])
            printf("\n    cluster %d: count %d > cap %d", c, s->count[c], s->cap[c]);
        for (int p = s->start[c]; p < s->start[c] + s->count[c] && shown < 3; p++) {
            int i = cell_i(s->cell[p]), j = cell_j(s->cell[p]);
            int in = i < cl->x0[cl->ncx] && j < cl->y0[cl->ncy] && cl->cx_of[i] == cx &&
                     cl->cy_of[j] == cy;
            if (!in || !(s->x[p] >= 0.0f && s->x[p] < 1.0f && s->y[p] >= 0.0f && s->y[p] < 1.0f)) {
                printf("\n    cluster %d (%d,%d) slot %d: cell (%d,%d) offset (%a, %a)", c, cx,
                       cy, p - s->start[c], i, j, s->x[p], s->y[p]);
                shown++;
            }
        }
    }
    if (bad)
        printf("\n    %lld violations; %lld particles in the first clusters, np %lld\n", bad, n,
               s->np);
    return bad;
}

/* Largest |a - b| over the interior, relative to max |b|. */
static double field_diff(const emf *f, const float *a, const float *b)
{
    double d = 0.0, m = 0.0;
    for (int j = 0; j < f->ny; j++)
        for (int i = 0; i < f->nx; i++) {
            int k = emf_idx(f, i, j);
            d = fmax(d, fabs((double)a[k] - b[k]));
            m = fmax(m, fabs((double)b[k]));
        }
    return m > 0 ? d / m : d;
}

/* CPU and GPU from the same deck after `steps` steps: particles (sorted per cluster) and
 * fields must agree to float rounding (a few steps) or to a looser bound (more steps); with
 * `heavy`, clusters of 16x16 cells and 81 electrons a cell (20 736 a cluster: the particle
 * kernel runs each in parts) and the kinetic energy of every step. */
static void compare_runs(int steps, double tol, int heavy)
{
    deck d;
    sim C, G;
    for (int b = 0; b < 2; b++) {
        warm_deck(&d, 48, 40, steps, b ? BACKEND_CUDA : BACKEND_CPU, b ? "gpu1" : "cpu1");
        if (heavy) {
            d.cluster[0] = d.cluster[1] = 16;
            d.species[0].ppc[0] = d.species[0].ppc[1] = 9;
            d.energy_every = 1;
        }
        CU_ASSERT_FATAL(sim_init(b ? &G : &C, &d, 1) == 0);
    }
    CU_ASSERT_FATAL(G.backend == BACKEND_CUDA);
    for (int n = 0; n < steps; n++) {
        sim_step(&C);
        sim_step(&G);
        if (getenv("EMPIC_TEST_TRACE")) {
            G.be->fetch_fields(G.be_ctx, &G.st, NULL);
            double t[9];
            for (int c = 0; c < 3; c++) {
                t[c] = field_diff(&C.f, G.f.e[c], C.f.e[c]);
                t[3 + c] = field_diff(&C.f, G.f.b[c], C.f.b[c]);
                t[6 + c] = field_diff(&C.f, G.f.j[c], C.f.j[c]);
            }
            printf("\n    step %d: E %.1e %.1e %.1e B %.1e %.1e %.1e J %.1e %.1e %.1e", n + 1,
                   t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]);
        }
    }
    sim_fetch(&G);
    double dj = 0.0, de = 0.0, db = 0.0;
    for (int c = 0; c < 3; c++) {
        dj = fmax(dj, field_diff(&C.f, G.f.j[c], C.f.j[c]));
        de = fmax(de, field_diff(&C.f, G.f.e[c], C.f.e[c]));
        db = fmax(db, field_diff(&C.f, G.f.b[c], C.f.b[c]));
    }
    const species *sc = &C.sp[0], *sg = &G.sp[0];
    CU_ASSERT(check_species(sg, &G.cl) == 0);
    long long bad = 0, n = 0;
    double dx = 0.0, du[3] = {0.0, 0.0, 0.0};
    for (int c = 0; c < C.cl.n; c++) {
        CU_ASSERT_FATAL(sc->count[c] == sg->count[c]);
        part *a = cluster_parts(sc, c), *b = cluster_parts(sg, c);
        for (int k = 0; k < sc->count[c]; k++, n++) {
            if (a[k].cell != b[k].cell) {
                bad++;
                continue;
            }
            dx = fmax(dx, fmax(fabs(a[k].x - b[k].x), fabs(a[k].y - b[k].y)));
            for (int m = 0; m < 3; m++)
                du[m] = fmax(du[m], fabs(a[k].u[m] - b[k].u[m]) / (1.0 + fabs(a[k].u[m])));
        }
        free(a);
        free(b);
    }
    const double dk = fabs(G.en_kin[0] - C.en_kin[0]) / C.en_kin[0];
    printf(" [%d steps, %lld particles: %lld in other cells, |dx| %.1e, |du| %.1e %.1e %.1e; "
           "J %.1e, E %.1e, B %.1e; kinetic %.1e] ", steps, n, bad, dx, du[0], du[1], du[2], dj,
           de, db, dk);
    CU_ASSERT(!heavy || (G.en_step == steps - 1 && dk < tol));
    CU_ASSERT(bad == 0);
    CU_ASSERT(dx < tol);
    CU_ASSERT(du[0] < tol && du[1] < tol && du[2] < tol);
    CU_ASSERT(dj < tol);
    CU_ASSERT(de < tol);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

static void test_one_step(void) { compare_runs(1, 1e-6, 0); }
static void test_ten_steps(void) { compare_runs(10, 1e-5, 0); }
static void test_heavy_clusters(void) { compare_runs(10, 1e-5, 1); }

/* Field probes (backend.h's `probe`): the device kernel's values at points all over the box
 * (every quantity, J's guards and rho prepared on the device) against the same gather on the
 * host of the fields fetched from the device (float rounding: nvcc may fuse the bilinear
 * weights' multiply-adds), and against the CPU backend's after the same ten steps. */
static void test_probes(void)
{
    enum { STEPS = 10, NP = 23 };
    deck d;
    sim C, G;
    warm_deck(&d, 48, 40, STEPS, BACKEND_CPU, "cpup");
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    warm_deck(&d, 48, 40, STEPS, BACKEND_CUDA, "gpup");
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    CU_ASSERT_FATAL(G.backend == BACKEND_CUDA);
    for (int n = 0; n < STEPS; n++) {
        sim_step(&C);
        sim_step(&G);
    }
    C.be->b_half(C.be_ctx, &C.st); /* E and B at t = n dt, as at a step's diagnostics */
    G.be->b_half(G.be_ctx, &G.st);
    static probe_req req[NP * PROBE_COUNT];
    static float vc[NP * PROBE_COUNT], vg[NP * PROBE_COUNT];
    int n = 0;
    for (int q = 0; q < NP; q++) { /* points anywhere, the box's edges included */
        const double x = fmod(0.37 + 2.113 * q, 48 * 0.1), y = fmod(0.11 * q * q, 40 * 0.1);
        const int i = (int)floor(x / 0.1), j = (int)floor(y / 0.1);
        for (int m = 0; m < PROBE_COUNT; m++)
            req[n++] = (probe_req){emf_idx(&C.f, i, j), m, (float)(x / 0.1 - i),
                                   (float)(y / 0.1 - j)};
    }
    const int need = PROBE_NEED_RHO | PROBE_NEED_J;
    C.be->probe(C.be_ctx, &C.st, need, n, req, vc);
    G.be->probe(G.be_ctx, &G.st, need, n, req, vg);
    /* the device's arrays on the host (J's guards as the probe filled them, rho as deposited) */
    sim_fetch(&G);
    G.be->rho(G.be_ctx, &G.st, NULL);
    const emf *f = &G.f;
    const float *const a[PROBE_COUNT] = {f->e[0], f->e[1], f->e[2], f->b[0], f->b[1], f->b[2],
                                         f->j[0], f->j[1], f->j[2], f->rho};
    double scale[PROBE_COUNT] = {0}, dh = 0.0, dc = 0.0;
    for (int r = 0; r < n; r++)
        scale[req[r].m] = fmax(scale[req[r].m], fabs((double)vc[r]));
    for (int r = 0; r < n; r++) {
        const probe_req *q = &req[r];
        const float h = probe_gather(a[q->m], NULL, q->m, q->k, f->stride, q->x, q->y);
        const double s = scale[q->m] > 0 ? scale[q->m] : 1.0;
        dh = fmax(dh, fabs((double)vg[r] - h) / s);
        dc = fmax(dc, fabs((double)vg[r] - vc[r]) / s);
    }
    printf(" [%d probe values: device kernel vs host gather %.1e, vs the CPU backend %.1e] ", n,
           dh, dc);
    CU_ASSERT(dh < 1e-6);
    CU_ASSERT(dc < 1e-5);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

static void test_warm_plasma(void)
{
    enum { STEPS = 300 };
    deck d;
    sim C, G;
    static double rc[STEPS][TU_ECOLS], rg[STEPS][TU_ECOLS];
    warm_deck(&d, 64, 64, STEPS, BACKEND_CPU, "cpuw");
    d.energy_every = 1;
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    warm_deck(&d, 64, 64, STEPS, BACKEND_CUDA, "gpuw");
    d.energy_every = 1;
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    int kc, kg, nc = tu_energy_rows(C.d.output, rc, STEPS, &kc),
                ng = tu_energy_rows(G.d.output, rg, STEPS, &kg);
    CU_ASSERT_FATAL(nc == STEPS && ng == STEPS && kc == 18 && kg == 18);
    /* columns: 0 step, 1 t, 2 field_E, 3 field_B, 4 kinetic_electrons, 5 kinetic_ions,
     * 6 total, 7 gauss_max, then the balance's 10 */
    double gauss = 0.0, dtot = 0.0, dkin = 0.0, dfe = 0.0;
    for (int n = 0; n < STEPS; n++) {
        gauss = fmax(gauss, rg[n][7]);
        if (n < 100) {
            dtot = fmax(dtot, fabs(rg[n][6] - rc[n][6]) / rc[n][6]);
            dkin = fmax(dkin, fabs(rg[n][4] - rc[n][4]) / rc[n][4]);
            dfe = fmax(dfe, fabs(rg[n][2] - rc[n][2]) / rc[n][6]);
        }
    }
    G.be->fetch_particles(G.be_ctx, &G.st);
    printf(" [gauss_max %.2e; first 100 steps: total %.1e, kinetic %.1e, field_E %.1e] ",
           gauss, dtot, dkin, dfe);
    CU_ASSERT(check_species(&G.sp[0], &G.cl) == 0);
    CU_ASSERT(gauss < 1e-5); /* |rho_e| = 1 */
    CU_ASSERT(dtot < 1e-3);
    CU_ASSERT(dkin < 1e-3);
    CU_ASSERT(dfe < 1e-3);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

/* A cold plasma slab drifting at 0.9 c into empty clusters: their segments (no slack)
 * overflow within a few steps, so the device must re-lay the segments. */
static void front_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 48, 32, 0.1, 0.05, 60);
    d->slack = 0.0;
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(d, s ? "ions" : "electrons", s ? 1.0 : -1.0,
                                      s ? 1836.0 : 1.0, 3, 0.0);
        sp->immobile = s;
        const double xs[4] = {0.0, 2.0, 2.05, 4.8}, fs[4] = {1.0, 1.0, 0.0, 0.0};
        tu_profile_x(sp, 4, xs, fs);
    }
    snprintf(d->species[0].drift[0], sizeof d->species[0].drift[0], "2.0");
    d->energy_every = 0;
    d->backend = backend;
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-gpu-%d-%s", (int)getpid(), tag);
}

/* The tracked particles of s as (id, cell, x, y) sorted by id; returns their number. */
typedef struct {
    uint64_t id;
    uint32_t cell;
    float x, y;
} tracked;

static int tracked_cmp(const void *pa, const void *pb)
{
    const tracked *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

static size_t tracked_list(const species *s, const clusters *cl, tracked **out)
{
    size_t n = 0;
    *out = malloc((size_t)(s->np + 1) * sizeof **out);
    for (int c = 0; c < cl->n; c++)
        for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++)
            if (s->id[p])
                (*out)[n++] = (tracked){s->id[p], s->cell[p], s->x[p], s->y[p]};
    qsort(*out, n, sizeof **out, tracked_cmp);
    return n;
}

/* wide: the GPU keeps 8-byte ids (a run whose ids could pass 2^32: a moving window that
 * starts after the run, and steps raised for the setup, then set back), else 4-byte ones */
static void rearrangement_case(int wide)
{
    deck d;
    sim C, G;
    front_deck(&d, BACKEND_CPU, "cpuf");
    d.tracks_every = 100000; /* ids on, no tracks dump but the final one */
    d.tracks_fraction = 0.25;
    d.tracks_species_mask = 3; /* the ions too: two blocks in the compacted copy */
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    front_deck(&d, BACKEND_CUDA, "gpuf");
    d.tracks_every = 100000;
    d.tracks_fraction = 0.25;
    d.tracks_species_mask = 3;
    const long steps = d.steps;
    if (wide) {
        d.window_enabled = 1;
        d.window_t_start = 1e6;
        d.steps = 1000000000L;
    }
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    G.d.steps = steps;
    CU_ASSERT((G.sp[0].id_max > 0xffffffffu) == wide);
    double slots = 0.0;
    for (int s = 0; s < G.nsp; s++)
        slots += (double)G.sp[s].alloc;
    const double per = G.be->particle_bytes(G.be_ctx, &G.st) / slots; /* 29 + the id's */
    printf(" [%s ids: %.2f B per slot] ", wide ? "8-byte" : "4-byte", per);
    CU_ASSERT(wide ? per >= 37.0 : per >= 33.0 && per < 35.0);
    const long long np = G.sp[0].np;
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    G.be->fetch_particles(G.be_ctx, &G.st);
    long long n = 0, diff = 0;
    for (int c = 0; c < G.cl.n; c++) {
        n += G.sp[0].count[c];
        diff += llabs((long long)G.sp[0].count[c] - C.sp[0].count[c]);
    }
    printf(" [%lld rearrangements, %lld of %lld particles, %lld in other clusters than on "
           "the CPU] ", G.sp[0].rearrangements, n, np, diff);
    CU_ASSERT(G.sp[0].rearrangements > 0);
    CU_ASSERT(n == np);
    CU_ASSERT(check_species(&G.sp[0], &G.cl) == 0);
    CU_ASSERT(diff <= np / 1000);
    /* tracking ids: the same unique ids on both backends, on the same particles */
    tracked *tc, *tg;
    size_t nc = tracked_list(&C.sp[0], &C.cl, &tc), ng = tracked_list(&G.sp[0], &G.cl, &tg);
    long long dup = 0, other = 0, moved = 0;
    for (size_t k = 0; k < ng; k++) {
        dup += k > 0 && tg[k].id == tg[k - 1].id;
        other += k < nc && tg[k].id != tc[k].id;
        moved += k < nc && (tg[k].cell != tc[k].cell || fabsf(tg[k].x - tc[k].x) > 1e-3f);
    }
    printf("[%zu tracked ids, %lld on other cells than on the CPU] ", ng, moved);
    CU_ASSERT(ng == nc && ng > (size_t)np / 5);
    CU_ASSERT(dup == 0 && other == 0);
    CU_ASSERT(moved <= (long long)ng / 1000);
    /* the tracks dump's path: tracked particles compacted on the device, per cluster */
    species compact[DECK_MAX_SPECIES];
    G.be->fetch_tracked(G.be_ctx, &G.st, compact);
    tracked *tk;
    size_t nk = tracked_list(&compact[0], &G.cl, &tk);
    long long differ = nk != ng, badc = 0;
    for (size_t k = 0; k < nk && k < ng; k++)
        differ += tk[k].id != tg[k].id || tk[k].cell != tg[k].cell || tk[k].x != tg[k].x ||
                  tk[k].y != tg[k].y;
    for (int c = 0; c < G.cl.n; c++) {
        int n = 0;
        for (int p = G.sp[0].start[c]; p < G.sp[0].start[c] + G.sp[0].count[c]; p++)
            n += G.sp[0].id[p] != 0;
        badc += n != compact[0].count[c];
    }
    printf("[compacted on the device: %zu, %lld differing, %lld clusters off] ", nk, differ,
           badc);
    CU_ASSERT(differ == 0 && badc == 0);
    tracked *ti, *tj; /* the second species' block (any parity of the first's count) */
    size_t ni = tracked_list(&compact[1], &G.cl, &ti), nj = tracked_list(&G.sp[1], &G.cl, &tj);
    long long differ_i = ni != nj;
    for (size_t k = 0; k < ni && k < nj; k++)
        differ_i += ti[k].id != tj[k].id || ti[k].cell != tj[k].cell || ti[k].x != tj[k].x;
    printf("[ions: %zu compacted, %lld differing] ", ni, differ_i);
    CU_ASSERT(ni > 0 && differ_i == 0);
    G.be->release_tracked(G.be_ctx, compact);
    free(ti);
    free(tj);
    free(tk);
    free(tc);
    free(tg);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

static void test_rearrangement(void)
{
    rearrangement_case(0);
    rearrangement_case(1);
}

/* In-situ histograms: the device's binning of the GPU's particles equals the CPU binning of
 * the same particles (fetched) to float accumulation rounding, in shared memory (small
 * histograms) and in global memory (large), with auto ranges equal; and the CPU run's
 * histograms agree with the GPU run's to the particles' rounding. */
static void test_phasespace(void)
{
    deck d;
    sim C, G;
    const int steps = 20;
    warm_deck(&d, 48, 40, steps, BACKEND_CPU, "cpups");
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    warm_deck(&d, 48, 40, steps, BACKEND_CUDA, "gpups");
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    for (int n = 0; n < steps; n++) {
        sim_step(&C);
        sim_step(&G);
    }
    const deck_phasespace hs[4] = {
        {.species = 0, .naxes = 2, .axis = {PSA_X, PSA_UX}, .bins = {48, 64}},
        {.species = 0, .naxes = 2, .axis = {PSA_UX, PSA_UZ}, .bins = {256, 128}},
        {.species = 0, .naxes = 1, .axis = {PSA_ENERGY}, .bins = {200, 1}},
        {.species = 0, .naxes = 2, .axis = {PSA_Y, PSA_ENERGY}, .bins = {40, 50}, .log = 1,
         .fixed = {0, 1}, .range = {{0, 0}, {1e-6, 0.1}}}};
    for (int k = 0; k < 4; k++) {
        ps_grid gc, gg;
        insitu_grid(&C, &hs[k], &gc);
        insitu_grid(&G, &hs[k], &gg); /* auto ranges from the device */
        const size_t nb = (size_t)gg.n[0] * gg.n[1];
        double *hc = calloc(nb, sizeof(double)), *hg = calloc(nb, sizeof(double)),
               *hf = calloc(nb, sizeof(double));
        G.be->phasespace(G.be_ctx, &G.st, 0, &gg, hg);
        G.be->fetch_particles(G.be_ctx, &G.st);
        cpu_backend.phasespace(NULL, &G.st, 0, &gg, hf); /* the same particles on the host */
        cpu_backend.phasespace(NULL, &C.st, 0, &gg, hc); /* the CPU run, binned alike */
        double sg = 0, sf = 0, sc = 0, dmax = 0, hmax = 0, dcpu = 0;
        for (size_t b = 0; b < nb; b++) {
            sg += hg[b];
            sf += hf[b];
            sc += hc[b];
            dmax = fmax(dmax, fabs(hg[b] - hf[b]));
            hmax = fmax(hmax, hf[b]);
            dcpu += fabs(hc[b] - hf[b]);
        }
        printf("\n    histogram %d: %zu bins, sum %.9g (device) %.9g (host) %.9g (CPU run), "
               "max bin diff %.3g of %.3g, CPU-run L1 diff %.3g", k, nb, sg, sf, sc, dmax,
               hmax, dcpu / sf);
        for (int a = 0; a < gg.naxes; a++)
            CU_ASSERT(fabs(gg.lo[a] - gc.lo[a]) <= 1e-5 * fmax(1.0, fabs(gc.lo[a])) &&
                      fabs(gg.scale[a] / gc.scale[a] - 1) < 1e-4);
        CU_ASSERT(sf > 0);
        CU_ASSERT(fabs(sg - sf) <= 1e-5 * sf);
        CU_ASSERT(dmax <= 1e-5 * hmax);
        CU_ASSERT(dcpu <= 0.01 * sf);
        free(hc);
        free(hg);
        free(hf);
    }
    printf("\n");
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

/* ---------------------------------------------------------------------------------------
 * Open boundaries, lasers, walls and the moving window: the same deck on both backends,
 * compared at the end (fields, PML memories, particle counts) and over the run (energy.csv:
 * energies relative to the total, gauss_max). */

typedef void (*deck_maker)(deck *d, int backend, const char *tag);

typedef struct {
    double field, psi, energy, gauss_cpu, gauss_gpu;
    /* the energy balance's columns (field_layers .. balance): GPU against CPU relative to
     * the larger of the row's total and the laser energy in; the GPU's own closure:
     * max |balance - balance(0)| relative to the laser energy in at the end (0 without) */
    double balance, closure, closure_cpu;
    long long np_cpu[DECK_MAX_SPECIES], np_gpu[DECK_MAX_SPECIES], counted[DECK_MAX_SPECIES];
    long long bad;
} open_cmp;

static open_cmp compare_open(deck_maker make, long steps, const char *tag)
{
    enum { MAXROWS = 400 };
    static double rc[MAXROWS][TU_ECOLS], rg[MAXROWS][TU_ECOLS];
    open_cmp r;
    memset(&r, 0, sizeof r);
    deck d;
    sim C, G;
    char t[32];
    snprintf(t, sizeof t, "%s-cpu", tag);
    make(&d, BACKEND_CPU, t);
    d.steps = steps;
    d.energy_every = 1;
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    snprintf(t, sizeof t, "%s-gpu", tag);
    make(&d, BACKEND_CUDA, t);
    d.steps = steps;
    d.energy_every = 1;
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    CU_ASSERT_FATAL(G.backend == BACKEND_CUDA);
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    sim_fetch(&G);
    for (int c = 0; c < 3; c++) {
        r.field = fmax(r.field, field_diff(&C.f, G.f.e[c], C.f.e[c]));
        r.field = fmax(r.field, field_diff(&C.f, G.f.b[c], C.f.b[c]));
    }
    if (C.f.fb) { /* PML memories, relative to their largest value */
        for (int l = 0; l < C.f.fb->nlayers; l++)
            for (int m = 0; m < 4; m++) {
                const pml_layer *a = &C.f.fb->layer[l], *b = &G.f.fb->layer[l];
                double dm = 0.0, mm = 0.0;
                for (int q = 0; q < a->n * a->len; q++) {
                    dm = fmax(dm, fabs((double)a->psi[m][q] - b->psi[m][q]));
                    mm = fmax(mm, fabs((double)a->psi[m][q]));
                }
                r.psi = fmax(r.psi, mm > 0 ? dm / mm : dm);
            }
    }
    for (int s = 0; s < C.nsp; s++) {
        r.np_cpu[s] = C.sp[s].np;
        r.np_gpu[s] = G.sp[s].np;
        for (int c = 0; c < G.cl.n; c++)
            r.counted[s] += G.sp[s].count[c];
        r.bad += check_species(&G.sp[s], &G.cl);
    }
    int nc, ng, kc, kg;
    nc = tu_energy_rows(C.d.output, rc, MAXROWS, &kc);
    ng = tu_energy_rows(G.d.output, rg, MAXROWS, &kg);
    const int kt = tu_energy_col(C.d.output, "total"), kgm = tu_energy_col(C.d.output, "gauss_max");
    const int kl = tu_energy_col(C.d.output, "field_layers"), kin = tu_energy_col(C.d.output, "in");
    const int kb = tu_energy_col(C.d.output, "balance");
    CU_ASSERT(nc == steps && ng == steps && kc == kg && kt >= 2 && kgm > kt && kl > kgm &&
              kin > kl && kb == kc - 1);
    const double in_end = nc > 0 && kin > 0 ? fabs(rg[nc - 1][kin]) : 0.0;
    for (int n = 0; n < nc && n < ng && kc == kg && kt > 0 && kl > 0 && kb > 0; n++) {
        double tot = fabs(rc[n][kt]), scale = fmax(tot, fabs(rc[n][kin]));
        for (int k = 2; k <= kt && tot > 0; k++)
            r.energy = fmax(r.energy, fabs(rg[n][k] - rc[n][k]) / tot);
        for (int k = kl; k < kc && scale > 0; k++)
            r.balance = fmax(r.balance, fabs(rg[n][k] - rc[n][k]) / scale);
        if (in_end > 0) {
            r.closure = fmax(r.closure, fabs(rg[n][kb] - rg[0][kb]) / in_end);
            r.closure_cpu = fmax(r.closure_cpu, fabs(rc[n][kb] - rc[0][kb]) / in_end);
        }
        r.gauss_cpu = fmax(r.gauss_cpu, rc[n][kgm]);
        r.gauss_gpu = fmax(r.gauss_gpu, rg[n][kgm]);
    }
    printf(" [%ld steps: fields %.1e, psi %.1e, energies %.1e, balance columns %.1e, "
           "closure %.1e (cpu %.1e); gauss_max cpu %.1e gpu %.1e",
           steps, r.field, r.psi, r.energy, r.balance, r.closure, r.closure_cpu, r.gauss_cpu,
           r.gauss_gpu);
    for (int s = 0; s < C.nsp; s++)
        printf("; %s %lld/%lld (cpu %lld)", C.sp[s].cfg->name, r.np_gpu[s], r.counted[s],
               r.np_cpu[s]);
    printf("] ");
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
    return r;
}

static void set_sides(deck *d, int x, int y, int pml)
{
    d->fbnd[SIDE_XMIN] = d->fbnd[SIDE_XMAX] = x;
    d->fbnd[SIDE_YMIN] = d->fbnd[SIDE_YMAX] = y;
    d->pml_cells = pml;
}

static deck_laser *laser_of(deck *d, int side)
{
    deck_laser *L = &d->lasers[d->nlasers++];
    memset(L, 0, sizeof *L);
    L->a0 = 1.0;
    L->omega0 = 8.0;
    L->w0 = 1.2;
    L->focus = 2.0;
    L->center = 3.2;
    L->duration = 1.5;
    L->envelope = ENV_SIN2;
    L->ramp = L->duration / 4;
    L->boundary = side;
    return L;
}

static void out_dir(deck *d, int backend, const char *tag)
{
    d->backend = backend;
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-gpu-%d-%s", (int)getpid(), tag);
}

/* A laser from xmin in vacuum, PML on all sides. */
static void laser_pml_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 128, 64, 0.1, 0.05, 0);
    set_sides(d, FBND_PML, FBND_PML, 10);
    laser_of(d, SIDE_XMIN);
    out_dir(d, backend, tag);
}

/* A circularly polarised super-Gaussian laser from ymax in vacuum, Mur on all sides. */
static void laser_mur_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 64, 128, 0.1, 0.05, 0);
    set_sides(d, FBND_MUR, FBND_MUR, 0);
    deck_laser *L = laser_of(d, SIDE_YMAX);
    L->circular = 1;
    L->profile = LPROF_SUPERGAUSSIAN;
    L->order = 6;
    out_dir(d, backend, tag);
}

static void test_laser_pml(void)
{
    open_cmp r = compare_open(laser_pml_deck, 100, "lpml");
    CU_ASSERT(r.field < 1e-5);
    CU_ASSERT(r.psi < 1e-4);
    CU_ASSERT(r.energy < 1e-5);
    CU_ASSERT(r.balance < 1e-5);
    CU_ASSERT(r.gauss_gpu < 1e-3);
}

/* A laser from xmin onto a plasma slab, PML on all sides, absorbing walls: the energy
 * balance's columns (laser energy in, field energy out per side, particle energy lost per
 * species, the field outside the balance region and the stagger term) as the CPU's, and the
 * GPU's balance closes as the CPU's does (this small, dense, intense case: to about 3e-2 of
 * the laser energy on the CPU, the particle scheme's own energy error; in vacuum 2e-8). */
static void balance_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 128, 64, 0.05, 0.03, 0);
    set_sides(d, FBND_PML, FBND_PML, 8);
    deck_laser *L = laser_of(d, SIDE_XMIN);
    L->a0 = 2.0;
    L->omega0 = 3.0;
    L->w0 = 1.0;
    L->focus = 3.0;
    L->center = 1.6;
    deck_species *e = tu_species(d, "electrons", -1.0, 1.0, 2, 0.1);
    deck_species *i = tu_species(d, "ions", 1.0, 1836.0, 2, 0.002);
    for (int k = 0; k < 4; k++)
        e->bnd[k] = i->bnd[k] = PBND_ABSORBING;
    e->profile = i->profile = PROFILE_EXPR;
    snprintf(e->density_expr, sizeof e->density_expr,
             "(x >= 3 && x < 4 && y > 0.6 && y < 2.6) ? 12 : 0");
    snprintf(i->density_expr, sizeof i->density_expr,
             "(x >= 3 && x < 4 && y > 0.6 && y < 2.6) ? 12 : 0");
    out_dir(d, backend, tag);
}

static void test_balance(void)
{
    open_cmp r = compare_open(balance_deck, 300, "bal");
    CU_ASSERT(r.bad == 0);
    CU_ASSERT(r.energy < 1e-3);
    CU_ASSERT(r.balance < 1e-3);
    CU_ASSERT(r.closure_cpu > 0 && r.closure < 1.5 * r.closure_cpu + 1e-3);
}

static void test_laser_mur(void)
{
    open_cmp r = compare_open(laser_mur_deck, 100, "lmur");
    CU_ASSERT(r.field < 1e-5);
    CU_ASSERT(r.energy < 1e-5);
    CU_ASSERT(r.gauss_gpu < 1e-3);
}

/* Warm drifting electrons on ions in a PML (x) / Mur (y) box, walls xmin reflecting, xmax
 * absorbing, ymin `ymin`, ymax reflecting. */
static void walls_deck_with(deck *d, int backend, const char *tag, int ymin)
{
    tu_deck(d, 48, 40, 0.1, 0.05, 0);
    set_sides(d, FBND_PML, FBND_MUR, 6);
    deck_species *e = tu_species(d, "electrons", -1.0, 1.0, 3, 0.08);
    snprintf(e->drift[0], sizeof e->drift[0], "0.2");
    snprintf(e->drift[1], sizeof e->drift[1], "-0.1");
    e->bnd[SIDE_XMIN] = PBND_REFLECTING;
    e->bnd[SIDE_XMAX] = PBND_ABSORBING;
    e->bnd[SIDE_YMIN] = ymin;
    e->bnd[SIDE_YMAX] = PBND_REFLECTING;
    deck_species *i = tu_species(d, "ions", 1.0, 1836.0, 3, 0.0);
    i->immobile = 1;
    for (int k = 0; k < 4; k++)
        i->bnd[k] = PBND_ABSORBING;
    out_dir(d, backend, tag);
}

static void walls_deck(deck *d, int backend, const char *tag)
{
    walls_deck_with(d, backend, tag, PBND_ABSORBING);
}

static void thermal_deck(deck *d, int backend, const char *tag)
{
    walls_deck_with(d, backend, tag, PBND_THERMAL);
}

static void test_walls(void)
{
    open_cmp r = compare_open(walls_deck, 40, "walls");
    CU_ASSERT(r.bad == 0);
    CU_ASSERT(r.np_gpu[0] == r.np_cpu[0] && r.counted[0] == r.np_gpu[0]);
    CU_ASSERT(r.np_gpu[1] == r.np_cpu[1]);
    CU_ASSERT(r.np_gpu[0] < r.np_gpu[1]); /* the absorbing walls took some */
    CU_ASSERT(r.field < 1e-4);
    CU_ASSERT(r.energy < 1e-5);
    CU_ASSERT(r.gauss_gpu < 1e-5);
}

/* A thermal wall re-emits with momenta keyed by the particle's state (pbnd_key), and the two
 * backends' particles differ in rounding, so their keys differ: the same physics, not the
 * same particles. Only counts (to a few particles: re-emitted electrons reach the absorbing
 * side or not) and energies, to a looser bound. */
static void test_thermal_wall(void)
{
    open_cmp r = compare_open(thermal_deck, 40, "thermal");
    CU_ASSERT(r.bad == 0);
    CU_ASSERT(llabs(r.np_gpu[0] - r.np_cpu[0]) <= r.np_cpu[0] / 1000);
    CU_ASSERT(r.counted[0] == r.np_gpu[0]);
    CU_ASSERT(r.energy < 2e-3);
    CU_ASSERT(r.gauss_gpu < 1e-5);
}

/* A window moving from t = 0 over electrons drifting along y and mobile ions whose density
 * ramps up beyond the box (so the injected columns differ), PML along x, periodic y. (A warm
 * plasma in the xmax layer breaks Gauss's law there, and the window carries that into the
 * box: on the CPU too.) */
static void window_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 96, 24, 0.1, 0.05, 0);
    set_sides(d, FBND_PML, FBND_PERIODIC, 8);
    d->window_enabled = 1;
    d->window_t_start = 0.0;
    for (int s = 0; s < 2; s++) {
        deck_species *sp = tu_species(d, s ? "ions" : "electrons", s ? 1.0 : -1.0,
                                      s ? 1836.0 : 1.0, 2, 0.0);
        sp->bnd[SIDE_XMIN] = sp->bnd[SIDE_XMAX] = PBND_ABSORBING;
        const double xs[3] = {0.0, 10.0, 12.0}, fs[3] = {0.5, 0.5, 2.0};
        tu_profile_x(sp, 3, xs, fs);
    }
    snprintf(d->species[0].drift[1], sizeof d->species[0].drift[1], "0.1");
    out_dir(d, backend, tag);
}

/* A window deck on both backends: a sound device state, the CPU's particle counts, the
 * CPU's fields to `field_tol` of each component's largest value. */
static open_cmp window_compare(deck_maker make, long steps, double field_tol, const char *tag)
{
    open_cmp r = compare_open(make, steps, tag);
    CU_ASSERT(r.bad == 0);
    for (int s = 0; s < 2; s++)
        CU_ASSERT(r.np_gpu[s] == r.np_cpu[s] && r.counted[s] == r.np_gpu[s]);
    CU_ASSERT(r.field < field_tol);
    return r;
}

static void test_window(void)
{
    const open_cmp r = window_compare(window_deck, 120, 1e-4, "win");
    CU_ASSERT(r.energy < 1e-5);
    CU_ASSERT(r.gauss_gpu < 1e-5);
}

/* The window deck with dense electrons in clusters 12 cells high: each shift drops 1728
 * electrons a back cluster, more than k_drop fills in one round (DROP_ROUND, 1024). The
 * backends' fields differ by ~4e-8 here as with 4 or 6 electrons a cell (one round), but
 * E_x of this quiet, neutral plasma peaks at only 2e-4: hence the looser bound. */
static void window_dense_deck(deck *d, int backend, const char *tag)
{
    window_deck(d, backend, tag);
    d->cluster[1] = 16; /* 24 rows: two clusters of 12 */
    d->species[0].ppc[0] = d->species[0].ppc[1] = 12;
}

static void test_window_dense(void) { window_compare(window_dense_deck, 40, 1e-3, "wind"); }

/* Collisions: electrons and lighter-weight ions (odd and unequal counts per cell: the three
 * half pairs, the cycling of the smaller group), e-e, e-i and i-i (sub-cycled); with `big`,
 * clusters too full for the shared index (the global one takes over). */
static void collide_deck(deck *d, int big, int backend, const char *tag)
{
    tu_deck(d, 32, 32, 0.1, 0.05, 0);
    d->cluster[0] = d->cluster[1] = big ? 16 : 8;
    tu_species(d, "electrons", -1.0, 1.0, big ? 8 : 3, 0.05);
    tu_species(d, "ions", 1.0, 100.0, big ? 7 : 2, 0.005)->n = 0.5;
    tu_collisions(d, 0, 1, 0.0, 1e22);
    tu_collisions(d, 0, 0, 0.0, 1e22);
    tu_collisions(d, 1, 1, 5.0, 1e22);
    d->collisions[2].every = 2;
    d->backend = backend;
    snprintf(d->output, sizeof d->output, "/tmp/empic-test-gpu-%d-%s", (int)getpid(), tag);
}

/* Largest |u_a - u_b| over the particles of every species (the same slots: collisions move
 * none). */
static double momenta_diff(const sim *a, const sim *b)
{
    double m = 0.0;
    for (int s = 0; s < a->nsp; s++) {
        const species *p = &a->sp[s], *q = &b->sp[s];
        for (int c = 0; c < a->cl.n; c++)
            for (int k = p->start[c]; k < p->start[c] + p->count[c]; k++)
                m = fmax(m, fmax(fabs(p->ux[k] - q->ux[k]), fmax(fabs(p->uy[k] - q->uy[k]),
                                                                  fabs(p->uz[k] - q->uz[k]))));
    }
    return m;
}

/* Ten collision steps alone (tu_collide) from the same load on the CPU and twice on the GPU:
 * the momenta agree to float rounding (the device contracts products into FMAs, the host
 * does not, and the scattering's logf, expf and cosf may differ in the last bit: the random
 * numbers and pairs are the same), the GPU runs are bitwise equal. */
static void collide_case(int big)
{
    deck d;
    sim C, G, H, Z;
    collide_deck(&d, big, BACKEND_CPU, "cpuc");
    CU_ASSERT_FATAL(sim_init(&C, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_init(&Z, &d, 1) == 0);
    collide_deck(&d, big, BACKEND_CUDA, "gpuc");
    CU_ASSERT_FATAL(sim_init(&G, &d, 1) == 0);
    CU_ASSERT_FATAL(sim_init(&H, &d, 1) == 0);
    for (int k = 1; k <= 10; k++) {
        tu_collide(&C, 50.0, k);
        tu_collide(&G, 50.0, k);
        tu_collide(&H, 50.0, k);
    }
    G.be->fetch_particles(G.be_ctx, &G.st);
    H.be->fetch_particles(H.be_ctx, &H.st);
    double dgc = momenta_diff(&G, &C), dgh = momenta_diff(&G, &H), moved = momenta_diff(&C, &Z);
    printf(" [%s: |u_gpu - u_cpu| <= %.2g, the collisions changed u by up to %.2g] ",
           big ? "global index" : "shared index", dgc, moved);
    CU_ASSERT(moved > 1e-2);
    CU_ASSERT(dgc < 1e-4);
    CU_ASSERT(dgh == 0.0);
    sim_free(&C);
    sim_free(&Z);
    sim_free(&G);
    sim_free(&H);
}

static void test_collide(void)
{
    collide_case(0);
    collide_case(1);
}

/* The whole cycle with e-e collisions (after the device's sort) against the CPU's: the
 * energies of the first 50 steps agree, no particle is lost. */
static void test_collide_cycle(void)
{
    enum { STEPS = 50 };
    deck d;
    sim C, G;
    static double rc[STEPS][TU_ECOLS], rg[STEPS][TU_ECOLS];
    for (int b = 0; b < 2; b++) {
        warm_deck(&d, 64, 64, STEPS, b ? BACKEND_CUDA : BACKEND_CPU, b ? "gpucc" : "cpucc");
        d.energy_every = 1;
        tu_collisions(&d, 0, 0, 0.0, 1e23);
        CU_ASSERT_FATAL(sim_init(b ? &G : &C, &d, 1) == 0);
    }
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    int kc, kg, nc = tu_energy_rows(C.d.output, rc, STEPS, &kc),
                ng = tu_energy_rows(G.d.output, rg, STEPS, &kg);
    CU_ASSERT_FATAL(nc == STEPS && ng == STEPS && kc == kg && kc >= 8);
    double dkin = 0.0;
    for (int n = 0; n < STEPS; n++)
        dkin = fmax(dkin, fabs(rg[n][4] - rc[n][4]) / rc[n][4]);
    G.be->fetch_particles(G.be_ctx, &G.st);
    printf(" [kinetic energy: GPU against CPU %.1e] ", dkin);
    CU_ASSERT(check_species(&G.sp[0], &G.cl) == 0);
    CU_ASSERT(dkin < 1e-3);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

/* The CPU's and the GPU's sim of make's deck (its outputs tagged cpu and gpu; *d: the GPU's). */
static void open_pair(deck_maker make, const char *cpu, const char *gpu, deck *d, sim *C,
                      sim *G)
{
    make(d, BACKEND_CPU, cpu);
    CU_ASSERT_FATAL(sim_init(C, d, 1) == 0);
    make(d, BACKEND_CUDA, gpu);
    CU_ASSERT_FATAL(sim_init(G, d, 1) == 0);
}

/* Helium and nitrogen ionizing in a static field (ADK; helium's first level goes within the
 * first step, the second within the run: two levels in a step), electrons filled by
 * ionization alone (their segments grown on the device from zero capacity). */
static void ionize_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 64, 64, 0.1, 0.07, 140);
    snprintf(d->ext[2], sizeof d->ext[2], "1.9");
    const char *el[2] = {"He", "N"};
    const int z[2] = {2, 7};
    for (int k = 0; k < 2; k++) {
        deck_species *sp = tu_species(d, el[k], 0.0, k ? 25532.0 : 7294.3, 4, 0.0);
        sp->n = 1e-6;
        sp->element = sp->max_charge = z[k];
        sp->ionize = 1;
        sp->ion_electrons = 2;
    }
    tu_species(d, "e", -1.0, 1.0, 0, 0.0)->n = 0.0;
    d->energy_every = 10;
    out_dir(d, backend, tag);
}

/* The fraction of species s's particles in charge state k, and sum of the states. */
static double state_fraction(const species *s, const clusters *cl, int k, long long *zsum)
{
    long long n = 0, m = 0;
    *zsum = 0;
    for (int c = 0; c < cl->n; c++)
        for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++) {
            n++;
            m += s->z[p] == k;
            *zsum += s->z[p];
        }
    return n ? (double)m / n : 0.0;
}

static void test_ionization(void)
{
    deck d;
    sim C, G;
    open_pair(ionize_deck, "ionc", "iong", &d, &C, &G);
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    G.be->fetch_particles(G.be_ctx, &G.st);
    double fe, fb, fbal[2], gauss;
    G.be->field_diag(G.be_ctx, &G.st, &fe, &fb, fbal, &gauss);
    /* helium: He+ after the chain He -> He+ -> He2+ at rates a, b; nitrogen (N3+, N4+ at
     * this field): as the CPU's */
    const double eu = adk_field_unit(d.n0), t = d.steps * d.dt * adk_time_unit(d.n0);
    const double a = adk_rate_si(elements_ip(2, 0), 1, 1.9 * eu),
                 b = adk_rate_si(elements_ip(2, 1), 2, 1.9 * eu);
    const double h = a / (b - a) * (exp(-a * t) - exp(-b * t));
    long long zs[2][2];
    const double gh = state_fraction(&G.sp[0], &G.cl, 1, &zs[1][0]),
                 ch = state_fraction(&C.sp[0], &C.cl, 1, &zs[0][0]);
    double dn = 0.0;
    for (int k = 0; k <= 7; k++)
        dn = fmax(dn, fabs(state_fraction(&G.sp[1], &G.cl, k, &zs[1][1]) -
                           state_fraction(&C.sp[1], &C.cl, k, &zs[0][1])));
    const double n3 = state_fraction(&G.sp[1], &G.cl, 3, &zs[1][1]);
    printf(" [He+: GPU %.4f, CPU %.4f, ADK %.4f; N3+ GPU %.4f, N states GPU - CPU %.1e; "
           "electrons GPU %lld CPU %lld; gauss_max %.1e] ", gh, ch, h, n3, dn, G.sp[2].np,
           C.sp[2].np, gauss);
    const double sigma = sqrt(h * (1 - h) / 65536.0);
    CU_ASSERT(fabs(gh - h) < 4 * sigma + 0.002 * h);
    CU_ASSERT(dn < 4 * sqrt(0.25 / 65536.0) * 1.5);
    CU_ASSERT(n3 > 0.98 && n3 < 0.995); /* 0.990 (tests/test_ionization.py) */
    CU_ASSERT(G.sp[2].np == zs[1][0] + zs[1][1]); /* one electron per ionization */
    CU_ASSERT(check_species(&G.sp[2], &G.cl) == 0);
    CU_ASSERT(gauss < 1e-10);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

/* Neutral atoms of two ionizing species in no field: a slab of helium drifting warm (not
 * cold: the device reads its momenta to find the clusters at rest) and nitrogen loaded at
 * rest (cold: its clusters are found from their charge states alone and skipped). Helium
 * must move as on the CPU, 8 cells across clusters, and nitrogen stay. */
static void neutral_deck(deck *d, int backend, const char *tag)
{
    tu_deck(d, 64, 48, 0.1, 0.07, 60);
    const char *el[2] = {"He", "N"};
    const int z[2] = {2, 7};
    for (int k = 0; k < 2; k++) {
        deck_species *sp = tu_species(d, el[k], 0.0, k ? 25532.0 : 7294.3, 2, k ? 0.0 : 0.01);
        sp->element = sp->max_charge = z[k];
        sp->ionize = 1;
        sp->ion_electrons = 2;
    }
    deck_species *he = &d->species[0];
    snprintf(he->drift[0], sizeof he->drift[0], "0.2");
    const double xs[4] = {1.0, 1.05, 2.5, 2.55}, fs[4] = {0.0, 1.0, 1.0, 0.0};
    tu_profile_x(he, 4, xs, fs);
    tu_species(d, "e", -1.0, 1.0, 0, 0.0)->n = 0.0;
    out_dir(d, backend, tag);
}

/* The mean x of species s's particles, in cells. */
static double mean_x(const species *s, const clusters *cl)
{
    double sum = 0.0;
    long long n = 0;
    for (int c = 0; c < cl->n; c++)
        for (int p = s->start[c]; p < s->start[c] + s->count[c]; p++, n++)
            sum += cell_i(s->cell[p]) + s->x[p];
    return n ? sum / n : 0.0;
}

static void test_neutral_gas(void)
{
    deck d;
    sim C, G;
    open_pair(neutral_deck, "neuc", "neug", &d, &C, &G);
    const double x0 = mean_x(&C.sp[0], &C.cl);
    part **n0 = malloc((size_t)C.cl.n * sizeof *n0); /* nitrogen as loaded */
    for (int c = 0; c < C.cl.n; c++)
        n0[c] = cluster_parts(&C.sp[1], c);
    CU_ASSERT(sim_run(&C) == 0);
    CU_ASSERT(sim_run(&G) == 0);
    G.be->fetch_particles(G.be_ctx, &G.st);
    long long bad = 0, n = 0, moved = 0;
    double dx = 0.0, du = 0.0;
    for (int s = 0; s < 2; s++) {
        CU_ASSERT(check_species(&G.sp[s], &G.cl) == 0);
        for (int c = 0; c < C.cl.n; c++) {
            CU_ASSERT_FATAL(C.sp[s].count[c] == G.sp[s].count[c]);
            part *a = cluster_parts(&C.sp[s], c), *b = cluster_parts(&G.sp[s], c);
            for (int k = 0; k < C.sp[s].count[c]; k++, n++) {
                if (a[k].cell != b[k].cell) {
                    bad++;
                    continue;
                }
                dx = fmax(dx, fmax(fabs(a[k].x - b[k].x), fabs(a[k].y - b[k].y)));
                for (int m = 0; m < 3; m++)
                    du = fmax(du, fabs(a[k].u[m] - b[k].u[m]));
                if (s == 1)
                    moved += b[k].cell != n0[c][k].cell || b[k].x != n0[c][k].x ||
                             b[k].y != n0[c][k].y || b[k].u[0] != 0.0f;
            }
            free(a);
            free(b);
        }
    }
    for (int c = 0; c < C.cl.n; c++)
        free(n0[c]);
    free(n0);
    /* v = u / gamma = 0.196 for 60 steps of 0.07: 8.2 cells */
    const double shift = mean_x(&G.sp[0], &G.cl) - x0;
    printf(" [%lld atoms: %lld in other cells than on the CPU, |dx| %.1e, |du| %.1e; helium "
           "moved %.2f cells; nitrogen atoms that moved %lld] ", n, bad, dx, du, shift, moved);
    CU_ASSERT(bad == 0);
    CU_ASSERT(dx < 1e-5);
    CU_ASSERT(du < 1e-7);
    CU_ASSERT(fabs(shift - 0.196 * 60 * 0.07 / 0.1) < 0.2);
    CU_ASSERT(moved == 0);
    remove_output(&C);
    remove_output(&G);
    sim_free(&C);
    sim_free(&G);
}

int main(void)
{
    char name[128];
    if (!cuda_backend(name, sizeof name)) {
        printf("test_gpu: no GPU: skipped (%s)\n", name);
        return 0;
    }
    printf("test_gpu: %s\n", name);
    if (getenv("EMPIC_GPU_CHECK"))
        printf("test_gpu: EMPIC_GPU_CHECK is set: particles are verified after every phase\n");
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("gpu", NULL, NULL);
    CU_add_test(s, "one step equals the CPU", test_one_step);
    CU_add_test(s, "ten steps equal the CPU", test_ten_steps);
    CU_add_test(s, "clusters run in parts equal the CPU", test_heavy_clusters);
    CU_add_test(s, "warm plasma: Gauss and energies", test_warm_plasma);
    CU_add_test(s, "field probes on the device equal the CPU's", test_probes);
    CU_add_test(s, "overflowing clusters are re-laid", test_rearrangement);
    CU_add_test(s, "laser in vacuum, PML sides", test_laser_pml);
    CU_add_test(s, "circular super-Gaussian laser from ymax, Mur sides", test_laser_mur);
    CU_add_test(s, "reflecting and absorbing walls", test_walls);
    CU_add_test(s, "energy balance: laser on a slab, PML, absorbing walls", test_balance);
    CU_add_test(s, "a thermal wall", test_thermal_wall);
    CU_add_test(s, "moving window with injection", test_window);
    CU_add_test(s, "moving window dropping more than a round of fillers", test_window_dense);
    CU_add_test(s, "phase-space histograms on the device", test_phasespace);
    CU_add_test(s, "field ionization in a static field", test_ionization);
    CU_add_test(s, "neutral atoms: drifting ones move, cold ones stay", test_neutral_gas);
    CU_add_test(s, "collisions equal the CPU's, repeatable", test_collide);
    CU_add_test(s, "collisions in the cycle: energies as the CPU's", test_collide_cycle);
    unsigned failed = tu_run_tests();
    return failed ? 1 : 0;
}

