/* gpu_trace.cu - EMPIC_GPU_TRACE=PREFIX: the time line of a run's GPU work, for finding where
 * a step's time goes where no timeline profiler is at hand. Every kernel launch
 * (gpu_launched), NCCL group and host wait is marked: an event recorded in the stream the
 * work went to, with the host's clock at the call. PREFIX.rankN.csv gets a line per mark:
 * step, stream (main or field), what, the host's ms at the call and the device's ms at which
 * the stream passed the mark (both since the first mark; a host wait's device ms is -1).
 * tools/gpu-trace summarises the files. The events are read in batches: a batch's read
 * waits for the device once, outside the steps it measures as far as the batch allows. */
#include "gpu_internal.h"

#include <omp.h>
#include <stdlib.h>

#define TRACE_MARKS 8192

struct gpu_trace {
    FILE *out;
    cudaEvent_t epoch, ev[TRACE_MARKS];
    double host0; /* the host's clock when the device passed epoch */
    const char *what[TRACE_MARKS];
    double host[TRACE_MARKS], wait_s[TRACE_MARKS];
    long step[TRACE_MARKS];
    const char *stream[TRACE_MARKS]; /* the mark's stream: main, field or border */
    int n;
    long now; /* the step being queued */
};

void gpu_trace_open(gpu_state *g)
{
    const char *prefix = getenv("EMPIC_GPU_TRACE");
    if (!prefix || !*prefix)
        return;
    gpu_trace *t = (gpu_trace *)empic_calloc(1, sizeof *t, "GPU trace");
    char path[4096];
    snprintf(path, sizeof path, "%s.rank%d.csv", prefix, g->rank);
    if (!(t->out = fopen(path, "w")))
        EMPIC_DIE("EMPIC_GPU_TRACE: cannot write %s", path);
    fprintf(t->out, "step,stream,what,host_ms,device_ms\n");
    for (int k = 0; k < TRACE_MARKS; k++)
        GPU_CK(cudaEventCreate(&t->ev[k]));
    GPU_CK(cudaEventCreate(&t->epoch));
    GPU_CK(cudaDeviceSynchronize());
    GPU_CK(cudaEventRecord(t->epoch, g->main_stream));
    GPU_CK(cudaEventSynchronize(t->epoch));
    t->host0 = omp_get_wtime();
    g->trace = t;
}

static void flush(gpu_state *g)
{
    gpu_trace *t = g->trace;
    GPU_CK(cudaDeviceSynchronize());
    for (int k = 0; k < t->n; k++) {
        float ms = -1.0f;
        if (t->wait_s[k] < 0)
            GPU_CK(cudaEventElapsedTime(&ms, t->epoch, t->ev[k]));
        const double host = 1e3 * (t->host[k] - t->host0);
        if (t->wait_s[k] < 0)
            fprintf(t->out, "%ld,%s,%s,%.4f,%.4f\n", t->step[k], t->stream[k],
                    t->what[k], host, ms);
        else /* a host wait: its start, then its end as the device column's stand-in */
            fprintf(t->out, "%ld,host,%s,%.4f,%.4f\n", t->step[k], t->what[k], host,
                    host + 1e3 * t->wait_s[k]);
    }
    t->n = 0;
}

/* The next mark's slot (the batch read first when full, which waits for the device and
 * is marked itself: tools/gpu-trace leaves its step out): what, at host time `host`. */
static int slot(gpu_state *g, const char *what, double host)
{
    gpu_trace *t = g->trace;
    if (t->n == TRACE_MARKS) {
        const double w0 = omp_get_wtime();
        flush(g);
        gpu_trace_wait(g, "trace-flush", w0); /* the first of the new batch */
    }
    const int k = t->n++;
    t->host[k] = host;
    t->what[k] = what;
    t->step[k] = t->now;
    return k;
}

void gpu_trace_mark(gpu_state *g, const char *what)
{
    gpu_trace *t = g->trace;
    if (!t)
        return;
    const int k = slot(g, what, omp_get_wtime());
    t->stream[k] = g->stream == g->main_stream     ? "main"
                   : g->stream == g->field_stream ? "field"
                   : g->stream == g->inner_stream ? "inner"
                                                  : "border";
    t->wait_s[k] = -1.0;
    GPU_CK(cudaEventRecord(t->ev[k], g->stream));
}

double gpu_trace_now(const gpu_state *g) { return g->trace ? omp_get_wtime() : 0.0; }

void gpu_trace_wait(gpu_state *g, const char *what, double since)
{
    gpu_trace *t = g->trace;
    if (!t)
        return;
    const int k = slot(g, what, since);
    t->stream[k] = "host";
    t->wait_s[k] = omp_get_wtime() - since;
}

void gpu_trace_host(gpu_state *g, const char *what)
{
    gpu_trace *t = g->trace;
    if (t && t->n > 0) {
        const int k = t->n - 1;
        gpu_trace_wait(g, what, t->host[k] + (t->wait_s[k] > 0 ? t->wait_s[k] : 0));
    }
}

/* A new step: the host's time since the last step's last mark (the simulation's own work
 * between the steps, its collectives with the other ranks) marked as a wait. */
void gpu_trace_step(gpu_state *g, long step)
{
    gpu_trace *t = g->trace;
    if (!t || step == t->now)
        return;
    t->now = step;
    gpu_trace_host(g, "between-steps");
}

void gpu_trace_close(gpu_state *g)
{
    gpu_trace *t = g->trace;
    if (!t)
        return;
    flush(g);
    fclose(t->out);
    for (int k = 0; k < TRACE_MARKS; k++)
        cudaEventDestroy(t->ev[k]);
    cudaEventDestroy(t->epoch);
    free(t);
    g->trace = NULL;
}
