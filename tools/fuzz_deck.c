/* fuzz_deck.c - libFuzzer target for the deck reader (`make fuzz`).
 *
 * Each input is written to a file and given to deck_load(), which must either accept it or
 * reject it with a message, never crash, hang, leak or exit. A deck it accepts must also
 * survive the round trip that checkpoints rely on: deck_write() of it loads back, and writing
 * that again gives the same text.
 * Decks with @include are refused by deck_load (libconfig 1.5 would read other files and
 * exit the process from its scanner on a folder), so they are fuzzed too. */
#include "deck.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file holding `len` bytes at a fixed per-process path; the path, or NULL. */
static const char *put_file(int which, const void *data, size_t len)
{
    static char path[2][64];
    if (!path[which][0])
        snprintf(path[which], sizeof path[which], "/tmp/empic-fuzz-%d-%d.cfg", (int)getpid(),
                 which);
    FILE *f = fopen(path[which], "wb");
    if (!f)
        return NULL;
    size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len)
        return NULL;
    return path[which];
}

static char *write_text(const deck *d, size_t *len)
{
    char *text = NULL;
    FILE *m = open_memstream(&text, len);
    if (!m)
        abort();
    deck_write(d, m);
    fclose(m);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    deck_set_scan_budget(1 << 16); /* bounded time per input */
    const char *path = put_file(0, data, size);
    deck d, e;
    if (!path || deck_load(path, &d) != 0)
        return 0;
    size_t n1 = 0, n2 = 0;
    char *t1 = write_text(&d, &n1);
    const char *again = put_file(1, t1, n1);
    if (!again)
        abort();
    if (deck_load(again, &e) != 0) {
        fprintf(stdout, "accepted deck does not load back after deck_write:\n%s\n", t1);
        abort();
    }
    char *t2 = write_text(&e, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
        fprintf(stdout, "deck_write is not stable:\n%s\n---\n%s\n", t1, t2);
        abort();
    }
    free(t1);
    free(t2);
    deck_free(&d);
    deck_free(&e);
    return 0;
}
