/* backend.c - choosing the backend a run uses (backend.h). */
#include "backend.h"
#include "empic.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#ifndef EMPIC_CUDA
const backend *cuda_backend(char *name, size_t len)
{
    snprintf(name, len, "this empic was built without CUDA (make CUDA=1 with nvcc installed)");
    return NULL;
}
#endif

/* "model name" of /proc/cpuinfo and the thread count. */
static void cpu_name(char *name, size_t len)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(name, len, "CPU (%d threads)", omp_get_max_threads());
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

const backend *backend_choose(int want, const char *deck_file, char *device, size_t len)
{
    const backend *gpu = want == BACKEND_CPU ? NULL : cuda_backend(device, len);
    if (want == BACKEND_CUDA && !gpu) {
        empic_report(deck_file, 0, "backend \"cuda\" asked for, but %s", device);
        return NULL;
    }
    if (gpu)
        return gpu;
    cpu_name(device, len);
    return &cpu_backend;
}
