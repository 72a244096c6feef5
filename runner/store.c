/*
 * store.c — the SQLite store, the single source of truth of a sweep: schema with a version and
 * migrations, WAL, busy timeout, bound parameters only, a statement cache, transactions, the
 * event log, the lease row with its heartbeat, and rebuilding an optimizer from the recorded
 * observations. Queries for status/export/ask/tell live in store_query.c. Depends on SQLite.
 */
#include "runner/runner_int.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Migration i takes the schema from version i to i + 1. Append only. */
static const char *const migrations[RUNNER_SCHEMA_VERSION] = {
    "CREATE TABLE sweeps(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
    "  config TEXT NOT NULL, created REAL NOT NULL, log_dir TEXT NOT NULL,"
    "  stop_requested INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0,"
    "  n_asks INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE parameters(sweep_id INTEGER NOT NULL REFERENCES sweeps(id), idx INTEGER NOT NULL,"
    "  name TEXT NOT NULL, space INTEGER, min REAL, max REAL, center REAL, scale REAL, base REAL,"
    "  is_integer INTEGER, rounding REAL, fixed_text TEXT, PRIMARY KEY(sweep_id, idx));"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, sweep_id INTEGER NOT NULL REFERENCES sweeps(id),"
    "  status INTEGER NOT NULL, failure INTEGER NOT NULL DEFAULT 0, x BLOB NOT NULL,"
    "  carbs_id INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0,"
    "  predicted_cost REAL, objective REAL, cost REAL, final TEXT,"
    "  n_attempts INTEGER NOT NULL DEFAULT 0, n_infra INTEGER NOT NULL DEFAULT 0,"
    "  not_before REAL NOT NULL DEFAULT 0, created REAL NOT NULL, ended REAL);"
    "CREATE INDEX runs_by_status ON runs(sweep_id, status);"
    "CREATE TABLE attempts(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  number INTEGER NOT NULL, state TEXT NOT NULL, backend TEXT NOT NULL, job_id TEXT,"
    "  host TEXT, dir TEXT NOT NULL, slot INTEGER NOT NULL, started REAL NOT NULL, ended REAL,"
    "  exit_code INTEGER, signal INTEGER, failure INTEGER NOT NULL DEFAULT 0,"
    "  out_off INTEGER NOT NULL DEFAULT 0, mf_off INTEGER NOT NULL DEFAULT 0,"
    "  n_lines INTEGER NOT NULL DEFAULT 0, n_garbage INTEGER NOT NULL DEFAULT 0,"
    "  last_metric REAL, max_cost REAL, diverged INTEGER NOT NULL DEFAULT 0, final TEXT,"
    "  UNIQUE(run_id, number));"
    "CREATE INDEX attempts_by_state ON attempts(state);"
    "CREATE TABLE metric_points(attempt_id INTEGER NOT NULL REFERENCES attempts(id),"
    "  event INTEGER NOT NULL, step INTEGER, t REAL NOT NULL, line TEXT NOT NULL);"
    "CREATE INDEX metric_points_by_attempt ON metric_points(attempt_id);"
    "CREATE TABLE observations(id INTEGER PRIMARY KEY,"
    "  sweep_id INTEGER NOT NULL REFERENCES sweeps(id),"
    "  run_id INTEGER NOT NULL UNIQUE REFERENCES runs(id), x BLOB NOT NULL, output REAL,"
    "  cost REAL, failed INTEGER NOT NULL, t REAL NOT NULL);"
    "CREATE INDEX observations_by_sweep ON observations(sweep_id, id);"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, sweep_id INTEGER NOT NULL, t REAL NOT NULL,"
    "  kind TEXT NOT NULL, run_id INTEGER, attempt_id INTEGER, message TEXT);"
    "CREATE TABLE lease(sweep_id INTEGER PRIMARY KEY REFERENCES sweeps(id), owner TEXT NOT NULL,"
    "  host TEXT NOT NULL, pid INTEGER NOT NULL, heartbeat REAL NOT NULL,"
    "  expires REAL NOT NULL);",
    /* v2: a covering index for status and the Pareto front (no sort, no table reads) */
    "CREATE INDEX runs_by_status_cost ON runs(sweep_id, status, cost, objective, n_attempts);",
    /* v3: the optimizer's counters after each suggestion and the number of observations it had
     * (store_record_progress), so a rebuilt optimizer is the live one; the expiry of an asked
     * run (runner_store_ask_ttl) */
    "ALTER TABLE runs ADD COLUMN sg_suggest INTEGER;"
    "ALTER TABLE runs ADD COLUMN sg_design INTEGER;"
    "ALTER TABLE runs ADD COLUMN sg_resample INTEGER;"
    "ALTER TABLE runs ADD COLUMN sg_born INTEGER;"
    "ALTER TABLE runs ADD COLUMN expires REAL;",
    /* v4: early stopping: why a run was stopped early (NULL: it was not) and what the
     * optimizer saw of it (the lower end of its final objective, its cost at its planned end) */
    "ALTER TABLE runs ADD COLUMN stop_reason TEXT;"
    "ALTER TABLE runs ADD COLUMN bound_objective REAL;"
    "ALTER TABLE runs ADD COLUMN bound_cost REAL;",
    /* v5: the runs' working directory, absolute, fixed at launch (the sweep file's workdir
     * resolved against its directory, else the directory launch ran in), so that resume and
     * Slurm jobs use it whatever the current directory of the process that resumes */
    "ALTER TABLE sweeps ADD COLUMN workdir TEXT;",
    /* v6: cooldown branches the controller spawns (runner/branch.c): the parent run (NULL: a
     * run of its own, a suggestion), the parent's checkpoint step it starts from and its own
     * decay steps. Branch rows are never suggestions: every query of the sweep's suggestions,
     * its budget of runs and its front says `parent_run IS NULL` */
    "ALTER TABLE runs ADD COLUMN parent_run INTEGER;"
    "ALTER TABLE runs ADD COLUMN branch_step INTEGER;"
    "ALTER TABLE runs ADD COLUMN decay_steps INTEGER;",
};

