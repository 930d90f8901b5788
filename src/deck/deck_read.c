/* deck_read.c - checked reading of libconfig settings with located messages (deck_read.h). */
#include "deck_read.h"
#include "empic.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- messages */

static size_t path_of(const cs *s, char *buf, size_t n)
{
    const cs *p = s ? config_setting_parent(s) : NULL;
    if (!p) {
        buf[0] = '\0';
        return 0;
    }
    size_t k = path_of(p, buf, n);
    const char *name = config_setting_name(s);
    int w;
    if (name) {
        w = snprintf(buf + k, n - k, "%s%s", k ? "." : "", name);
    } else {
        const char *sname = NULL;
        w = snprintf(buf + k, n - k, "[%d]", config_setting_index(s));
        if (w >= 0 && k + (size_t)w < n && config_setting_is_group(s) &&
            config_setting_lookup_string(s, "name", &sname) && sname) {
            size_t k2 = k + (size_t)w;
            int w2 = snprintf(buf + k2, n - k2, "(%.32s)", sname);
            w += w2 > 0 ? w2 : 0;
        }
    }
    if (w < 0)
        w = 0;
    return k + (size_t)w < n ? k + (size_t)w : n - 1;
}

static int line_of(const cs *s)
{
    for (; s; s = config_setting_parent(s))
        if (config_setting_source_line(s) > 0)
            return config_setting_source_line(s);
    return 0;
}

/* The message about setting s (or its member key) with `what` ("" or "warning: ") before it. */
static void report_at(dk_ctx *c, const cs *s, const char *key, const char *what,
                      const char *fmt, va_list ap)
{
    char path[384], msg[1024];
    size_t k = path_of(s, path, sizeof path);
    if (key)
        snprintf(path + k, sizeof path - k, "%s%s", k ? "." : "", key);
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *file = s ? config_setting_source_file(s) : NULL;
    empic_report(file ? file : c->file, line_of(s), "%s%s: %s", what,
                 path[0] ? path : "(top level)", msg);
}

/* Report a problem with setting s (or with its member key, when key != NULL). */
void dk_report(dk_ctx *c, const cs *s, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_at(c, s, key, "", fmt, ap);
    va_end(ap);
    c->nerr++;
}

void dk_warn(dk_ctx *c, const cs *s, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_at(c, s, key, "warning: ", fmt, ap);
    va_end(ap);
}

const char *dk_tname(const cs *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_GROUP: return "a group { ... }";
    case CONFIG_TYPE_INT: case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a number";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array [ ... ]";
    case CONFIG_TYPE_LIST: return "a list ( ... )";
    default: return "an unknown kind of value";
    }
}

/* Case-insensitive Levenshtein distance (names longer than 63 characters are cut). */
static int lev(const char *a, const char *b)
{
    size_t la = strnlen(a, 63), lb = strnlen(b, 63);
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = row[j] + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            if (prev + cost < v) v = prev + cost;
            row[j] = v;
            prev = cur;
        }
    }
    return row[lb];
}

/* " did you mean 'x'?" when some name of the list is close to w, else "". */
const char *dk_suggest(const char *w, const char *const list[], char *buf, size_t n)
{
    const char *best = NULL;
    int bd = INT_MAX;
    for (int i = 0; list[i]; i++) {
        int dd = lev(w, list[i]);
        if (dd < bd) {
            bd = dd;
            best = list[i];
        }
    }
    buf[0] = '\0';
    if (best && (bd <= 2 || 2 * bd <= (int)strlen(best)))
        snprintf(buf, n, " did you mean '%s'?", best);
    return buf;
}

