/* main.c - command line: empic [options] DECK (design.md §10). */
#include "checkpoint.h"
#include "cli.h"
#include "comm.h"
#include "deck.h"
#include "empic.h"
#include "fileio.h"
#include "memory.h"
#include "rebalance.h"
#include "report.h"
#include "sim.h"
#include "version.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *o)
{
    fputs("usage: empic [--backend cpu|cuda|auto] [--steps N] [--output DIR] [--overwrite] "
          "[--wall-time S] [--check] [--quiet] DECK\n"
          "       empic --restart DIR [--steps N] [--output DIR] [--backend B] [--wall-time S] "
          "[--quiet]\n"
          "  --backend B   override simulation.backend\n"
          "  --steps N     override the number of steps (the total, counted from step 0)\n"
          "  --output DIR  override diagnostics.output\n"
          "  --overwrite   replace the files of another run in the output folder\n"
          "  --wall-time S stop with a checkpoint before S seconds of wall clock (exit 3;\n"
          "                overrides simulation.wall_time; 0: no limit)\n"
          "  --restart DIR continue from the newest checkpoint in DIR (a run's output folder,\n"
          "                its checkpoint/ folder or one ckpt*.h5 file) with its stored deck\n"
          "  --check       validate DECK, print the resolved deck and the memory it needs\n"
          "  --quiet       no progress line or table\n"
          "  --version     print the version and the git commit of the build\n"
          "  --help        this text\n"
          "Options taking a value accept --name=value too.\n",
          o);
}

/* The usage text as a string (cli.c reads the options from it). */
static char *usage_text(void)
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

/* Memory the deck needs, and what the machine has. */
static void print_memory(const memory_need *m)
{
    char src[64];
    double avail = memory_available(src, sizeof src);
    char node[96] = "";
    if (m->ranks > 1)
        snprintf(node, sizeof node, " on rank 0's node (%d of %d ranks, %.1f MiB each)",
                 m->node_ranks, m->ranks, (m->rank - m->probe) / 1048576.0);
    printf("# memory: %.4g particles at most; host %.1f MiB%s (%sfields %.1f, particles %.1f, "
           "passing peaks %.1f), %.1f MiB available (%s); GPU %.1f MiB%s\n",
           m->particles, m->host / 1048576.0, node, m->ranks > 1 ? "a rank: " : "",
           m->fields / 1048576.0, m->slots / 1048576.0, m->transient / 1048576.0,
           avail / 1048576.0, src, m->gpu / 1048576.0, m->ranks > 1 ? " a rank" : "");
    if (m->probe > 0)
        printf("# memory: %.1f MiB of the host figure are the bandwidth probe at the end, made "
               "only when that much is free\n", m->probe / 1048576.0);
}

/* The command line. */
typedef struct {
    const char *deck, *backend, *output, *restart;
    long steps; /* -1: the deck's */
    double wall; /* --wall-time; -1: the deck's */
    int check, quiet, overwrite;
    char *utext;  /* the usage text and the expanded argv the strings above point into */
    char **argv;
} options;

/* Fill o from argv; -1 to go on, else the exit status (0 after --help or --version). */
static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->steps = -1;
    o->wall = -1;
    const char *utext = o->utext = usage_text();
    if (!(argv = o->argv = cli_expand(&argc, argv, utext)))
        return 2;
    for (int a = 1; a < argc; a++) /* paths are kept in buffers of DECK_PATH_MAX */
        if (strlen(argv[a]) >= DECK_PATH_MAX) {
            empic_report(NULL, 0, "argument %d (%.40s...) is %zu characters long; expected at "
                         "most %d", a, argv[a], strlen(argv[a]), DECK_PATH_MAX - 1);
            return 2;
        }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        int more = a + 1 < argc;
        if (!strcmp(arg, "--backend") && more)
            o->backend = argv[++a];
        else if (!strcmp(arg, "--steps") && more) {
            char *end;
            o->steps = strtol(argv[++a], &end, 10);
            if (*end || o->steps < 0) {
                empic_report(NULL, 0, "--steps: expected a non-negative integer, got '%s'",
                             argv[a]);
                return 2;
            }
        } else if (!strcmp(arg, "--wall-time") && more) {
            char *end;
            o->wall = strtod(argv[++a], &end);
            if (*end || end == argv[a] || !(o->wall >= 0 && o->wall < 1e12)) {
                empic_report(NULL, 0, "--wall-time: expected seconds >= 0, got '%s'", argv[a]);
                return 2;
            }
        } else if (!strcmp(arg, "--output") && more)
            o->output = argv[++a];
        else if (!strcmp(arg, "--check"))
            o->check = 1;
        else if (!strcmp(arg, "--overwrite"))
            o->overwrite = 1;
        else if (!strcmp(arg, "--quiet"))
            o->quiet = 1;
        else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            if (comm_rank() == 0) /* once under mpirun */
                usage(stdout);
            return 0;
        } else if (!strcmp(arg, "--version")) {
            if (comm_rank() == 0)
                printf("empic %s\nbuilt with: CPU backend, %s, %s\n", empic_version_string(),
#ifdef EMPIC_CUDA
                       "CUDA backend",
#else
                       "no CUDA backend",
#endif
                       comm_built() ? "MPI" : "no MPI");
            return 0;
        } else if (!strcmp(arg, "--restart") && more)
            o->restart = argv[++a];
        else if (arg[0] == '-' || o->deck) {
            cli_reject(arg, utext);
            return 2;
        } else
            o->deck = arg;
    }
    if (o->restart && o->deck) {
        empic_report(NULL, 0, "--restart continues with the deck stored in the checkpoint; "
                              "leave out '%s'", o->deck);
        return 2;
    }
    if (!o->deck && !o->restart) {
        usage(stderr);
        return 2;
    }
    return -1;
}