double runner_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double runner_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

st_status store_fail(runner_store *s, int src, const char *what)
{
    int base = src & 0xff;
    st_status rc = base == SQLITE_FULL                            ? ST_ENOSPC
                   : base == SQLITE_BUSY || base == SQLITE_LOCKED ? ST_EBUSY
                   : base == SQLITE_NOMEM                         ? ST_ENOMEM
                                                                  : ST_EDB;
    const char *hint = rc == ST_ENOSPC ? " (disk full: nothing committed is lost; free space "
                                         "and resume)"
                                       : "";
    st_errf(s->errmsg, rc, "store: %s: %s%s", what, s->db ? sqlite3_errmsg(s->db) : "no db", hint);
    if (rc == ST_ENOSPC && s->db) {
        /* give the WAL's space back: the reserve makes room for the checkpoint, which runs
         * now or, inside a transaction, after its rollback (store_ballast.c) */
        s->full = 1;
        store_ballast_spend(s);
        store_checkpoint_after_full(s);
    }
    return rc;
}

sqlite3_stmt *store_stmt(runner_store *s, const char *sql)
{
    for (size_t i = 0; i < s->n_cache; i++)
        if (s->cache[i].sql == sql) {
            sqlite3_reset(s->cache[i].st);
            sqlite3_clear_bindings(s->cache[i].st);
            return s->cache[i].st;
        }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        store_fail(s, rc, "prepare");
        return NULL;
    }
    if (s->n_cache < STORE_STMT_CACHE) {
        s->cache[s->n_cache].sql = sql;
        s->cache[s->n_cache].st = st;
        s->n_cache++;
    } else {
        /* full cache: keep the statement alive until close by evicting the oldest */
        sqlite3_finalize(s->cache[0].st);
        memmove(&s->cache[0], &s->cache[1], (STORE_STMT_CACHE - 1) * sizeof(s->cache[0]));
        s->cache[STORE_STMT_CACHE - 1].sql = sql;
        s->cache[STORE_STMT_CACHE - 1].st = st;
    }
    return st;
}