const char *dk_join(const char *const list[], char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; list[i] && k < n; i++) {
        int w = snprintf(buf + k, n - k, "%s%s", i ? ", " : "", list[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
    return buf;
}

/* ---------------------------------------------------------------- typed getters */

cs *dk_member(const cs *g, const char *key)
{
    return g && config_setting_is_group(g) ? config_setting_get_member(g, key) : NULL;
}

void dk_keys(dk_ctx *c, const cs *g, const char *const allowed[])
{
    char sug[96], all[256];
    int n = config_setting_length(g);
    for (int i = 0; i < n; i++) {
        const cs *s = config_setting_get_elem(g, (unsigned)i);
        const char *name = s ? config_setting_name(s) : NULL;
        int ok = 0;
        for (int j = 0; name && allowed[j] && !ok; j++)
            ok = !strcmp(name, allowed[j]);
        if (!ok && name)
            dk_report(c, s, NULL, "unknown key '%.64s';%s expected one of: %s", name,
                      dk_suggest(name, allowed, sug, sizeof sug),
                      dk_join(allowed, all, sizeof all));
    }
}

const cs *dk_group(dk_ctx *c, const cs *g, const char *key, int req)
{
    cs *s = dk_member(g, key);
    if (!s) {
        if (req)
            dk_report(c, g, key, "missing; expected a group %s = { ... };", key);
        return NULL;
    }
    if (!config_setting_is_group(s)) {
        dk_report(c, s, NULL, "got %s; expected a group %s = { ... };", dk_tname(s), key);
        return NULL;
    }
    return s;
}

int dk_range_ok(dk_ctx *c, const cs *s, double v, int kind)
{
    if ((kind == DK_POS && !(v > 0)) || (kind == DK_NONNEG && !(v >= 0))) {
        dk_report(c, s, NULL, "got %.12g; expected a number %s 0", v, kind == DK_POS ? ">" : ">=");
        return 0;
    }
    return 1;
}

int dk_num_of(dk_ctx *c, const cs *s, double *v)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: *v = config_setting_get_int(s); return 0;
    case CONFIG_TYPE_INT64: *v = (double)config_setting_get_int64(s); return 0;
    case CONFIG_TYPE_FLOAT:
        *v = config_setting_get_float(s);
        if (isfinite(*v))
            return 0;
        dk_report(c, s, NULL, "value overflows; expected a finite number");
        return -1;
    default:
        dk_report(c, s, NULL, "got %s; expected a number", dk_tname(s));
        return -1;
    }
}

int dk_num(dk_ctx *c, const cs *g, const char *key, double *v, int kind, int req)
{
    cs *s = dk_member(g, key);
    double t;
    if (!s) {
        if (req)
            dk_report(c, g, key, "missing; expected a number");
        return req ? -1 : 0;
    }
    if (dk_num_of(c, s, &t) || !dk_range_ok(c, s, t, kind))
        return -1;
    *v = t;
    return 1;
}

int dk_int_of(dk_ctx *c, const cs *s, long long *v, long long lo, long long hi)
{
    double x;
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: *v = config_setting_get_int(s); break;
    case CONFIG_TYPE_INT64: *v = config_setting_get_int64(s); break;
    case CONFIG_TYPE_FLOAT:
        x = config_setting_get_float(s);
        if (isfinite(x) && x == floor(x) && fabs(x) < 9.0e15) {
            *v = (long long)x;
            break;
        }
        dk_report(c, s, NULL, "got %.12g; expected an integer", x);
        return -1;
    default:
        dk_report(c, s, NULL, "got %s; expected an integer", dk_tname(s));
        return -1;
    }
    if (*v < lo || *v > hi) {
        if (hi >= INT_MAX)
            dk_report(c, s, NULL, "got %lld; expected an integer >= %lld", *v, lo);
        else
            dk_report(c, s, NULL, "got %lld; expected an integer from %lld to %lld", *v, lo, hi);
        return -1;
    }
    return 0;
}

int dk_int(dk_ctx *c, const cs *g, const char *key, long long *v, long long lo,
           long long hi, int req)
{
    cs *s = dk_member(g, key);
    long long t;
    if (!s) {
        if (req)
            dk_report(c, g, key, "missing; expected an integer");
        return req ? -1 : 0;
    }
    if (dk_int_of(c, s, &t, lo, hi))
        return -1;
    *v = t;
    return 1;
}

int dk_bool(dk_ctx *c, const cs *g, const char *key, int *v)
{
    cs *s = dk_member(g, key);
    if (!s)
        return 0;
    if (config_setting_type(s) != CONFIG_TYPE_BOOL) {
        dk_report(c, s, NULL, "got %s; expected true or false", dk_tname(s));
        return -1;
    }
    *v = config_setting_get_bool(s) ? 1 : 0;
    return 1;
}

int dk_str_of(dk_ctx *c, const cs *s, char *buf, size_t n)
{
    const char *v = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s)
                                                                  : NULL;
    if (!v) {
        dk_report(c, s, NULL, "got %s; expected a string \"...\"", dk_tname(s));
        return -1;
    }
    size_t len = strlen(v);
    if (len >= n) {
        dk_report(c, s, NULL, "is %zu characters long; expected at most %zu", len, n - 1);
        return -1;
    }
    memcpy(buf, v, len + 1);
    return 0;
}

int dk_str(dk_ctx *c, const cs *g, const char *key, char *buf, size_t n, int req)
{
    cs *s = dk_member(g, key);
    if (!s) {
        if (req)
            dk_report(c, g, key, "missing; expected a string \"...\"");
        return req ? -1 : 0;
    }
    if (dk_str_of(c, s, buf, n))
        return -1;
    if (!buf[0]) {
        dk_report(c, s, NULL, "is empty; expected a non-empty string");
        return -1;
    }
    return 1;
}

