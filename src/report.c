/* report.c - run.cfg, energy.csv, progress line, timing table and timing.json. */
#include "report.h"
#include "empic.h"
#include "fileio.h"
#include "memory.h"
#ifdef EMPIC_CUDA
#include "../cuda/gpu.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Minimal device-memory traffic of one particle-step (one fused pass): read cell, x, y, u,
 * w (28 B), write cell, x, y, u (24 B) and the migration code (1 B), read the code in the
 * sort (1 B); plus per cell and step: gather E, B (24 B), current write-back (12 B) and the
 * Yee updates (read E, B, J, write E, B: 60 B), shared among the particles of the cell. */
#define BYTES_PARTICLE 54.0
#define BYTES_CELL 96.0

static const char *phase_name[PH_COUNT] = {"push", "deposit", "sort", "field", "other"};

void report_cpu_name(char *name, size_t len)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(name, len, "CPU");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(name, len, "%s (%d threads)", c, omp_get_max_threads());
            }
            break;
        }
    fclose(f);
}

static void out_path(const sim *S, char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", S->d.output, name);
}

int report_open(sim *S)
{
    char path[DECK_PATH_MAX + 64];
    if (fileio_mkdir_p(S->d.output, "output folder"))
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    deck_write(&S->d, m);
    fclose(m);
    out_path(S, path, sizeof path, "run.cfg");
    int rc = fileio_write_atomic(path, text, len);
    free(text);
    if (rc)
        return -1;
    if (S->d.energy_every > 0) {
        out_path(S, path, sizeof path, "energy.csv");
        if (!(S->energy = fileio_open_tmp(path)))
            return -1;
        fprintf(S->energy, "step,t,field_E,field_B");
        for (int s = 0; s < S->nsp; s++)
            fprintf(S->energy, ",kinetic_%s", S->sp[s].cfg->name);
        fprintf(S->energy, ",total,gauss_max\n");
    }
    if (!S->quiet) {
        long long np = 0;
        for (int s = 0; s < S->nsp; s++)
            np += S->sp[s].np;
        printf("empic: %s  %dx%d cells, %d species, %lld particles (%lld pushed), %ld steps, "
               "backend %s [%s]\n",
               S->d.name, S->d.nx, S->d.ny, S->nsp, np, sim_particles(S), S->d.steps,
               S->backend == BACKEND_CUDA ? "cuda" : "cpu", S->device);
        fflush(stdout);
    }
    return 0;
}

void report_energy_row(sim *S, double fe, double fb, const double *kin, double gauss)
{
    if (!S->energy)
        return;
    double total = fe + fb;
    fprintf(S->energy, "%ld,%.9g,%.12g,%.12g", S->step, S->step * S->d.dt, fe, fb);
    for (int s = 0; s < S->nsp; s++) {
        fprintf(S->energy, ",%.12g", kin[s]);
        total += kin[s];
    }
    fprintf(S->energy, ",%.12g,%.6g\n", total, gauss);
    fflush(S->energy);
}

void report_progress(sim *S, int final)
{
    double now = omp_get_wtime();
    if (S->quiet || (!final && now - S->progress_at < 0.5))
        return;
    S->progress_at = now;
    int tty = isatty(STDERR_FILENO);
    if (!tty && !final && S->step % (S->d.steps / 10 > 0 ? S->d.steps / 10 : 1) != 0)
        return;
    double rate = S->wall_s > 0 ? S->particle_steps / S->wall_s : 0.0;
    double eta = S->step > 0 ? S->wall_s / S->step * (S->d.steps - S->step) : 0.0;
    fprintf(stderr, "%sstep %ld/%ld  t = %.3f  %.3g particle-steps/s  ETA %.0f s%s",
            tty ? "\r" : "", S->step, S->d.steps, S->step * S->d.dt, rate, eta,
            tty && !final ? "   " : "\n");
}

/* Host memory bandwidth (read + write of a copy larger than the last-level cache) for the
 * CPU report; memory.c counts its buffers in the run's memory. */
