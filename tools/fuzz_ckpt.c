/* fuzz_ckpt.c - libFuzzer target for the restart reader (`make fuzz`).
 *
 * Each input is a checkpoint file (the seeds are real ones, written by `make fuzz` from
 * tools/fuzz_ckpt*.cfg) given to what `empic --restart FILE` does: checkpoint_find (the
 * whole-file checksum, then every dataset read back), checkpoint_read_deck, and sim_init_from
 * with checkpoint_load into a scratch output folder. Each must accept it or refuse it with a
 * message, never crash, hang, leak or exit. A damaged file almost always fails the checksum;
 * so that the damage also reaches HDF5 and the reader behind it, inputs whose last byte is
 * odd are sealed with a fresh checksum first (checkpoint_seal). */
#include "checkpoint.h"
#include "ckpt_io.h"
#include "memory.h"
#include "sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], file[128], out[128];

static void setup(void)
{
    if (dir[0])
        return;
    const char *td = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/empic-fuzzck-%d", td && *td ? td : "/tmp", (int)getpid());
    snprintf(file, sizeof file, "%s/ckpt00000010.h5", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(dir, 0777);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    deck_set_scan_budget(1 << 16); /* bounded time per input */
    setup();
    char *img = malloc(size ? size : 1);
    memcpy(img, data, size);
    if (size > 0 && (img[size - 1] & 1))
        checkpoint_seal(img, size);
    FILE *f = fopen(file, "wb");
    if (!f || fwrite(img, 1, size, f) != size || fclose(f))
        abort();
    free(img);
    char path[256];
    long step = 0;
    deck d;
    if (checkpoint_find(file, path, sizeof path, &step) || checkpoint_read_deck(path, &d))
        return 0;
    memory_need need;
    memory_estimate(&d, 1, &need);
    if (need.host - need.transient > 256.0 * 1048576.0) { /* a mutated deck asking for more */
        deck_free(&d);
        return 0;
    }
    snprintf(d.output, sizeof d.output, "%s", out);
    if (d.steps < step)
        d.steps = step;
    sim S;
    if (sim_init_from(&S, &d, 1, path) == 0)
        sim_wait_writes(&S);
    sim_free(&S);
    return 0;
}
