/* main.c - command line: empic [options] DECK (DESIGN §10). */
#include "deck.h"
#include "empic.h"
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *o)
{
    fputs("usage: empic [--backend cpu|cuda|auto] [--steps N] [--output DIR] [--check] "
          "[--quiet] DECK\n"
          "  --backend B   override simulation.backend\n"
          "  --steps N     override the number of steps\n"
          "  --output DIR  override diagnostics.output\n"
          "  --check       validate DECK, print the resolved deck and the memory it needs\n"
          "  --quiet       no progress line or table\n",
          o);
}

/* Memory the deck needs: fields plus particle slots with slack (upper bound: every cell
 * loaded at its full ppc). */
static void print_memory(const deck *d)
{
    double cells = (double)d->nx * d->ny, parts = 0.0;
    for (int s = 0; s < d->nspecies; s++)
        parts += cells * d->species[s].ppc[0] * d->species[s].ppc[1];
    double field = 11.0 * 4.0 * (d->nx + 4.0) * (d->ny + 4.0);
    double part = 29.0 * (1.0 + d->slack) * parts;
    printf("# memory: %.0f particles at most; host %.1f MiB (fields %.1f, particles %.1f); "
           "GPU about the same\n",
           parts, (field + part) / 1048576.0, field / 1048576.0, part / 1048576.0);
}

int main(int argc, char **argv)
{
    const char *deck_path = NULL, *backend = NULL, *output = NULL;
    long steps = -1;
    int check = 0, quiet = 0;
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        int more = a + 1 < argc;
        if (!strcmp(o, "--backend") && more)
            backend = argv[++a];
        else if (!strcmp(o, "--steps") && more) {
            char *end;
            steps = strtol(argv[++a], &end, 10);
            if (*end || steps < 0) {
                empic_report(NULL, 0, "--steps: expected a non-negative integer, got '%s'",
                             argv[a]);
                return 2;
            }
        } else if (!strcmp(o, "--output") && more)
            output = argv[++a];
        else if (!strcmp(o, "--check"))
            check = 1;
        else if (!strcmp(o, "--quiet"))
            quiet = 1;
        else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--restart")) {
            empic_report(NULL, 0, "--restart: checkpoints are not implemented in this version");
            return 2;
        } else if (o[0] == '-' || deck_path) {
            empic_report(NULL, 0, "unexpected argument '%s'", o);
            usage(stderr);
            return 2;
        } else
            deck_path = o;
    }
    if (!deck_path) {
        usage(stderr);
        return 2;
    }
    deck d;
    if (deck_load(deck_path, &d))
        return 1;
    if (backend) {
        if (!strcmp(backend, "cpu"))
            d.backend = BACKEND_CPU;
        else if (!strcmp(backend, "cuda"))
            d.backend = BACKEND_CUDA;
        else if (!strcmp(backend, "auto"))
            d.backend = BACKEND_AUTO;
        else {
            empic_report(NULL, 0, "--backend: expected cpu, cuda or auto, got '%s'", backend);
            return 2;
        }
    }
    if (steps >= 0)
        d.steps = steps;
    if (output)
        snprintf(d.output, sizeof d.output, "%s", output);
    if (check) {
        deck_write(&d, stdout);
        print_memory(&d);
        deck_free(&d);
        return 0;
    }
    sim S;
    if (sim_init(&S, &d, quiet))
        return 1;
    int rc = sim_run(&S);
    sim_free(&S);
    return rc ? 1 : 0;
}
