/* gpu_backend.cu - the CUDA backend's table (cuda_backend; the twin of src/cpu/cpu_backend.c)
 * and the operations of the table that call on several phase files: open and close, the
 * charge density, the field diagnostics, the fetch of the fields and the end of a run's
 * steps. The other operations are in the files of their phase (gpu_internal.h lists them). */
#include "gpu_internal.h"
#include "average.h"

#include <stdlib.h>
#include <string.h>

int gpu_open(pic_state *st, void **ctx)
{
    char name[128];
    *ctx = NULL;
    if (!gpu_available(name, sizeof name)) {
        empic_report(NULL, 0, "backend \"cuda\": %s", name);
        return -1;
    }
    gpu_state *g = gpu_state_open(st, name, sizeof name);
    /* shared-memory plan of the particle kernels (fails with a message if clusters are too
     * large for this device) */
    gpu_particles_setup(g, st);
    if (gpu_memory_fits(g, st, name) < 0) {
        free(g);
        return -1;
    }
    gpu_memory_open(g, st);
    gpu_fbnd_setup(g, st);
    gpu_transport_open(g, st);
    gpu_particles_border_setup(g);
    gpu_walls_setup(g, st);
    if (g->ranks > 1) /* B's guards as the neighbours hold them: b_half may keep them so */
        gpu_guard_fill(g, g->b[0], g->b[1], g->b[2]);
    gpu_trace_open(g);
    GPU_CK(cudaDeviceSynchronize());
    *ctx = g;
    return 0;
}

void gpu_close(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    if (!g)
        return;
    gpu_fields_join(g);
    cudaStreamSynchronize(g->stream);
    gpu_trace_close(g);
    gpu_transport_close(g, st);
    gpu_fbnd_free(g);
    gpu_walls_free(g);
    gpu_window_free(g);
    gpu_diag_free(g);
    cudaFree(g->probe_req);
    cudaFree(g->probe_out);
    gpu_memory_close(g, st);
}

/* Charge density of all species at the current positions into g->rho: deposited together,
 * folded, filtered once, guards filled (the CPU's cpu_rho without per). */
static void rho_all(gpu_state *g, const pic_state *st)
{
    gpu_particles_rho(g, -1, g->rho);
    gpu_fields_filter(g, st, g->rho, NULL, NULL);
    gpu_guard_fill(g, g->rho, NULL, NULL);
    gpu_debug(g, st, DBG_RHO);
}

/* Per species into per + s size (folded, filtered, guards filled, as J) and their sum into
 * f->rho; without per, all species deposited together and folded and filtered once (as the
 * CPU's cpu_rho). */
void gpu_rho(void *ctx, pic_state *st, float *per)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g); /* the charge deposit shares the current's sums and the filter's array */
    emf *f = st->f;
    const size_t bytes = g->size * sizeof(float);
    if (!per) {
        rho_all(g, st);
        GPU_CK(cudaMemcpyAsync(f->rho, g->rho, bytes, cudaMemcpyDeviceToHost, g->stream));
        GPU_CK(cudaStreamSynchronize(g->stream));
        return;
    }
    for (int s = 0; s < st->nsp; s++) {
        gpu_particles_rho(g, s, g->rho2);
        gpu_fields_filter(g, st, g->rho2, NULL, NULL);
        gpu_guard_fill(g, g->rho2, NULL, NULL);
        GPU_CK(cudaStreamSynchronize(g->stream));
        GPU_CK(cudaMemcpy(per + (size_t)s * g->size, g->rho2, bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->tmp, g->rho2, bytes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < g->size; k++)
            f->rho[k] = s ? f->rho[k] + f->tmp[k] : f->tmp[k];
    }
}

