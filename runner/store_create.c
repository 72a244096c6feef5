/*
 * store_create.c — making a new store so that a kill at any moment (a controller SIGKILLed
 * while it launches) never leaves a file at the store's path that the next command refuses.
 *
 * A new store is built whole under a temporary name in the store's directory,
 * "<store>.creating-<pid>.<seq>.<host>": created empty with O_EXCL, given its schema, pragmas
 * and migrations through SQLite, closed (which folds its WAL into it and deletes the WAL and
 * shared-memory files), fsynced, and then renamed onto the store's path with
 * renameat2(RENAME_NOREPLACE) (or link(2) and unlink where the file system has no
 * RENAME_NOREPLACE), and the directory fsynced. The store's path therefore holds either
 * nothing or a complete store, never a half-made one, and never is a file that appeared there
 * meanwhile replaced: a concurrent launch that won the race is opened instead.
 *
 * How "our interrupted creation" is told from "a user's empty file": it need not be. The
 * store's path never holds a file of ours before it is a whole store, so an empty file there is
 * always somebody else's: runner_store_open (resume, status, every command but launch and
 * create) refuses it as before; launch and create still take an existing empty file as the
 * place of a new store and initialise it in place (nothing in it to lose; the user named it,
 * e.g. a mktemp path), where the WAL makes the first migration, schema and application id
 * together, one atomic commit, so a kill there leaves it empty as it was.
 *
 * What a killed creator leaves is its temporary file (and its -wal, -shm, -journal): the next
 * runner_store_create removes those of processes that no longer exist on this host, or are
 * zombies (a live pid, or one of another host, is left alone).
 *
 * A file left at the store's path by a deleted store, "<store>-wal" or "<store>-journal" with
 * content but no "<store>", is refused: SQLite would replay it into the new store. The
 * "<store>-ballast" reserve (store_ballast.c) is made only by a controller holding a lease,
 * never during creation, and one left over is reused.
 */
#define _GNU_SOURCE
#include "runner/runner_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void (*store_create_hook)(int step);
int store_create_link_only;

#define STEP(n)                                                                                    \
    do {                                                                                           \
        if (store_create_hook)                                                                     \
            store_create_hook(n);                                                                  \
    } while (0)

#define CREATING ".creating-"

static const char *const side_suffix[] = {"-wal", "-shm", "-journal"};

/* The store's directory and file name, and this host's name as used in temporary names. */
typedef struct {
    char dir[PATH_MAX];
    const char *base;
    char host[65];
} names;

