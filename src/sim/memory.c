/* memory.c - the memory a run needs and what the machine has (memory.h). The figures follow
 * the allocations of emf.c, fbnd.c, species.c, output.c, checkpoint.c and report.c; the
 * host figure was checked against the peak RSS of the example decks, on one rank and on
 * several (docs/running.md). */
#include "memory.h"
#include "average.h"
#include "empic.h"
#include "extfield.h"
#include "species.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB 1048576.0
#define GIB (1024.0 * MIB)
/* The program with its libraries, OpenMP threads and HDF5 caches, measured (docs/running.md). */
#define BASE_BYTES (16.0 * MIB)
#define SLOT_BYTES 29.0         /* cell, x, y, ux, uy, uz, w (4 B each), migration code */
#define CORE_GROWTH (8.0 * MIB) /* growth step of the in-memory HDF5 files (h5out.c) */
/* what HDF5 holds while the ranks write a shared file (h5par.h): the chunks (up to 8 MiB)
 * it gathers from the ranks to filter them, measured (docs/running.md) */
#define H5_CHUNKS (24.0 * MIB)

/* Clusters along an axis, as species.c's split_axis makes them. */
static int clusters_along(int n, int want)
{
    int k = (n + want - 1) / want;
    k += k & 1;
    return k < 2 ? 2 : k;
}

/* An in-memory HDF5 image of `bytes` and its copy for the write. */
static double image(double bytes)
{
    return ceil((bytes + MIB) / CORE_GROWTH) * CORE_GROWTH + bytes + MIB;
}

/* Bytes of a checkpoint dataset of n values of e bytes (whole 2^20-value chunks). */
static double chunked(double n, double e)
{
    const double c = 1048576.0;
    return (n > c ? ceil(n / c) * c : n) * e;
}

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

size_t memory_probe_bytes(void)
{
    /* twice the last-level cache, so that the copy measures the memory, within 32-128 MiB */
    const size_t lo = (size_t)32 << 20, hi = (size_t)128 << 20;
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t b = l3 > 0 ? 2 * (size_t)l3 : lo;
    return b < lo ? lo : b > hi ? hi : b;
}

/* The largest passing need of a rank's dumps and checkpoints: one rank builds each file
 * whole in memory, then writes its copy (h5out.c); several stage their share of each (32 B
 * per particle of a dump, a species' 8-byte array of a checkpoint) while HDF5 gathers the
 * chunks to filter them (h5par.h). mesh: bytes of a field dump's meshes; parts, tracked: a
 * rank's particles of a particle and a tracks dump; ckpt: the one-rank checkpoint image;
 * live: a rank's particles of its largest species. */
static double files_need(const deck *d, int ranks, double mesh, double parts, double tracked,
                         double ckpt, double live)
{
    double t = 0.0;
    if (ranks == 1) {
        if (d->fields_every > 0)
            t = dmax(t, image(mesh));
        if (d->particles_every > 0)
            t = dmax(t, image(64.0 * parts) + 16.0 * parts);
        if (d->tracks_every > 0)
            t = dmax(t, image(64.0 * tracked) + 16.0 * tracked);
        if (d->checkpoint_every > 0) /* the image (allocated whole), its copy, a species staged */
            t = dmax(t, 2.0 * ckpt + 8.0 * live);
        return t;
    }
    if (d->fields_every > 0)
        t = dmax(t, H5_CHUNKS);
    if (parts > 0.0)
        t = dmax(t, H5_CHUNKS + 32.0 * parts);
    if (d->tracks_every > 0)
        t = dmax(t, H5_CHUNKS + 32.0 * tracked);
    if (d->checkpoint_every > 0) /* and the checksum's block */
        t = dmax(t, H5_CHUNKS + 8.0 * live + 4.0 * MIB);
    return t;
}