/* A string naming one of names[] (index to *v). */
int dk_enum_of(dk_ctx *c, const cs *s, const char *const names[], int *v)
{
    char buf[64], sug[96], all[160];
    if (dk_str_of(c, s, buf, sizeof buf) == 0) {
        for (int i = 0; names[i]; i++)
            if (!strcmp(buf, names[i])) {
                *v = i;
                return 0;
            }
        dk_report(c, s, NULL, "\"%s\" is not valid;%s expected one of: %s", buf,
                  dk_suggest(buf, names, sug, sizeof sug), dk_join(names, all, sizeof all));
    } else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        dk_report(c, s, NULL, "expected one of: %s", dk_join(names, all, sizeof all));
    }
    return -1;
}

int dk_enum(dk_ctx *c, const cs *g, const char *key, const char *const names[], int *v)
{
    cs *s = dk_member(g, key);
    int t;
    if (!s)
        return 0;
    if (dk_enum_of(c, s, names, &t))
        return -1;
    *v = t;
    return 1;
}

const cs *dk_seq(dk_ctx *c, const cs *g, const char *key, int n, const char *what, int req)
{
    char count[16] = "";
    cs *s = dk_member(g, key);
    if (n >= 0)
        snprintf(count, sizeof count, "%d ", n);
    if (!s) {
        if (req)
            dk_report(c, g, key, "missing; expected an array of %s%s", count, what);
        return NULL;
    }
    if (!config_setting_is_array(s) && !config_setting_is_list(s)) {
        dk_report(c, s, NULL, "got %s; expected an array of %s%s", dk_tname(s), count, what);
        return NULL;
    }
    if (n >= 0 && config_setting_length(s) != n) {
        dk_report(c, s, NULL, "has %d elements; expected %s%s", config_setting_length(s), count,
                  what);
        return NULL;
    }
    return s;
}

int dk_vec(dk_ctx *c, const cs *g, const char *key, double *v, int n, int kind, int req)
{
    const cs *s = dk_seq(c, g, key, n, "numbers", req);
    int ok = 1;
    if (!s)
        return dk_member(g, key) || req ? -1 : 0;
    for (int i = 0; i < n; i++) {
        const cs *e = config_setting_get_elem(s, (unsigned)i);
        double t;
        if (dk_num_of(c, e, &t) || !dk_range_ok(c, e, t, kind))
            ok = 0;
        else
            v[i] = t;
    }
    return ok ? 1 : -1;
}

int dk_ivec(dk_ctx *c, const cs *g, const char *key, int *v, int n, int lo, int hi, int req)
{
    const cs *s = dk_seq(c, g, key, n, "integers", req);
    int ok = 1;
    if (!s)
        return dk_member(g, key) || req ? -1 : 0;
    for (int i = 0; i < n; i++) {
        long long t;
        if (dk_int_of(c, config_setting_get_elem(s, (unsigned)i), &t, lo, hi))
            ok = 0;
        else
            v[i] = (int)t;
    }
    return ok ? 1 : -1;
}

const char *const DK_SIDES[] = {"xmin", "xmax", "ymin", "ymax", NULL};
const char *const DK_FBND[] = {"periodic", "pml", "mur", NULL};
const char *const DK_PBND[] = {"periodic", "absorbing", "reflecting", "thermal", NULL};
const char *const DK_PROFILES[] = {"uniform", "piecewise", "expr", NULL};
const char *const DK_BACKENDS[] = {"auto", "cpu", "cuda", NULL};
const char *const DK_ENVELOPES[] = {"sin2", "gaussian", "flattop", NULL};
const char *const DK_FQ[] = {"E", "B", "J", "rho", NULL};
const char *const DK_AQ[] = {"E", "B", "J", "rho", "E2", "B2", NULL};
const char *const DK_LPROFILES[] = {"gaussian", "supergaussian", "flattop", NULL};

int dk_numeric_text(const char *s, double *v)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s)
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    if (*end || !isfinite(x))
        return 0;
    *v = x;
    return 1;
}

const cs *dk_list(dk_ctx *c, const cs *root, const char *key, int max, int *n)
{
    const cs *l = dk_member(root, key);
    *n = 0;
    if (!l)
        return NULL;
    if (!config_setting_is_list(l)) {
        dk_report(c, l, NULL, "got %s; expected a list %s = ( { ... }, { ... } );", dk_tname(l),
                  key);
        return NULL;
    }
    *n = config_setting_length(l);
    if (*n > max) {
        dk_report(c, l, NULL, "has %d entries; expected at most %d", *n, max);
        *n = max;
    }
    for (int i = 0; i < *n; i++) {
        const cs *e = config_setting_get_elem(l, (unsigned)i);
        if (!config_setting_is_group(e))
            dk_report(c, e, NULL, "got %s; expected a group { ... }", dk_tname(e));
    }
    return l;
}