static int split_path(const char *path, names *n)
{
    const char *slash = strrchr(path, '/');
    n->base = slash ? slash + 1 : path;
    size_t l = slash ? (size_t)(slash - path) : 0;
    if (l + 2 > sizeof(n->dir) || !*n->base)
        return -1;
    if (!slash)
        memcpy(n->dir, ".", 2);
    else if (l == 0)
        memcpy(n->dir, "/", 2);
    else {
        memcpy(n->dir, path, l);
        n->dir[l] = '\0';
    }
    char h[65] = "localhost";
    gethostname(h, sizeof(h) - 1);
    h[sizeof(h) - 1] = '\0';
    size_t k = 0;
    for (const char *c = h; *c && k + 1 < sizeof(n->host); c++) /* a file name's characters */
        n->host[k++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                               (*c >= '0' && *c <= '9') || *c == '-' || *c == '.'
                           ? *c
                           : '_';
    n->host[k] = '\0';
    if (!k)
        memcpy(n->host, "localhost", 10);
    /* the longest temporary name, "-journal" included, must be a valid file name */
    return strlen(n->base) + strlen(CREATING) + 2 * 20 + strlen(n->host) + 10 > NAME_MAX ? -1 : 0;
}

/* Removes `p` and its SQLite side files; best effort. */
static void discard(const char *p)
{
    char side[PATH_MAX + NAME_MAX + 16];
    unlink(p);
    for (size_t i = 0; i < sizeof(side_suffix) / sizeof(side_suffix[0]); i++) {
        snprintf(side, sizeof(side), "%s%s", p, side_suffix[i]);
        unlink(side);
    }
}

/* Whether directory entry `name` is a temporary file (or its side file) of a creator of the
 * store `n` that is gone: "<base>.creating-<pid>.<seq>.<host>[-wal|-shm|-journal]" with this
 * host's name and a pid that no longer exists. */
static int stale_temp(const names *n, const char *name)
{
    size_t lb = strlen(n->base);
    if (strncmp(name, n->base, lb) || strncmp(name + lb, CREATING, strlen(CREATING)))
        return 0;
    const char *p = name + lb + strlen(CREATING);
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '.' || errno || pid <= 0 || pid > INT_MAX)
        return 0;
    p = end + 1;
    (void)strtoul(p, &end, 10);
    if (end == p || *end != '.')
        return 0;
    p = end + 1;
    size_t lh = strlen(n->host);
    if (strncmp(p, n->host, lh))
        return 0;
    p += lh;
    int known = !*p;
    for (size_t i = 0; !known && i < sizeof(side_suffix) / sizeof(side_suffix[0]); i++)
        known = !strcmp(p, side_suffix[i]);
    if (!known || pid == (long)getpid()) /* ours: maybe another thread's creation, in progress */
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    /* alive, unless a zombie: one writes nothing more (a killed creator not yet reaped) */
    char stat_path[64], buf[512];
    snprintf(stat_path, sizeof(stat_path), "/proc/%ld/stat", pid);
    FILE *f = fopen(stat_path, "re");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] == 'Z';
}

static void remove_stale(const names *n)
{
    DIR *d = opendir(n->dir);
    if (!d)
        return;
    struct dirent *e;
    char p[PATH_MAX + NAME_MAX + 2];
    while ((e = readdir(d)))
        if (stale_temp(n, e->d_name)) {
            int l = snprintf(p, sizeof(p), "%s/%s", n->dir, e->d_name);
            if (l > 0 && (size_t)l < sizeof(p))
                unlink(p);
        }
    closedir(d);
}

/* A WAL or rollback journal with content next to a store's path that holds no store: SQLite
 * would replay it into the new store. Refused; nothing is removed. */
static st_status orphan_journal(const char *path, char *errmsg)
{
    static const char *const hot[] = {"-wal", "-journal"};
    char side[PATH_MAX + 16];
    struct stat sb;
    for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++) {
        snprintf(side, sizeof(side), "%s%s", path, hot[i]);
        if (stat(side, &sb) == 0 && sb.st_size > 0)
            return st_errf(errmsg, ST_EDB,
                           "%.200s: no store, but its %s file %.200s is there (left by a store "
                           "deleted while in use?); a new store would take it in: move it away "
                           "first",
                           path, hot[i] + 1, side);
    }
    return ST_OK;
}

static st_status sys_fail(char *errmsg, const char *path, const char *what, int err)
{
    return st_errf(errmsg, err == ENOSPC ? ST_ENOSPC : ST_EIO, "%.200s: creating the store: %s: %s",
                   path, what, strerror(err));
}

