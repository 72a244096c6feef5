/*
 * store_manage.c — managing the sweeps of a store: whether a live controller holds a sweep (the
 * lease, its heartbeat and, on this host, its process), deleting a sweep with everything it
 * recorded, and renaming one (the stored sweep file's `name:` follows). It is not the
 * controller's lease protocol (store.c) and never touches attempt logs on disk. Depends on
 * SQLite and config.c (a renamed sweep file must still load).
 */
#include "runner/runner_int.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

st_status store_lease_state(runner_store *s, int64_t sweep, char *owner, size_t cap,
                            double *heartbeat, int *live)
{
    *live = 0;
    *heartbeat = NAN;
    if (cap)
        owner[0] = '\0';
    sqlite3_stmt *st = store_stmt(s, "SELECT owner, host, pid, heartbeat, expires FROM lease "
                                     "WHERE sweep_id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        char host[64] = "localhost";
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
        if (cap)
            snprintf(owner, cap, "%s", store_col_text(st, 0));
        int same_host = !strcmp(store_col_text(st, 1), host);
        pid_t pid = (pid_t)sqlite3_column_int64(st, 2);
        *heartbeat = sqlite3_column_double(st, 3);
        /* a process gone on this host is dead at once, whatever its lease still says */
        int dead = same_host && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
        *live = !dead && sqlite3_column_double(st, 4) > runner_now();
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_fail(s, rc, "reading the lease");
    return ST_OK;
}

/* ST_EBUSY with a message when a live controller holds sweep `id` (named `name`). */
static st_status refuse_if_live(runner_store *s, int64_t id, const char *name, const char *verb)
{
    char owner[128];
    double hb;
    int live;
    st_status rc = store_lease_state(s, id, owner, sizeof(owner), &hb, &live);
    if (rc)
        return rc;
    if (live)
        return st_errf(s->errmsg, ST_EBUSY,
                       "cannot %s sweep '%s': a live controller (%s) holds it; stop it first "
                       "('scaletune sweep stop')",
                       verb, name, owner);
    return ST_OK;
}

st_status runner_store_delete(runner_store *s, const char *sweep)
{
    s->errmsg[0] = '\0';
    if (!sweep || !*sweep)
        return st_errf(s->errmsg, ST_EINVAL, "delete needs the sweep's exact name");
    static const char *const del[] = {
        "DELETE FROM metric_points WHERE attempt_id IN (SELECT a.id FROM attempts a JOIN runs r "
        "ON r.id = a.run_id WHERE r.sweep_id = ?1)",
        "DELETE FROM attempts WHERE run_id IN (SELECT id FROM runs WHERE sweep_id = ?1)",
        "DELETE FROM observations WHERE sweep_id = ?1",
        "DELETE FROM runs WHERE sweep_id = ?1",
        "DELETE FROM parameters WHERE sweep_id = ?1",
        "DELETE FROM events WHERE sweep_id = ?1",
        "DELETE FROM lease WHERE sweep_id = ?1",
        "DELETE FROM sweeps WHERE id = ?1",
    };
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    int64_t id = 0;
    /* looked up and checked inside the write lock: no controller can take it meanwhile */
    rc = store_find_sweep(s, sweep, &id, NULL);
    if (!rc)
        rc = refuse_if_live(s, id, sweep, "delete");
    for (size_t i = 0; !rc && i < sizeof(del) / sizeof(del[0]); i++)
        rc = store_exec_ids(s, del[i], "deleting the sweep", 1, &id);
    if (rc) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s);
}

/* The sweep file `text` with its top-level `name:` line replaced by `name: "new"`; NULL when
 * there is no such line (a flow-style file). malloc'd. */
