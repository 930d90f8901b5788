/* version.c - release and build commit (see version.h). The Makefile compiles this file
 * alone with -DEMPIC_COMMIT="..." and rebuilds it whenever the commit changes. */
#include "version.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef EMPIC_COMMIT
#define EMPIC_COMMIT "unknown"
#endif

const char *empic_commit(void) { return EMPIC_COMMIT; }

const char *empic_version_string(void) { return EMPIC_VERSION " (git " EMPIC_COMMIT ")"; }

const char *empic_author(void)
{
    static const char *const vars[] = {"EMPIC_AUTHOR", "USER", "LOGNAME"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v)
            return v;
    }
    return "empic user";
}