st_status store_exec_stmt(runner_store *s, sqlite3_stmt *st, const char *what)
{
    if (!st)
        return ST_EDB;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return store_fail(s, rc, what);
    return ST_OK;
}

st_status store_exec_ids(runner_store *s, const char *sql, const char *what, size_t n,
                         const int64_t *ids)
{
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st)
        return ST_EDB;
    for (size_t i = 0; i < n; i++)
        sqlite3_bind_int64(st, (int)i + 1, ids[i]);
    return store_exec_stmt(s, st, what);
}

static st_status exec_sql(runner_store *s, const char *sql, const char *what)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? ST_OK : store_fail(s, rc, what);
}

st_status store_begin(runner_store *s)
{
    st_status rc = store_exec_stmt(s, store_stmt(s, "BEGIN IMMEDIATE"), "begin");
    if (!rc && (rc = store_fence_check(s)))
        store_rollback(s);
    return rc;
}

st_status store_commit(runner_store *s)
{
    st_status rc = store_exec_stmt(s, store_stmt(s, "COMMIT"), "commit");
    if (rc)
        store_rollback(s);
    return rc;
}

void store_rollback(runner_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_checkpoint_after_full(s);
}

static st_status migrate(runner_store *s)
{
    sqlite3_stmt *st = store_stmt(s, "PRAGMA user_version");
    if (!st)
        return ST_EDB;
    int v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_reset(st);
    if (v < 0)
        return store_fail(s, sqlite3_errcode(s->db), "reading the schema version");
    if (v > RUNNER_SCHEMA_VERSION)
        return st_errf(s->errmsg, ST_EDB,
                       "store: schema version %d is newer than this scaletune knows (%d); "
                       "upgrade scaletune",
                       v, RUNNER_SCHEMA_VERSION);
    for (; v < RUNNER_SCHEMA_VERSION; v++) {
        st_status rc = store_begin(s);
        if (rc)
            return rc;
        /* re-check inside the write lock: another process may have migrated meanwhile */
        st = store_stmt(s, "PRAGMA user_version");
        int now = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
        if (st)
            sqlite3_reset(st);
        if (now != v) {
            store_rollback(s);
            if (now > v) {
                v = now - 1;
                continue;
            }
            return store_fail(s, sqlite3_errcode(s->db), "reading the schema version");
        }
        char pragma[64];
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
        rc = exec_sql(s, migrations[v], "migration");
        if (!rc && v == 0) /* a new store: the marker that tells it from others' databases */
            rc = exec_sql(s, "PRAGMA application_id = " ST_STR(RUNNER_STORE_APP_ID), "migration");
        if (!rc)
            rc = exec_sql(s, pragma, "migration");
        if (!rc)
            rc = store_commit(s);
        if (rc) {
            store_rollback(s);
            return rc;
        }
        if (store_create_hook) /* tests only: a kill after each committed migration */
            store_create_hook(STORE_CREATE_MIGRATED + v);
    }
    return ST_OK;
}

/* What the file at s is: ours (a store, possibly from before the application id), empty (a
 * new or zero-length file) or anything else. Reads only: nothing is written to a file that is
 * not ours. */
static st_status identify(runner_store *s, int *empty)
{
    static const char *const q[4] = {
        "PRAGMA application_id",
        "PRAGMA user_version",
        "SELECT count(*) FROM sqlite_master",
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
        "name IN ('sweeps', 'runs', 'attempts', 'lease')",
    };
    sqlite3_int64 v[4];
    for (int i = 0; i < 4; i++) {
        sqlite3_stmt *st = store_stmt(s, q[i]);
        if (!st)
            return ST_EDB;
        int rc = sqlite3_step(st);
        v[i] = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return (rc & 0xff) == SQLITE_NOTADB
                       ? st_errf(s->errmsg, ST_EDB, "not a scaletune store (not a SQLite database)")
                       : store_fail(s, rc, "reading the file");
    }
    *empty = v[0] == 0 && v[1] == 0 && v[2] == 0;
    if (v[0] == RUNNER_STORE_APP_ID || *empty)
        return ST_OK;
    /* stores written before the application id have our tables and a schema version */
    if (v[0] == 0 && v[1] >= 1 && v[3] == 4)
        return ST_OK;
    return st_errf(s->errmsg, ST_EDB,
                   "not a scaletune store: a SQLite database of another program (no scaletune "
                   "schema marker or tables); nothing was written to it");
}

