/* formula.c - formulas in x, y (densities, drifts) and in x, y, t (external fields) through
 * muparser's C API (deck.h). */
#include "deck.h"

#include <math.h>
#include <muParserDLL.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct formula {
    muParserHandle_t h;
    double x, y, t;         /* the variables the expression reads, bound by address */
};

int formula_number(const char *expr, double *value)
{
    char *end;
    *value = strtod(expr, &end);
    return end != expr && *end == '\0';
}

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (!err || !errlen)
        return;
    snprintf(err, errlen, "%s", msg ? msg : "unknown expression error");
    size_t n = strlen(err);
    while (n > 0 && (err[n - 1] == '.' || err[n - 1] == ' '))   /* for "...; expected" */
        err[--n] = '\0';
}

formula *formula_new(const char *expr, int time, char *err, size_t errlen)
{
    if (!expr) {
        set_err(err, errlen, "no expression");
        return NULL;
    }
    formula *f = calloc(1, sizeof *f);
    if (!f) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    f->h = mupCreate(muBASETYPE_FLOAT);
    if (!f->h) {
        free(f);
        set_err(err, errlen, "cannot create expression parser");
        return NULL;
    }
    mupDefineVar(f->h, "x", &f->x);
    mupDefineVar(f->h, "y", &f->y);
    if (time)
        mupDefineVar(f->h, "t", &f->t);
    mupDefineConst(f->h, "pi", 3.14159265358979323846);
    mupDefineConst(f->h, "e", 2.71828182845904523536);
    if (mupError(f->h)) {
        set_err(err, errlen, mupGetErrorMsg(f->h));
        formula_free(f);
        return NULL;
    }
    mupSetExpr(f->h, expr);
    if (mupError(f->h)) {
        set_err(err, errlen, mupGetErrorMsg(f->h));
        formula_free(f);
        return NULL;
    }
    /* muparser parses lazily: a trial evaluation surfaces syntax errors and unknown names. */
    int n = 0;
    mupEvalMulti(f->h, &n);
    if (mupError(f->h)) {
        set_err(err, errlen, mupGetErrorMsg(f->h));
        formula_free(f);
        return NULL;
    }
    if (n != 1) {
        set_err(err, errlen, "the expression gives several comma-separated values; expected one");
        formula_free(f);
        return NULL;
    }
    return f;
}

int formula_vars(const formula *f)
{
    int m = 0;
    const int n = mupGetExprVarNum(f->h);
    for (int i = 0; i < n; i++) {
        const muChar_t *name = NULL;
        muFloat_t *at = NULL;
        mupGetExprVar(f->h, (unsigned)i, &name, &at);
        m |= at == &f->x ? FORMULA_X : at == &f->y ? FORMULA_Y : at == &f->t ? FORMULA_T : 0;
    }
    return m;
}

double formula_eval(formula *f, double x, double y) { return formula_eval_t(f, x, y, 0.0); }

double formula_eval_t(formula *f, double x, double y, double t)
{
    if (!f)
        return NAN;
    f->x = x;
    f->y = y;
    f->t = t;
    double v = mupEval(f->h);
    if (mupError(f->h))
        return NAN;
    return v;
}

void formula_free(formula *f)
{
    if (!f)
        return;
    if (f->h)
        mupRelease(f->h);
    free(f);
}

int formula_constant(const char *expr, const deck_constant *k, int n, double *value,
                     char *err, size_t errlen)
{
    muParserHandle_t h = mupCreate(muBASETYPE_FLOAT);
    if (!h) {
        set_err(err, errlen, "cannot create expression parser");
        return -1;
    }
    mupDefineConst(h, "pi", 3.14159265358979323846);
    mupDefineConst(h, "e", 2.71828182845904523536);
    for (int i = 0; i < n; i++)
        mupDefineConst(h, k[i].name, k[i].value);
    int nres = 0;
    if (!mupError(h)) {
        mupSetExpr(h, expr);
        if (!mupError(h))
            mupEvalMulti(h, &nres);
    }
    int rc = 0;
    if (mupError(h)) {
        set_err(err, errlen, mupGetErrorMsg(h));
        rc = -1;
    } else if (nres != 1) {
        set_err(err, errlen, "the expression gives several comma-separated values; expected one");
        rc = -1;
    } else {
        *value = mupEval(h);
        if (mupError(h) || !isfinite(*value)) {
            set_err(err, errlen, mupError(h) ? mupGetErrorMsg(h) : "the value is not finite");
            rc = -1;
        }
    }
    mupRelease(h);
    return rc;
}