void gpu_fetch_fields(void *ctx, pic_state *st, float *per)
{
    gpu_state *g = (gpu_state *)ctx;
    emf *f = st->f;
    const size_t bytes = g->size * sizeof(float);
    gpu_fields_join(g);
    gpu_window_j(g);
    GPU_CK(cudaStreamSynchronize(g->stream));
    for (int c = 0; c < 3; c++) {
        GPU_CK(cudaMemcpy(f->e[c], g->e[c], bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->b[c], g->b[c], bytes, cudaMemcpyDeviceToHost));
        GPU_CK(cudaMemcpy(f->j[c], g->j[c], bytes, cudaMemcpyDeviceToHost));
    }
    gpu_fbnd_fetch(g, st); /* PML memories, Mur edges and their clocks, for checkpoints */
    if (per)
        gpu_rho(ctx, st, per);
}

/* The external fields' arrays from the host, through their pinned staging: copied in stream
 * order (after the work queued that reads them), the host waiting only for the previous
 * copy to have left the staging before it refills it. */
void gpu_ext_fields(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    if (!g->h_ext)
        return;
    GPU_CK(cudaEventSynchronize(g->ext_done));
    for (int m = 0, k = 0; m < 6; m++)
        if (g->ext[m]) {
            float *h = g->h_ext + (size_t)k++ * g->size;
            memcpy(h, st->ext.a[m], g->size * sizeof(float));
            GPU_CK(cudaMemcpyAsync(g->ext[m], h, g->size * sizeof(float),
                                   cudaMemcpyHostToDevice, g->stream));
        }
    GPU_CK(cudaEventRecord(g->ext_done, g->stream));
}

/* One thread per entry: average.h's sum. */
__global__ void k_avg_add(double *__restrict__ sum, const float *__restrict__ a, int square,
                          int first, size_t n)
{
    const size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (k < n)
        avg_add(sum, a, square, first, k);
}

/* The averaged dumps' sums, on the device (the CPU's cpu_avg_add). */
void gpu_avg_add(void *ctx, pic_state *st, int first)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g);
    gpu_window_j(g);
    if (st->avg_q & FQ_RHO)
        rho_all(g, st);
    const float *const src[EMF_STATE] = {g->e[0], g->e[1], g->e[2], g->b[0], g->b[1],
                                         g->b[2], g->j[0], g->j[1], g->j[2], g->rho};
    for (int c = 0, n = 0; c < AVG_COUNT; c++)
        if (avg_on(st->avg_q, c)) {
            k_avg_add<<<gpu_blocks(g->size, 256), 256, 0, g->stream>>>(
                g->avg + (size_t)n++ * g->size, src[avg_source(c)], avg_square(c), first,
                g->size);
            GPU_LAUNCHED(g, "k_avg_add");
        }
}

void gpu_avg_fetch(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g);
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaMemcpy(st->avg, g->avg,
                      (size_t)avg_arrays(st->avg_q) * g->size * sizeof(double),
                      cudaMemcpyDeviceToHost));
}

/* The arrays a probe reads, by quantity (PROBE_*), and the external fields' (E and B). */
struct probe_arrays {
    const float *a[PROBE_COUNT];
    const float *x[6];
};

/* One thread per request: probe.h's gather, as the CPU's cpu_probe. */
__global__ void k_field_probe(probe_arrays a, int s, const probe_req *__restrict__ req, int n,
                              float *__restrict__ out)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n) {
        const probe_req q = req[r];
        out[r] = probe_gather(a.a[q.m], q.m < PROBE_JX ? a.x[q.m] : NULL, q.m, q.k, s, q.x,
                              q.y);
    }
}

