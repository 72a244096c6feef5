/*
 * store_ballast.c — the store's reserve against a full disk. A checkpoint copies the WAL's
 * pages into the database file, which grows, so on a full disk the WAL can be neither folded
 * in nor truncated, and it stays as large as the disk let it grow (issue 21). A controller
 * therefore keeps STORE_BALLAST_BYTES allocated in "<store>-ballast" while it holds a lease
 * (made, or reused when one is there); on SQLITE_FULL it deletes the file, so the truncating
 * checkpoint has room, and stops. Not a quota and no guarantee: another writer on the volume
 * may take the freed space first. Depends on SQLite and POSIX (posix_fallocate).
 */
#include "runner/runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "<store>-ballast" into buf; 0 when the store has no file name (":memory:") or it is long. */
static int ballast_path(runner_store *s, char *buf, size_t cap)
{
    const char *db = s->db ? sqlite3_db_filename(s->db, "main") : NULL;
    if (!db || !*db)
        return 0;
    int n = snprintf(buf, cap, "%s-ballast", db);
    return n > 0 && (size_t)n < cap;
}

void store_ballast_make(runner_store *s)
{
    char path[4200];
    if (s->ballast || !ballast_path(s, path, sizeof(path)))
        return;
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size >= STORE_BALLAST_BYTES) {
        s->ballast = 1; /* another controller's, or one left by a kill: reused */
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* allocated, not sparse: the blocks must be there to be given back */
    int err = posix_fallocate(fd, 0, STORE_BALLAST_BYTES);
    close(fd);
    if (err) {
        unlink(path); /* no room even for the reserve: run without one */
        return;
    }
    s->ballast = 1;
}

void store_ballast_spend(runner_store *s)
{
    char path[4200];
    if (s->ballast && ballast_path(s, path, sizeof(path)))
        unlink(path);
    s->ballast = 0;
}

void store_ballast_remove(runner_store *s)
{
    if (!s->ballast)
        return;
    /* another sweep's controller on this store may still rely on it */
    sqlite3_stmt *st = store_stmt(s, "SELECT count(*) FROM lease WHERE expires > ?1");
    if (!st)
        return;
    sqlite3_bind_double(st, 1, runner_now());
    int others = sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) > 0;
    sqlite3_reset(st);
    if (others) {
        s->ballast = 0;
        return;
    }
    store_ballast_spend(s);
}

void store_checkpoint_after_full(runner_store *s)
{
    if (!s->full || !s->db || !sqlite3_get_autocommit(s->db))
        return; /* none needed, or a transaction is open (the checkpoint would be refused) */
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc == SQLITE_OK)
        s->full = 0;
}