void memory_estimate(const deck *d, int ranks, memory_need *m)
{
    memset(m, 0, sizeof *m);
    m->ranks = ranks = ranks > 1 ? ranks : 1;
    m->node_ranks = 1;
    const double share = 1.0 / ranks; /* of the fields and particles, guards aside */
    const double size = (double)(d->nx + 4) * (d->ny + 4), cells = (double)d->nx * d->ny;
    const double ncl = (double)clusters_along(d->nx, d->cluster[0]) *
                       clusters_along(d->ny, d->cluster[1]);
    m->fields = 11.0 * 4.0 * size; /* emf.store */
    /* the external fields' arrays (extfield.h); the averaged dumps' sums, and their means
       from the first such dump on (fieldavg.h) */
    const double ext = extfield_arrays(d);
    const double avg = d->avg_every > 0 ? avg_arrays(d->avg_quantities) : 0;
    m->fields += (4.0 * ext + 12.0 * avg) * size;
    for (int k = 0; k < 4; k++) {
        double len = k < 2 ? d->ny : d->nx;
        if (d->fbnd[k] == FBND_PML || (d->fbnd[k] != FBND_PERIODIC && d->nlasers > 0))
            m->fields += 4.0 * 4.0 * d->pml_cells * len; /* CPML memories psi */
        if (d->fbnd[k] == FBND_MUR)
            m->fields += 4.0 * 4.0 * len;
    }
    m->fields *= share;
    double live_max = 0.0, slots_max = 0.0, tracked = 0.0, dz = 0.0;
    double ckpt = 4.0 * MIB + 10.0 * chunked(size, 4.0); /* checkpoint.c's image_estimate */
    for (int s = 0; s < d->nspecies; s++) {
        double n = d->load_particles[s];
        for (int k = 0; k < d->nspecies; k++) /* every electron ionization can make */
            if (d->species[k].ionize && d->species[k].ion_electrons == s)
                n += (d->species[k].max_charge - d->species[k].charge) * d->load_particles[k];
        const int track = d->tracks_every > 0 && ((d->tracks_species_mask >> s) & 1);
        /* segments of n (1 + slack) + 32 slots rounded up to 32, per cluster (a cluster
           that the plasma emptied keeps more: species_segments; not counted here) */
        const double slots = n * (1.0 + d->slack) + 48.0 * ncl;
        const double zb = d->species[s].ionize ? 1.0 : 0.0; /* charge states */
        const double bytes = (slots * (SLOT_BYTES + (track ? 8.0 : 0.0) + zb) + 13.0 * 4.0 * ncl) *
                             share;
        m->slots += bytes;
        dz += d->species[s].ionize ? slots * 41.0 / 32.0 * share : 0.0;
        m->particles += n;
        ckpt += 7.0 * chunked(n, 4.0) + (1.0 + zb) * chunked(n, 1.0) +
                (track ? chunked(n, 8.0) : 0.0);
        live_max = dmax(live_max, n * share);
        slots_max = dmax(slots_max, bytes);
        tracked += track ? n * d->tracks_fraction * share : 0.0;
    }
    /* what passes: the largest of these (they come one at a time) */
    double t = 0.0;
    if (d->fbnd[SIDE_XMIN] == FBND_PERIODIC && d->fbnd[SIDE_YMIN] == FBND_PERIODIC)
        t = dmax(t, 8.0 * cells + 16.0 * (d->nx / 2 + 1) * d->ny); /* initial Poisson solve */
    double persist = 0.0;
    double q = 0.0;
    for (int k = 0; k < 4; k++)
        q += ((d->fields_quantities >> k) & 1) ? (k < 3 ? 3.0 : 1.0 + d->nspecies) : 0.0;
    if (d->fields_every > 0 || d->particles_every > 0)
        persist = 4.0 * size * d->nspecies * share; /* per-species charge, kept from the first dump */
    const double parts = d->particles_every > 0 ? m->particles * d->particles_fraction * share
                                                : 0.0;
    t = dmax(t, files_need(d, ranks, 4.0 * cells * q, parts, tracked, ckpt, live_max));
    if (d->window_enabled) /* a rearrangement holds a species twice */
        t = dmax(t, slots_max);
    /* the CPU's bandwidth probe at the end of a run, on rank 0, when its two buffers fit with
       room to spare (cpu_backend.c): in the peak, not in what the run needs */
    if (d->backend != BACKEND_CUDA) {
        const double probe = 2.0 * (double)memory_probe_bytes() + dmin(t, 32.0 * MIB);
        m->probe = probe > t ? probe - t : 0.0; /* a dump's image under 32 MiB stays */
        t += m->probe;
    }
    m->transient = t + persist;
    m->rank = m->host = BASE_BYTES + m->fields + m->slots + m->transient;
    /* device (the gpu_malloc calls of cuda/): 15 field arrays, the external fields' arrays
     * and the averaged dumps' sums, three current tiles per cluster with their guards, the
     * particle slots and the ionization's increments and work lists (41/32 bytes per slot of
     * every ionizing species), each rank its share; the host keeps its own copy of the state */
    const int kx = clusters_along(d->nx, d->cluster[0]), ky = clusters_along(d->ny, d->cluster[1]);
    const double wmax = ceil((double)d->nx / kx), hmax = ceil((double)d->ny / ky);
    m->gpu = ((15.0 * 4.0 + 4.0 * ext + 8.0 * avg) * size +
              12.0 * ncl * (wmax + 3) * (hmax + 3)) * share + m->slots + dz;
}

