/* fileio.c - folders, atomic files and the output-folder lock (fileio.h). */
#include "fileio.h"
#include "empic.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int fileio_mkdir_p(const char *dir, const char *what)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        empic_report(NULL, 0, "%s: path longer than %d characters", what, PATH_MAX - 1);
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                goto fail;
            *p = '/';
        }
    struct stat st;
    if ((mkdir(buf, 0777) && errno != EEXIST) || stat(buf, &st))
        goto fail;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        goto fail;
    }
    return 0;
fail:
    empic_report(buf, 0, "cannot create the %s: %s", what, strerror(errno));
    return -1;
}

void fileio_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The folder of path into buf ("." when none). */
static void dir_of(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "%s", path);
    char *s = strrchr(buf, '/');
    if (!s)
        snprintf(buf, len, ".");
    else
        s[s == buf] = '\0';
}

int fileio_tmp_name(const char *path, char *tmp, size_t len)
{
    if (snprintf(tmp, len, "%s.tmp", path) < (int)len)
        return 0;
    empic_report(NULL, 0, "%.200s...: path longer than %zu characters", path, len - 5);
    return -1;
}

/* rename tmp to path and (sync) sync the folder; reports and removes tmp on failure. */
static int commit(const char *tmp, const char *path, int sync)
{
    if (rename(tmp, path)) {
        empic_report(path, 0, "cannot rename the finished file into place: %s", strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (!sync)
        return 0;
    char dir[PATH_MAX];
    dir_of(path, dir, sizeof dir);
    fileio_sync_dir(dir);
    return 0;
}

static int write_whole(const char *path, const void *data, size_t len, int sync)
{
    char tmp[PATH_MAX];
    if (fileio_tmp_name(path, tmp, sizeof tmp))
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        empic_report(tmp, 0, "cannot create: %s", strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, (const char *)data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            empic_report(path, 0, "write failed after %zu of %zu bytes: %s; the file is not "
                         "written", done, len, w < 0 ? strerror(errno) : "no progress");
            close(fd);
            unlink(tmp);
            return -1;
        }
        done += (size_t)w;
    }
    if ((sync && fsync(fd)) || close(fd)) {
        empic_report(path, 0, "cannot complete the file: %s; the file is not written",
                     strerror(errno));
        unlink(tmp);
        return -1;
    }
    return commit(tmp, path, sync);
}

int fileio_commit_tmp(const char *path, int sync)
{
    char tmp[PATH_MAX];
    return fileio_tmp_name(path, tmp, sizeof tmp) ? -1 : commit(tmp, path, sync);
}

int fileio_write_atomic(const char *path, const void *data, size_t len)
{
    return write_whole(path, data, len, 1);
}

int fileio_write_replace(const char *path, const void *data, size_t len)
{
    return write_whole(path, data, len, 0);
}

int fileio_sync_all(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd)) {
        empic_report(dir, 0, "cannot flush the output to disk: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

FILE *fileio_open_tmp(const char *path)
{
    char tmp[PATH_MAX];
    if (fileio_tmp_name(path, tmp, sizeof tmp))
        return NULL;
    FILE *f = fopen(tmp, "we");
    if (!f)
        empic_report(tmp, 0, "cannot create: %s", strerror(errno));
    return f;
}

int fileio_finish(FILE *f, const char *path)
{
    char tmp[PATH_MAX];
    if (fileio_tmp_name(path, tmp, sizeof tmp)) {
        fclose(f);
        return -1;
    }
    int bad = fflush(f) != 0 || ferror(f);
    int err = bad ? errno : 0;
    if (!bad && fsync(fileno(f))) {
        bad = 1;
        err = errno;
    }
    if (fclose(f) && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        empic_report(path, 0, "cannot complete the file: %s; what was written is kept in %s",
                     err ? strerror(err) : "write error", tmp);
        return -1;
    }
    return commit(tmp, path, 1);
}

int fileio_lock_output(const char *dir, int own, int overwrite)
{
    char path[PATH_MAX];
    if (fileio_mkdir_p(dir, "output folder"))
        return -1;
    if (snprintf(path, sizeof path, "%s/.empic.lock", dir) >= (int)sizeof path) {
        empic_report(dir, 0, "output folder: path too long");
        return -1;
    }
    /* the kernel drops the lock with the descriptor, however the process ends */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        empic_report(path, 0, "cannot create the output folder's lock file: %s",
                     strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            empic_report(dir, 0, "another empic run (process %s) is writing to this output "
                         "folder; give another one with --output DIR",
                         pid[0] ? pid : "unknown");
        else
            empic_report(path, 0, "cannot lock the output folder: %s", strerror(e));
        return -1;
    }
    char run[PATH_MAX];
    struct stat st;
    snprintf(run, sizeof run, "%s/run.cfg", dir);
    if (!own && !overwrite && stat(run, &st) == 0) {
        empic_report(dir, 0, "this output folder holds another run (%s); give another one "
                     "with --output DIR, continue that run with --restart %s, or add "
                     "--overwrite to replace its files", run, dir);
        close(fd);
        return -1;
    }
    char text[32];
    int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)len, 0) != len) {
        /* the lock holds without the pid in the file: only the message loses it */
    }
    return fd;
}

/* Files of an empic run in folder dir (ckpt*, data*, ...): names ending in one of ends[]. */
static void clear_files(const char *dir, const char *const ends[])
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX];
    while (dd && (e = readdir(dd))) {
        size_t n = strlen(e->d_name);
        for (int k = 0; ends[k]; k++) {
            size_t m = strlen(ends[k]);
            if (n > m && !strcmp(e->d_name + n - m, ends[k]) &&
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
                unlink(p);
        }
    }
    if (dd)
        closedir(dd);
}

/* The files `top` of folder dir and those ending in one of `ends` in its sub-folders. */
static void clear_listed(const char *dir, const char *const *top, const char *const *ends)
{
    static const char *const sub[] = {"checkpoint", "data", "tracks", "phasespace", "probes",
                                      NULL};
    char p[PATH_MAX];
    for (int k = 0; top[k]; k++)
        if (snprintf(p, sizeof p, "%s/%s", dir, top[k]) < (int)sizeof p)
            unlink(p);
    for (int k = 0; sub[k]; k++)
        if (snprintf(p, sizeof p, "%s/%s", dir, sub[k]) < (int)sizeof p)
            clear_files(p, ends);
}

void fileio_clear_run(const char *dir)
{
    static const char *const top[] = {"run.cfg", "energy.csv", "energy.csv.tmp", "timing.json",
                                      "timing.json.tmp", NULL};
    static const char *const ends[] = {".h5", ".h5.tmp", ".xmf", ".xmf.tmp", NULL};
    clear_listed(dir, top, ends);
}

void fileio_clear_tmp(const char *dir)
{
    /* energy.csv.tmp stays: a restart reads its rows (report.c) and then replaces it */
    static const char *const top[] = {"run.cfg.tmp", "timing.json.tmp", NULL};
    static const char *const ends[] = {".h5.tmp", ".xmf.tmp", NULL};
    clear_listed(dir, top, ends);
}
