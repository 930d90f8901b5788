/* cli.c - GNU-style options from the usage text (see cli.h). */
#include "cli.h"
#include "deck_read.h"
#include "empic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CLI_MAX = 32, CLI_NAME = 32 };

typedef struct {
    int n;
    char name[CLI_MAX][CLI_NAME];  /* "--name" */
    const char *list[CLI_MAX + 1]; /* the names, NULL-terminated, for dk_suggest */
    int value[CLI_MAX];            /* takes a value */
} options;

/* The options of the usage text: lines whose first word, after two spaces, is --name. */
static void parse_usage(const char *usage, options *o)
{
    o->n = 0;
    for (const char *p = usage; *p && o->n < CLI_MAX; p += strcspn(p, "\n"), p += *p == '\n') {
        size_t len = strcspn(p + 2, " \n");
        if (strncmp(p, "  --", 4) || len >= CLI_NAME)
            continue;
        memcpy(o->name[o->n], p + 2, len);
        o->name[o->n][len] = '\0';
        o->value[o->n] = p[2 + len] == ' ' && p[3 + len] != ' ' && p[3 + len] != '\n';
        o->list[o->n] = o->name[o->n];
        o->n++;
    }
    o->list[o->n] = NULL;
}

static int find(const options *o, const char *name, size_t len)
{
    for (int k = 0; k < o->n; k++)
        if (strlen(o->name[k]) == len && !strncmp(o->name[k], name, len))
            return k;
    return -1;
}

static void unknown(const options *o, const char *arg, size_t len)
{
    char name[CLI_NAME * 2], hint[CLI_NAME + 32];
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), arg);
    empic_report(NULL, 0, "unknown option '%s';%s see empic --help", name,
                 dk_suggest(name, o->list, hint, sizeof hint));
}

char **cli_expand(int *argc, char **argv, const char *usage)
{
    options o;
    parse_usage(usage, &o);
    char **out = empic_alloc((2 * (size_t)*argc + 1) * sizeof *out, "command line");
    int n = 0;
    for (int a = 0; a < *argc; a++) {
        const char *arg = argv[a], *eq = strchr(arg, '=');
        if (a == 0 || strncmp(arg, "--", 2) || !eq) {
            out[n++] = argv[a];
            continue;
        }
        int k = find(&o, arg, (size_t)(eq - arg));
        if (k < 0 || !o.value[k]) {
            if (k < 0)
                unknown(&o, arg, (size_t)(eq - arg));
            else
                empic_report(NULL, 0, "option '%s' takes no value", o.name[k]);
            free(out);
            return NULL;
        }
        argv[a][eq - arg] = '\0'; /* "--name=value" -> "--name", "value" in argv's own text */
        out[n++] = argv[a];
        out[n++] = argv[a] + (eq - arg) + 1;
    }
    out[n] = NULL;
    *argc = n;
    return out;
}

void cli_reject(const char *arg, const char *usage)
{
    options o;
    parse_usage(usage, &o);
    int k = arg[0] == '-' ? find(&o, arg, strlen(arg)) : -1;
    if (k >= 0 && o.value[k])
        empic_report(NULL, 0, "option '%s' needs a value", arg);
    else if (arg[0] == '-' && arg[1] != '\0')
        unknown(&o, arg, strlen(arg));
    else
        empic_report(NULL, 0, "unexpected argument '%s' (one DECK only)", arg);
}