st_status store_open_file(const char *path, int create, const char *shown, runner_store **out,
                          char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = dummy;
    *out = NULL;
    errmsg[0] = '\0';
    if (!path || !*path)
        return st_errf(errmsg, ST_EINVAL, "store: no database path");
    if (!create && access(path, F_OK) != 0)
        return st_errf(errmsg, ST_ENOTFOUND, "no such store: %.400s", path);
    runner_store *s = calloc(1, sizeof(*s));
    if (!s)
        return ST_ENOMEM;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    st_status st = ST_OK;
    int empty = 0;
    if (rc != SQLITE_OK) {
        st = store_fail(s, rc, path);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    sqlite3_extended_result_codes(s->db, 1);
    st = identify(s, &empty);
    if (!st && empty && !create)
        st = st_errf(s->errmsg, ST_EDB,
                     "an empty file, not a scaletune store ('scaletune sweep launch' or "
                     "'sweep create' makes one)");
    if (st)
        goto fail;
    /* WAL: readers (status, export) never block the controller. synchronous=NORMAL keeps
     * every commit across a crash of any process; only a power loss may drop the last ones. */
    st = exec_sql(s,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                  "PRAGMA journal_size_limit=1048576; "
                  "PRAGMA wal_autocheckpoint=" ST_STR(STORE_WAL_PAGES) ";",
                  "opening");
    if (!st)
        st = migrate(s);
    if (st)
        goto fail;
    *out = s;
    return ST_OK;
fail:
    snprintf(errmsg, ST_ERRMSG_MAX, "%.200s: %.300s", shown ? shown : path, s->errmsg);
    runner_store_close(s);
    return st;
}

st_status runner_store_open(const char *path, runner_store **out, char *errmsg)
{
    return store_open_file(path, 0, NULL, out, errmsg);
}

void runner_store_close(runner_store *s)
{
    if (!s)
        return;
    store_checkpoint_after_full(s);
    for (size_t i = 0; i < s->n_cache; i++)
        sqlite3_finalize(s->cache[i].st);
    sqlite3_close(s->db);
    free(s->names);
    for (size_t i = 0; i < s->n_params; i++)
        free(s->params[i]);
    free(s->params);
    free(s);
}

const char *runner_store_errmsg(const runner_store *s)
{
    return s ? s->errmsg : "no store";
}

st_status store_sweep_workdir(runner_store *s, int64_t sweep, runner_config *cfg)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT workdir FROM sweeps WHERE id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    int src = sqlite3_step(st);
    st_status rc = ST_OK;
    if (src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        char *wd = strdup(store_col_text(st, 0));
        if (wd) {
            free(cfg->workdir);
            cfg->workdir = wd;
        } else {
            rc = ST_ENOMEM;
        }
    } else if (src != SQLITE_ROW && src != SQLITE_DONE) {
        rc = store_fail(s, src, "reading the sweep's workdir");
    }
    sqlite3_reset(st);
    return rc;
}