static char *rename_text(const char *text, const char *new_name)
{
    const char *line = text;
    while (line && *line) {
        if (!strncmp(line, "name:", 5))
            break;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (!line || !*line)
        return NULL;
    const char *end = strchr(line, '\n');
    if (!end)
        end = line + strlen(line);
    size_t head = (size_t)(line - text), n = strlen(new_name), tail = strlen(end);
    char *out = malloc(head + n + 16 + tail);
    if (!out)
        return NULL;
    memcpy(out, text, head);
    int k = sprintf(out + head, "name: \"%s\"", new_name);
    memcpy(out + head + (size_t)k, end, tail + 1);
    return out;
}

/* The stored sweep file with the new name, checked to load and to carry that name. */
static st_status renamed_config(runner_store *s, const char *text, const char *new_name, char **out)
{
    *out = rename_text(text, new_name);
    runner_config *cfg = NULL;
    char em[ST_ERRMSG_MAX] = "";
    if (!*out || runner_config_load_string(*out, strlen(*out), "renamed config", &cfg, em) ||
        strcmp(cfg->name, new_name)) {
        runner_config_destroy(cfg);
        free(*out);
        *out = NULL;
        return st_errf(s->errmsg, ST_EFORMAT,
                       "the stored sweep file has no top-level 'name:' line to rename%s%s",
                       em[0] ? ": " : "", em);
    }
    runner_config_destroy(cfg);
    return ST_OK;
}

st_status runner_store_rename(runner_store *s, const char *sweep, const char *new_name)
{
    s->errmsg[0] = '\0';
    if (!sweep || !*sweep || !new_name)
        return st_errf(s->errmsg, ST_EINVAL, "rename needs the sweep's name and a new name");
    char why[200];
    if (!runner_sweep_name_ok(new_name, why, sizeof(why)))
        return st_errf(s->errmsg, ST_EINVAL, "'%.100s' is not a sweep name: it %s", new_name, why);
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    int64_t id = 0, other = 0;
    char *text = NULL, *renamed = NULL;
    rc = store_find_sweep(s, sweep, &id, &text);
    if (!rc)
        rc = refuse_if_live(s, id, sweep, "rename");
    if (!rc && strcmp(sweep, new_name) && store_find_sweep(s, new_name, &other, NULL) == ST_OK)
        rc = st_errf(s->errmsg, ST_ESTATE, "the store already has a sweep named '%s'", new_name);
    else if (!rc)
        s->errmsg[0] = '\0';
    if (!rc)
        rc = renamed_config(s, text, new_name, &renamed);
    sqlite3_stmt *st = rc ? NULL
                          : store_stmt(s, "UPDATE sweeps SET name = ?2, config = ?3 "
                                          "WHERE id = ?1");
    if (!rc && !st)
        rc = ST_EDB;
    if (!rc) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, new_name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, renamed, -1, SQLITE_TRANSIENT);
        rc = store_exec_stmt(s, st, "renaming the sweep");
    }
    if (!rc)
        rc = store_event(s, id, 0, 0, "rename", sweep);
    free(text);
    free(renamed);
    if (rc) {
        store_rollback(s);
        return rc;
    }
    return store_commit(s);
}

st_status runner_store_check(runner_store *s)
{
    s->errmsg[0] = '\0';
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &st, NULL);
    char problems[600] = "";
    size_t len = 0;
    while (src == SQLITE_OK || src == SQLITE_ROW) {
        if ((src = sqlite3_step(st)) != SQLITE_ROW)
            break;
        const char *t = store_col_text(st, 0);
        if (!strcmp(t, "ok"))
            continue;
        if (!strncmp(t, "*** in database main ***", 24)) /* SQLite's heading, then "\n" */
            t += t[24] == '\n' ? 25 : 24;
        int n = snprintf(problems + len, sizeof(problems) - len, "%s%s", len ? "; " : "", t);
        if (n > 0 && len + (size_t)n < sizeof(problems))
            len += (size_t)n;
    }
    sqlite3_finalize(st);
    if (src != SQLITE_DONE && src != SQLITE_OK)
        snprintf(problems, sizeof(problems), "%s", sqlite3_errmsg(s->db));
    if (!problems[0])
        return ST_OK;
    for (char *p = problems; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return st_errf(s->errmsg, ST_EDB,
                   "the store %s is damaged (%s); keep a copy of the file; 'sqlite3 %s .dump' "
                   "shows what is still readable",
                   sqlite3_db_filename(s->db, "main"), problems,
                   sqlite3_db_filename(s->db, "main"));
}