static int fsync_path(const char *p, int flags)
{
    int fd = open(p, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

/* Puts `tmp` at `path` unless something is there already (*lost = 1, tmp left as it is). */
static int publish(const char *tmp, const char *path, int *lost)
{
    *lost = 0;
    int rc = -1;
    errno = EINVAL;
    if (!store_create_link_only)
        rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
    if (rc == 0)
        return 0;
    if (errno == EEXIST) {
        *lost = 1;
        return 0;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP && errno != EOPNOTSUPP)
        return -1;
    /* no RENAME_NOREPLACE here (e.g. NFS): link(2) fails as well when `path` exists */
    if (link(tmp, path) == 0) {
        STEP(STORE_CREATE_LINKED);
        unlink(tmp);
        return 0;
    }
    if (errno == EEXIST) {
        *lost = 1;
        return 0;
    }
    if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP)
        return -1;
    /* no hard links either (e.g. FAT): a plain rename, checked just before */
    struct stat sb;
    if (lstat(path, &sb) == 0 || errno != ENOENT) {
        *lost = 1;
        return 0;
    }
    return rename(tmp, path);
}

/* Builds a whole store at a new temporary name and moves it to `path`; *lost when another
 * file took `path` meanwhile (the temporary one is then removed). */
static st_status build(const names *n, const char *path, int *lost, char *errmsg)
{
    static unsigned long seq;
    char tmp[PATH_MAX + NAME_MAX + 2], side[PATH_MAX + NAME_MAX + 16];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        unsigned long k = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
        int l = snprintf(tmp, sizeof(tmp), "%s/%s" CREATING "%ld.%lu.%s", n->dir, n->base,
                         (long)getpid(), k, n->host);
        if (l < 0 || (size_t)l >= sizeof(tmp))
            return st_errf(errmsg, ST_EINVAL, "%.300s: store path too long", path);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) /* EEXIST: left by a process that had our pid */
            return sys_fail(errmsg, path, tmp, errno);
    }
    if (fd < 0)
        return sys_fail(errmsg, path, tmp, EEXIST);
    close(fd);
    STEP(STORE_CREATE_TEMP_MADE);
    runner_store *s = NULL;
    st_status rc = store_open_file(tmp, 1, path, &s, errmsg);
    runner_store_close(s); /* the last connection: checkpoints, deletes -wal and -shm */
    if (rc) {
        discard(tmp);
        return rc;
    }
    STEP(STORE_CREATE_CLOSED);
    struct stat sb;
    snprintf(side, sizeof(side), "%s-wal", tmp);
    if (stat(side, &sb) == 0 && sb.st_size > 0) {
        discard(tmp);
        return st_errf(errmsg, ST_EDB, "%.200s: creating the store: its WAL was not folded in",
                       path);
    }
    if (fsync_path(tmp, O_RDONLY)) {
        rc = sys_fail(errmsg, path, "fsync", errno);
        discard(tmp);
        return rc;
    }
    STEP(STORE_CREATE_SYNCED);
    if (publish(tmp, path, lost)) {
        rc = sys_fail(errmsg, path, "rename", errno);
        discard(tmp);
        return rc;
    }
    discard(tmp); /* side files only, or the whole file when *lost */
    STEP(STORE_CREATE_RENAMED);
    /* best effort: a rename a power loss undoes leaves no store, which launch makes again */
    if (!*lost)
        (void)fsync_path(n->dir, O_RDONLY | O_DIRECTORY);
    STEP(STORE_CREATE_DIR_SYNCED);
    return ST_OK;
}

st_status runner_store_create(const char *path, runner_store **out, char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = dummy;
    *out = NULL;
    errmsg[0] = '\0';
    if (!path || !*path)
        return st_errf(errmsg, ST_EINVAL, "store: no database path");
    if (!strcmp(path, ":memory:"))
        return store_open_file(path, 1, NULL, out, errmsg);
    names n;
    if (split_path(path, &n))
        return st_errf(errmsg, ST_EINVAL, "%.300s: store path too long", path);
    remove_stale(&n);
    STEP(STORE_CREATE_CLEANED);
    struct stat sb;
    if (stat(path, &sb) == 0 || errno != ENOENT) /* a file (or one we cannot look at) */
        return store_open_file(path, 1, NULL, out, errmsg);
    st_status rc = orphan_journal(path, errmsg);
    int lost = 0;
    if (!rc)
        rc = build(&n, path, &lost, errmsg);
    if (rc)
        return rc;
    /* ours, whole; or a file that took the path meanwhile, treated as if it had been there */
    return store_open_file(path, lost, NULL, out, errmsg);
}