st_status store_find_sweep(runner_store *s, const char *name, int64_t *id, char **config)
{
    sqlite3_stmt *st;
    if (name)
        st = store_stmt(s, "SELECT id, config FROM sweeps WHERE name = ?1");
    else
        st = store_stmt(s, "SELECT id, config FROM sweeps ORDER BY id LIMIT 2");
    if (!st)
        return ST_EDB;
    if (name)
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return store_fail(s, rc, "finding the sweep");
        return name ? st_errf(s->errmsg, ST_ENOTFOUND, "no sweep named '%s' in the store", name)
                    : st_errf(s->errmsg, ST_ENOTFOUND, "the store holds no sweep");
    }
    *id = sqlite3_column_int64(st, 0);
    if (config) {
        const char *t = (const char *)sqlite3_column_text(st, 1);
        size_t l = t ? strlen(t) : 0;
        *config = malloc(l + 1);
        if (!*config) {
            sqlite3_reset(st);
            return ST_ENOMEM;
        }
        memcpy(*config, t ? t : "", l + 1);
    }
    if (!name && sqlite3_step(st) == SQLITE_ROW) {
        sqlite3_reset(st);
        if (config) {
            free(*config);
            *config = NULL;
        }
        return st_errf(s->errmsg, ST_EINVAL, "the store holds several sweeps: name one (--sweep)");
    }
    sqlite3_reset(st);
    return ST_OK;
}

st_status runner_store_list(runner_store *s, const char **names)
{
    s->errmsg[0] = '\0';
    sqlite3_stmt *st = store_stmt(s, "SELECT name FROM sweeps ORDER BY id");
    if (!st)
        return ST_EDB;
    size_t len = 0, cap = 64;
    char *buf = malloc(cap);
    if (!buf)
        return ST_ENOMEM;
    buf[0] = '\0';
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *n = store_col_text(st, 0);
        size_t l = strlen(n);
        if (len + l + 2 > cap) {
            cap = (len + l + 2) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                sqlite3_reset(st);
                return ST_ENOMEM;
            }
            buf = nb;
        }
        memcpy(buf + len, n, l);
        len += l;
        buf[len++] = '\n';
        buf[len] = '\0';
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        free(buf);
        return store_fail(s, rc, "listing sweeps");
    }
    free(s->names);
    s->names = buf;
    *names = buf;
    return ST_OK;
}

st_status runner_store_params(runner_store *s, const char *sweep, size_t *n,
                              const char *const **names)
{
    s->errmsg[0] = '\0';
    int64_t id;
    st_status rc = store_find_sweep(s, sweep, &id, NULL);
    if (rc)
        return rc;
    for (size_t i = 0; i < s->n_params; i++)
        free(s->params[i]);
    s->n_params = 0;
    sqlite3_stmt *st = store_stmt(s, "SELECT name FROM parameters WHERE sweep_id = ?1 "
                                     "ORDER BY idx");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, id);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        char **np = realloc(s->params, (s->n_params + 1) * sizeof(char *));
        char *name = strdup(store_col_text(st, 0));
        if (!np || !name) {
            free(name);
            if (np)
                s->params = np;
            sqlite3_reset(st);
            return ST_ENOMEM;
        }
        s->params = np;
        s->params[s->n_params++] = name;
    }
    sqlite3_reset(st);
    if (src != SQLITE_DONE)
        return store_fail(s, src, "reading parameter names");
    *n = s->n_params;
    *names = (const char *const *)s->params;
    return ST_OK;
}

