/* version.h - the release and the git commit empic was built from, for --version, run.cfg,
 * timing.json and the dumps' softwareVersion. */
#ifndef VERSION_H
#define VERSION_H

#define EMPIC_VERSION "0.1.0"

/* The commit (`git describe --always --dirty`) of the build, or "unknown" outside git. */
const char *empic_commit(void);
/* "0.1.0 (git <commit>)" */
const char *empic_version_string(void);
/* Who the dumps name as author: $EMPIC_AUTHOR, else $USER or $LOGNAME, else "empic user". */
const char *empic_author(void);

#endif