static double cpu_bandwidth(void)
{
    size_t n = memory_probe_bytes();
    char *a = malloc(n), *b = malloc(n);
    double best = 0.0;
    if (a && b) {
        memset(a, 1, n);
        memset(b, 2, n);
        for (int r = 0; r < 3; r++) {
            double t0 = omp_get_wtime();
#pragma omp parallel for
            for (int k = 0; k < 64; k++)
                memcpy(b + (size_t)k * (n / 64), a + (size_t)k * (n / 64), n / 64);
            double bw = 2.0 * n / (omp_get_wtime() - t0);
            best = bw > best ? bw : best;
        }
    }
    free(a);
    free(b);
    return best;
}

int report_close(sim *S)
{
    char fin[DECK_PATH_MAX + 64];
    int bad = 0;
    if (S->energy) { /* a failure here still leaves timing.json and the table to write */
        out_path(S, fin, sizeof fin, "energy.csv");
        bad = fileio_finish(S->energy, fin);
        S->energy = NULL;
    }
    double ps = (double)(S->particle_steps > 0 ? S->particle_steps : 1);
    double known = 0.0, ns[PH_COUNT];
    for (int p = 0; p < PH_OTHER; p++)
        known += S->phase_s[p];
    S->phase_s[PH_OTHER] = S->wall_s > known ? S->wall_s - known : 0.0;
    for (int p = 0; p < PH_COUNT; p++)
        ns[p] = S->phase_s[p] / ps * 1e9;
    double total = S->wall_s / ps * 1e9;
    long long np = sim_particles(S);
    double bytes = BYTES_PARTICLE + BYTES_CELL * S->d.nx * S->d.ny / (np > 0 ? np : 1);
    double bw = S->backend == BACKEND_CPU ? (S->step > 0 ? cpu_bandwidth() : 0.0) : 0.0;
    double mem = 0.0;
    for (int s = 0; s < S->nsp; s++)
        if (!S->sp[s].cfg->immobile)
            mem = species_bytes_per_particle(&S->sp[s]);
#ifdef EMPIC_CUDA
    if (S->backend == BACKEND_CUDA) {
        bw = gpu_bandwidth();
        mem = gpu_bytes_per_particle(S);
    }
#endif
    double floor_ns = bw > 0 ? bytes / bw * 1e9 : 0.0;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fprintf(m, "{\n  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"threads\": %d,\n",
            S->backend == BACKEND_CUDA ? "cuda" : "cpu", S->device, omp_get_max_threads());
    fprintf(m, "  \"steps\": %ld,\n  \"particles\": %lld,\n  \"cells\": %d,\n", S->step, np,
            S->d.nx * S->d.ny);
    fprintf(m, "  \"wall_s\": %.6f,\n  \"ns_per_particle_step\": {\"total\": %.6g", S->wall_s,
            total);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(m, ", \"%s\": %.6g", phase_name[p], ns[p]);
    fprintf(m, "},\n  \"bytes_per_particle_step\": %.2f,\n  \"bandwidth_bytes_per_s\": %.4g,\n",
            bytes, bw);
    fprintf(m, "  \"bandwidth_floor_ns\": %.6g,\n  \"bandwidth_fraction\": %.4f,\n", floor_ns,
            total > 0 && floor_ns > 0 ? floor_ns / total : 0.0);
    fprintf(m, "  \"memory_bytes_per_particle\": %.2f\n}\n", mem);
    fclose(m);
    out_path(S, fin, sizeof fin, "timing.json");
    int rc = fileio_write_atomic(fin, text, len) | bad;
    free(text);
    if (!S->quiet) {
        printf("\n%-9s %12s %8s\n", "phase", "ns/part-step", "share");
        for (int p = 0; p < PH_COUNT; p++)
            printf("%-9s %12.3f %7.1f%%\n", phase_name[p], ns[p],
                   total > 0 ? 100.0 * ns[p] / total : 0.0);
        printf("%-9s %12.3f %7.1f%%   (%.0f B/particle-step; bandwidth floor %.3f ns = %.1f%%"
               " of the time)\n",
               "total", total, 100.0, bytes, floor_ns, total > 0 ? 100 * floor_ns / total : 0.0);
        printf("wall %.2f s for %ld steps on %s; output in %s/\n", S->wall_s, S->step,
               S->device, S->d.output);
    }
    return rc;
}