static int run(const options *o);

int main(int argc, char **argv)
{
    options o;
    sim_clock_start(); /* simulation.wall_time counts from here */
    /* a file-size limit (ulimit -f) then fails the write with EFBIG, which names the file and
     * stops the run cleanly, instead of killing the process */
    signal(SIGXFSZ, SIG_IGN);
    comm_init(&argc, &argv);
    empic_mute(comm_rank() != 0); /* command line and deck: rank 0 reports for all */
    int status = parse_options(argc, argv, &o);
    if (status < 0)
        status = run(&o);
    free(o.argv);
    free(o.utext);
    comm_finalize();
    return status;
}

/* Load (or find the checkpoint and its deck), check, lock the output folder, run. */
static int run(const options *opt)
{
    const options o = *opt;
    deck d;
    char ckpt[DECK_PATH_MAX + 64];
    long ckpt_step = 0;
    if (o.restart ? checkpoint_find(o.restart, ckpt, sizeof ckpt, &ckpt_step) ||
                      checkpoint_read_deck(ckpt, &d)
                : deck_load(o.deck, &d))
        return 1;
    if (o.backend) {
        if (!strcmp(o.backend, "cpu"))
            d.backend = BACKEND_CPU;
        else if (!strcmp(o.backend, "cuda"))
            d.backend = BACKEND_CUDA;
        else if (!strcmp(o.backend, "auto"))
            d.backend = BACKEND_AUTO;
        else {
            empic_report(NULL, 0, "--backend: expected cpu, cuda or auto, got '%s'", o.backend);
            return 2;
        }
    }
    if (o.steps >= 0 && o.steps != d.steps) {
        d.steps = o.steps;
        if (deck_recheck(&d)) { /* the moving window injects further */
            deck_free(&d);
            return 1;
        }
    }
    if (o.restart && ckpt_step >= d.steps) { /* a finished run: nothing is rewritten */
        if (comm_rank() == 0 && !o.check)
            printf("empic: nothing to do: the checkpoint %s is at step %ld, the run's last "
                   "step is %ld (add --steps N to run longer)\n", ckpt, ckpt_step, d.steps);
        if (!o.check) {
            deck_free(&d);
            return 0;
        }
    }
    char run_dir[DECK_PATH_MAX];
    if (o.output)
        snprintf(d.output, sizeof d.output, "%s", o.output);
    else if (o.restart && checkpoint_run_dir(ckpt, run_dir, sizeof run_dir) && comm_rank() == 0)
        printf("empic: note: %s is not in a run folder's checkpoint/ folder: the run continues "
               "in %s, the checkpoint's folder (--output DIR for another)\n", ckpt, d.output);
    if (o.wall >= 0)
        d.wall_time = o.wall;
    empic_mute(0);
    const int root = comm_rank() == 0;
    memory_need need;
    memory_estimate(&d, comm_size(), &need);
    memory_node(&need, comm_node_ranks());
    if (o.check) {
        if (!root) {
            deck_free(&d);
            return 0;
        }
        deck_write(&d, stdout);
        print_memory(&need);
        rebalance_describe(&d, comm_size(), stdout);
        report_scales(&d, stdout);
        int rc = memory_check(&d, &need) ? 1 : 0;
        deck_free(&d);
        return rc;
    }
    /* rank 0 checks the memory and takes the output folder for every rank */
    const int own = o.restart && checkpoint_of_run(ckpt, d.output);
    int lock = -1, ok = !root || (!memory_check(&d, &need) &&
                                  (lock = fileio_lock_output(d.output, own, o.overwrite)) >= 0);
    comm_bcast(&ok, sizeof ok, 0);
    if (!ok) {
        deck_free(&d);
        return 1;
    }
    if (root && o.overwrite && !own)
        fileio_clear_run(d.output);
    if (root) /* what a killed run left half-written */
        fileio_clear_tmp(d.output);
    sim S;
    if (sim_init_from(&S, &d, o.quiet, o.restart ? ckpt : NULL)) {
        sim_free(&S);
        return 1;
    }
    int rc = sim_run(&S);
    sim_free(&S);
    return rc < 0 ? 1 : rc; /* 128 + signal after a stop with a checkpoint */
}