st_status store_event(runner_store *s, int64_t sweep, int64_t run, int64_t attempt,
                      const char *kind, const char *msg)
{
    sqlite3_stmt *st = store_stmt(s, "INSERT INTO events(sweep_id, t, kind, run_id, attempt_id, "
                                     "message) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_double(st, 2, runner_now());
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    if (run)
        sqlite3_bind_int64(st, 4, run);
    if (attempt)
        sqlite3_bind_int64(st, 5, attempt);
    if (msg)
        sqlite3_bind_text(st, 6, msg, -1, SQLITE_TRANSIENT);
    return store_exec_stmt(s, st, "event");
}

/* ---- lease ------------------------------------------------------------------------------- */

void runner_owner_id(char *buf, size_t cap)
{
    static unsigned long calls;
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long token = ((unsigned long)ts.tv_sec * 1000003ul) ^ (unsigned long)ts.tv_nsec;
    snprintf(buf, cap, "%s:%ld:%lx.%lu", host, (long)getpid(), token, ++calls);
}

st_status store_fence_check(runner_store *s)
{
    if (!s->fence_sweep)
        return ST_OK;
    sqlite3_stmt *st = store_stmt(s, "SELECT owner FROM lease WHERE sweep_id = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, s->fence_sweep);
    int src = sqlite3_step(st);
    char cur[128] = "";
    if (src == SQLITE_ROW)
        snprintf(cur, sizeof(cur), "%s", store_col_text(st, 0));
    sqlite3_reset(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return store_fail(s, src, "checking the lease");
    if (!strcmp(cur, s->fence_owner))
        return ST_OK;
    return st_errf(s->errmsg, ST_EBUSY,
                   "lost the sweep's lease to another controller (%s, this one %s): stopped "
                   "before its next write; nothing was written and nothing killed",
                   cur[0] ? cur : "since gone", s->fence_owner);
}

st_status store_lease_take(runner_store *s, int64_t sweep, const char *owner, double seconds)
{
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    st_status rc = store_begin(s);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, "SELECT owner, host, pid, expires FROM lease "
                                     "WHERE sweep_id = ?1");
    if (!st) {
        store_rollback(s);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, sweep);
    if (sqlite3_step(st) == SQLITE_ROW) {
        char cur[128];
        snprintf(cur, sizeof(cur), "%s", store_col_text(st, 0));
        int same_host = !strcmp(store_col_text(st, 1), host);
        pid_t pid = (pid_t)sqlite3_column_int64(st, 2);
        double expires = sqlite3_column_double(st, 3);
        sqlite3_reset(st);
        int dead = same_host && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
        if (strcmp(cur, owner) && expires > runner_now() && !dead) {
            store_rollback(s);
            return st_errf(s->errmsg, ST_EBUSY,
                           "the sweep is owned by a live controller (%s); stop it first "
                           "('scaletune sweep stop') or wait for its lease to expire",
                           cur);
        }
    } else {
        sqlite3_reset(st);
    }
    st = store_stmt(s, "INSERT OR REPLACE INTO lease(sweep_id, owner, host, pid, heartbeat, "
                       "expires) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st) {
        store_rollback(s);
        return ST_EDB;
    }
    double now = runner_now();
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_text(st, 2, owner, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)getpid());
    sqlite3_bind_double(st, 5, now);
    sqlite3_bind_double(st, 6, now + seconds);
    rc = store_exec_stmt(s, st, "taking the lease");
    if (!rc)
        rc = store_event(s, sweep, 0, 0, "lease", owner);
    if (rc) {
        store_rollback(s);
        return rc;
    }
    if ((rc = store_commit(s)))
        return rc;
    s->fence_sweep = sweep;
    snprintf(s->fence_owner, sizeof(s->fence_owner), "%s", owner);
    store_ballast_make(s);
    return ST_OK;
}

st_status store_lease_beat(runner_store *s, int64_t sweep, const char *owner, double seconds)
{
    sqlite3_stmt *st = store_stmt(s, "UPDATE lease SET heartbeat = ?3, expires = ?4 "
                                     "WHERE sweep_id = ?1 AND owner = ?2");
    if (!st)
        return ST_EDB;
    double now = runner_now();
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_text(st, 2, owner, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, now);
    sqlite3_bind_double(st, 4, now + seconds);
    st_status rc = store_exec_stmt(s, st, "heartbeat");
    if (rc)
        return rc;
    if (sqlite3_changes(s->db) != 1)
        return st_errf(s->errmsg, ST_EBUSY,
                       "lost the sweep's lease to another controller (this one %s): stopped "
                       "before its next write; nothing was written and nothing killed",
                       owner);
    return ST_OK;
}

void store_lease_release(runner_store *s, int64_t sweep, const char *owner)
{
    sqlite3_stmt *st = store_stmt(s, "DELETE FROM lease WHERE sweep_id = ?1 AND owner = ?2");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, sweep);
    sqlite3_bind_text(st, 2, owner, -1, SQLITE_TRANSIENT);
    store_exec_stmt(s, st, "releasing the lease");
    s->fence_sweep = 0;
    s->fence_owner[0] = '\0';
    store_ballast_remove(s);
}