void memory_node(memory_need *m, int node_ranks)
{
    m->node_ranks = node_ranks > 1 ? node_ranks : 1;
    m->host = m->rank + (m->node_ranks - 1) * (m->rank - m->probe); /* the probe: rank 0's */
}

/* First number on the line of /proc/meminfo starting with key, in bytes; < 0 if none. */
static double meminfo(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    double v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) {
            v = strtod(line + n, NULL) * 1024.0;
            break;
        }
    if (f)
        fclose(f);
    return v;
}

/* A number from a one-line file ("max" and missing files: < 0). */
static double file_number(const char *path)
{
    FILE *f = fopen(path, "re");
    char buf[64] = "";
    double v = -1;
    if (f && fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9')
        v = strtod(buf, NULL);
    if (f)
        fclose(f);
    return v;
}

/* Room left under this process's cgroup memory limit (v2, then v1); < 0 without one. */
static double cgroup_room(void)
{
    char rel[600] = "", p[700], line[600];
    FILE *f = fopen("/proc/self/cgroup", "re");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) {
            snprintf(rel, sizeof rel, "%s", line + 3);
            rel[strcspn(rel, "\n")] = '\0';
        }
    if (f)
        fclose(f);
    double room = -1;
    for (int up = 0; up < 2 && rel[0]; up++) { /* own cgroup, then the root's view */
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.max", up ? "" : rel);
        double max = file_number(p);
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.current", up ? "" : rel);
        double cur = file_number(p);
        if (max > 0 && cur >= 0)
            return max - cur;
    }
    double max = file_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    double cur = file_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (max > 0 && max < 1e18 && cur >= 0)
        room = max - cur;
    return room;
}

double memory_available(char *source, size_t len)
{
    const char *env = getenv("EMPIC_MEMORY_LIMIT");
    if (env && *env) {
        snprintf(source, len, "EMPIC_MEMORY_LIMIT");
        return strtod(env, NULL);
    }
    double avail = meminfo("MemAvailable:"), room = cgroup_room();
    snprintf(source, len, "MemAvailable");
    if (room >= 0 && (avail < 0 || room < avail)) {
        snprintf(source, len, "the cgroup memory limit");
        avail = room;
    }
    return avail;
}

int memory_check(const deck *d, const memory_need *m)
{
    char src[64];
    double avail = memory_available(src, sizeof src);
    if (avail < 0 || m->host - m->probe <= avail) /* the probe is skipped when short */
        return 0;
    char node[96] = "";
    if (m->ranks > 1)
        snprintf(node, sizeof node, " on the node of rank 0 (%d of the %d ranks, %.2f GiB "
                 "each)", m->node_ranks, m->ranks, (m->rank - m->probe) / GIB);
    empic_report(d->file, 0, "the run needs about %.2f GiB of host memory%s (%sfields %.2f, "
                 "%.3g particles %.2f, passing peaks %.2f), but %.2f GiB are available (%s); "
                 "use fewer cells or particles per cell, fewer ranks per node, or a larger "
                 "machine", (m->host - m->probe) / GIB, node, m->ranks > 1 ? "a rank: " : "",
                 m->fields / GIB, m->particles, m->slots / GIB,
                 (m->transient - m->probe) / GIB, avail / GIB, src);
    return -1;
}
