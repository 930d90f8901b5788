/* main.c - command line: empic [options] DECK (design.md §10). */
#include "checkpoint.h"
#include "cli.h"
#include "deck.h"
#include "empic.h"
#include "report.h"
#include "sim.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *o)
{
    fputs("usage: empic [--backend cpu|cuda|auto] [--steps N] [--output DIR] [--check] "
          "[--quiet] DECK\n"
          "       empic --restart DIR [--steps N] [--output DIR] [--backend B] [--quiet]\n"
          "  --backend B   override simulation.backend\n"
          "  --steps N     override the number of steps (the total, counted from step 0)\n"
          "  --output DIR  override diagnostics.output\n"
          "  --restart DIR continue from the newest checkpoint in DIR (a run's output folder,\n"
          "                its checkpoint/ folder or one ckpt*.h5 file) with its stored deck\n"
          "  --check       validate DECK, print the resolved deck and the memory it needs\n"
          "  --quiet       no progress line or table\n"
          "  --version     print the version and the git commit of the build\n"
          "  --help        this text\n"
          "Options taking a value accept --name=value too.\n",
          o);
}

/* The usage text as a string (cli.c reads the options from it); never freed. */
static const char *usage_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        EMPIC_DIE("out of host memory");
    usage(m);
    fclose(m);
    return text;
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
    const char *deck_path = NULL, *backend = NULL, *output = NULL, *restart = NULL;
    long steps = -1;
    int check = 0, quiet = 0;
    const char *utext = usage_text();
    if (!(argv = cli_expand(&argc, argv, utext)))
        return 2;
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
        } else if (!strcmp(o, "--version")) {
            printf("empic %s\n", empic_version_string());
            return 0;
        } else if (!strcmp(o, "--restart") && more)
            restart = argv[++a];
        else if (o[0] == '-' || deck_path) {
            cli_reject(o, utext);
            return 2;
        } else
            deck_path = o;
    }
    if (restart && deck_path) {
        empic_report(NULL, 0, "--restart continues with the deck stored in the checkpoint; "
                              "leave out '%s'", deck_path);
        return 2;
    }
    if (!deck_path && !restart) {
        usage(stderr);
        return 2;
    }
    deck d;
    char ckpt[DECK_PATH_MAX + 64];
    long ckpt_step = 0;
    if (restart ? checkpoint_find(restart, ckpt, sizeof ckpt, &ckpt_step) ||
                      checkpoint_read_deck(ckpt, &d)
                : deck_load(deck_path, &d))
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
        report_scales(&d, stdout);
        deck_free(&d);
        return 0;
    }
    sim S;
    if (sim_init_from(&S, &d, quiet, restart ? ckpt : NULL))
        return 1;
    int rc = sim_run(&S);
    sim_free(&S);
    return rc < 0 ? 1 : rc; /* 128 + signal after a stop with a checkpoint */
}