/* Field probes: the requests up, one small kernel, the n values back (no field copied). */
void gpu_probe(void *ctx, pic_state *st, int need, int n, const probe_req *req, float *out)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g);
    if (need & PROBE_NEED_RHO)
        rho_all(g, st);
    if (need & PROBE_NEED_J) {
        gpu_window_j(g);
        gpu_guard_fill(g, g->j[0], g->j[1], g->j[2]);
    }
    if (n <= 0)
        return;
    if (n > g->probe_cap) {
        cudaFree(g->probe_req);
        cudaFree(g->probe_out);
        g->probe_req = NULL;
        g->probe_out = NULL;
        GPU_CK(cudaMalloc((void **)&g->probe_req, (size_t)n * sizeof *req));
        GPU_CK(cudaMalloc((void **)&g->probe_out, (size_t)n * sizeof *out));
        g->probe_cap = n;
    }
    probe_arrays a = {{g->e[0], g->e[1], g->e[2], g->b[0], g->b[1], g->b[2], g->j[0], g->j[1],
                       g->j[2], g->rho},
                      {g->ext[0], g->ext[1], g->ext[2], g->ext[3], g->ext[4], g->ext[5]}};
    GPU_CK(cudaMemcpyAsync(g->probe_req, req, (size_t)n * sizeof *req, cudaMemcpyHostToDevice,
                           g->stream));
    k_field_probe<<<(n + 127) / 128, 128, 0, g->stream>>>(a, g->stride, g->probe_req, n,
                                                   g->probe_out);
    GPU_LAUNCHED(g, "k_field_probe");
    GPU_CK(cudaMemcpyAsync(out, g->probe_out, (size_t)n * sizeof *out, cudaMemcpyDeviceToHost,
                           g->stream));
    GPU_CK(cudaStreamSynchronize(g->stream));
}

/* The charge density at the current positions is deposited here (never copied to the host). */
void gpu_field_diag(void *ctx, pic_state *st, double *energy_e, double *energy_b,
                    double *fbal, double *gauss)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g);
    rho_all(g, st);
    gpu_fields_energy(g, st, energy_e, energy_b, fbal, gauss);
}

/* The balance sums (flow and lost; gain is the host's) into the host copies. */
void gpu_flows(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    gpu_fields_join(g);
    GPU_CK(cudaStreamSynchronize(g->stream));
    GPU_CK(cudaMemcpy(st->flow, g->bal, g->bal_n * sizeof(double), cudaMemcpyDeviceToHost));
}

/* The sort error flags of the last step read back and the phase timers settled. */
void gpu_finish(void *ctx, pic_state *st)
{
    gpu_state *g = (gpu_state *)ctx;
    GPU_CK(cudaMemcpyAsync(g->h_flags, g->flags, 4 * g->nsp * sizeof(int),
                           cudaMemcpyDeviceToHost, g->stream));
    gpu_harvest(g, st);
    for (int s = 0; s < g->nsp; s++)
        gpu_sort_errors(g, st, s);
}

const backend *cuda_backend(char *name, size_t len)
{
    static backend b;
    if (!gpu_available(name, len))
        return NULL;
    b.name = "cuda";
    b.kind = BACKEND_CUDA;
    b.on_host = 0;
    b.open = gpu_open;
    b.close = gpu_close;
    b.b_half = gpu_b_half;
    b.particles = gpu_particles;
    b.fields = gpu_fields;
    b.window_shift = gpu_window_shift;
    b.sort = gpu_sort;
    b.collide = gpu_collide;
    b.inject = gpu_inject;
    b.ionize = gpu_ionize;
    b.ionize_end = gpu_ionize_end;
    b.rho = gpu_rho;
    b.field_diag = gpu_field_diag;
    b.flows = gpu_flows;
    b.fetch_fields = gpu_fetch_fields;
    b.fetch_particles = gpu_fetch_particles;
    b.avg_add = gpu_avg_add;
    b.avg_fetch = gpu_avg_fetch;
    b.ext_fields = gpu_ext_fields;
    b.probe = gpu_probe;
    b.fetch_tracked = gpu_fetch_tracked;
    b.release_tracked = gpu_release_tracked;
    b.phasespace = gpu_phasespace;
    b.phasespace_extent = gpu_phasespace_extent;
    b.counts = gpu_counts;
    b.fits = gpu_fits;
    b.finish = gpu_finish;
    b.bandwidth = gpu_bandwidth;
    b.particle_bytes = gpu_particle_bytes;
    return &b;
}
