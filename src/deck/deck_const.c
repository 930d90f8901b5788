/* deck_const.c - the deck's user constants (`constants = { k = 0.5; L = "2*pi/k"; };`, as
 * EPOCH's constant block and WarpX's my_constants) and their use in the formulas.
 *
 * A constant is a number, or a formula string in the constants defined before it (pi, e and
 * the expression library's functions included), evaluated by the expression library with
 * those constants as its variables. In density.expr, momentum.drift and fields.external every
 * name of a constant (a whole identifier, not a function call) is replaced by its value, so
 * that the resolved deck (run.cfg, checkpoints) holds formulas that read on their own; the
 * constants are written there too. */
#include "deck_read.h"
#include "empic.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const RESERVED[] = {"x", "y", "t", "pi", "e", NULL};

static int valid_name(const char *s)
{
    if (!isalpha((unsigned char)s[0]) && s[0] != '_')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

void dk_constants(dk_ctx *c, const cs *root)
{
    deck *d = c->d;
    d->nconstants = 0;
    const cs *g = dk_group(c, root, "constants", 0);
    for (int i = 0; g && i < config_setting_length(g); i++) {
        const cs *s = config_setting_get_elem(g, (unsigned)i);
        const char *name = config_setting_name(s);
        int reserved = 0;
        for (int k = 0; RESERVED[k]; k++)
            reserved |= !strcmp(name, RESERVED[k]);
        if (!valid_name(name) || strlen(name) >= DECK_NAME_MAX || reserved) {
            dk_report(c, s, NULL, "invalid constant name '%s'; expected letters, digits and _ "
                      "(not x, y, t, pi or e)", name);
            continue;
        }
        if (d->nconstants == DECK_MAX_CONSTANTS) {
            dk_report(c, s, NULL, "more than %d constants", DECK_MAX_CONSTANTS);
            return;
        }
        deck_constant *k = &d->constants[d->nconstants];
        snprintf(k->name, sizeof k->name, "%s", name);
        if (config_setting_type(s) == CONFIG_TYPE_STRING) {
            char err[256];
            const char *expr = config_setting_get_string(s);
            if (formula_constant(expr, d->constants, d->nconstants, &k->value, err, sizeof err)) {
                dk_report(c, s, NULL, "cannot evaluate \"%.200s\": %s; expected a number or a "
                          "formula in the constants defined before it", expr, err);
                continue;
            }
        } else if (dk_num_of(c, s, &k->value)) {
            continue;
        }
        d->nconstants++;
    }
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v. */
static const char *shortest(char buf[40], double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

void dk_expand(dk_ctx *c, const cs *s, char *expr, size_t n)
{
    const deck *d = c->d;
    if (d->nconstants == 0)
        return;
    char out[DECK_EXPR_MAX * 4];
    size_t o = 0;
    for (const char *p = expr; *p;) {
        if (!isalpha((unsigned char)*p) && *p != '_') {
            if (o + 1 < sizeof out)
                out[o++] = *p;
            p++;
            continue;
        }
        size_t len = 1;
        while (isalnum((unsigned char)p[len]) || p[len] == '_')
            len++;
        const char *after = p + len;
        while (isspace((unsigned char)*after))
            after++;
        int k = d->nconstants - 1; /* the last definition of a name wins, as in libconfig */
        while (k >= 0 && (strlen(d->constants[k].name) != len ||
                          strncmp(d->constants[k].name, p, len)))
            k--;
        char num[40];
        int w = k >= 0 && *after != '('
                    ? snprintf(out + o, sizeof out - o, "(%s)",
                               shortest(num, d->constants[k].value))
                    : snprintf(out + o, sizeof out - o, "%.*s", (int)len, p);
        o = w > 0 && o + (size_t)w < sizeof out ? o + (size_t)w : sizeof out;
        p += len;
    }
    if (o >= n) {
        dk_report(c, s, NULL, "formula \"%.200s\" is longer than %zu characters once its "
                  "constants are replaced by their values", expr, n - 1);
        return;
    }
    out[o] = '\0';
    memcpy(expr, out, o + 1);
}
