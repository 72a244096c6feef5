/*
 * controller_open.c — a controller's life ends: runner_launch (a new sweep in the store),
 * runner_resume (take the lease, requeue stopped runs, rebuild the optimizer, settle or adopt the
 * attempts a dead controller left running) and runner_destroy. Split from controller.c.
 */
#include "runner/controller_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- creation ---------------------------------------------------------------------------- */

static st_status runner_alloc(const runner_options *opts, int create, runner **out, char *errmsg)
{
    runner *r = calloc(1, sizeof(*r));
    if (!r)
        return ST_ENOMEM;
    r->opts = opts ? *opts : runner_options_default();
    if (r->opts.node)
        snprintf(r->node, sizeof(r->node), "%s", r->opts.node);
    r->opts.node = NULL; /* not kept: r->node is the copy */
    r->next_bound = NAN;
    r->next_phase = -1;
    if (r->opts.poll_seconds <= 0)
        r->opts.poll_seconds = 0.02;
    if (r->opts.lease_seconds <= 0)
        r->opts.lease_seconds = 15;
    r->buf = malloc(READ_CHUNK + 1);
    runner_owner_id(r->owner, sizeof(r->owner));
    if (r->opts.supervisor) /* copied: the caller's string may go */
        r->opts.supervisor = r->supervisor = strdup(r->opts.supervisor);
    if (!r->buf || (opts && opts->supervisor && !r->supervisor)) {
        runner_destroy(r);
        return ST_ENOMEM;
    }
    st_status rc;
    if (!r->opts.db_path) {
        runner_destroy(r);
        return st_errf(errmsg, ST_EINVAL, "runner: no database path");
    }
    rc = create ? runner_store_create(r->opts.db_path, &r->st, errmsg)
                : runner_store_open(r->opts.db_path, &r->st, errmsg);
    if (rc) {
        runner_destroy(r);
        return rc;
    }
    *out = r;
    return ST_OK;
}

/* The backend the config names (the local one by default), created with the config. */
static st_status attach_backend(runner *r, char *errmsg)
{
    if (r->cfg->backend == RUNNER_BACKEND_SLURM)
        r->be = r->cfg->slurm.via == RUNNER_SLURM_REST ? runner_backend_slurm_rest
                                                       : runner_backend_slurm_cli;
    else
        r->be = runner_backend_local;
    st_status rc = r->be->create(r->cfg, &r->be_state, errmsg);
    if (rc)
        r->be = NULL;
    return rc;
}

/* Sizes the per-slot arrays once the config is known. */
static st_status alloc_slots(runner *r)
{
    size_t n = r->cfg->slots;
    r->det = r->cfg->deterministic;
    r->act = calloc(n, sizeof(active));
    r->slot_busy = calloc(n, 1);
    r->jobs = calloc(n, sizeof(runner_job));
    return r->act && r->slot_busy && r->jobs ? ST_OK : ST_ENOMEM;
}

static st_status load_counts(runner *r)
{
    /* every row counts in the statuses (a pending branch is launched like a run), only
     * suggestions in n_runs (the budget's runs); branches' costs count in what was spent */
    sqlite3_stmt *st = store_stmt(r->st, "SELECT status, count(*), sum(n_attempts), "
                                         "sum(coalesce(cost, 0)), sum(parent_run IS NULL) FROM "
                                         "runs WHERE sweep_id = ?1 GROUP BY status");
    memset(r->n_branch_status, 0, sizeof(r->n_branch_status));
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    memset(r->n_status, 0, sizeof(r->n_status));
    r->n_runs = 0;
    r->n_retried = 0;
    r->spent = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int s = sqlite3_column_int(st, 0);
        size_t n = (size_t)sqlite3_column_int64(st, 1);
        size_t a = (size_t)sqlite3_column_int64(st, 2);
        size_t n_suggested = (size_t)sqlite3_column_int64(st, 4);
        if (s >= 0 && s < 6) {
            r->n_status[s] = n;
            r->n_branch_status[s] = n - n_suggested;
        }
        r->n_runs += n_suggested;
        r->n_retried += a > n ? a - n : 0;
        r->spent += sqlite3_column_double(st, 3);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_fail(r->st, rc, "counting runs");
    st = store_stmt(r->st,
                    r->cfg->maximize
                        ? "SELECT max(objective) FROM runs WHERE sweep_id = ?1 AND status = 2 "
                          "AND parent_run IS NULL"
                        : "SELECT min(objective) FROM runs WHERE sweep_id = ?1 AND status = 2 "
                          "AND parent_run IS NULL");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        r->has_best = 1;
        r->best = sqlite3_column_double(st, 0);
    }
    sqlite3_reset(st);
    return ST_OK;
}

/* method grid or random: the built-in proposer (method.c) makes the suggestions */
static void use_method(runner *r)
{
    if (r->cfg->method == RUNNER_METHOD_GRID || r->cfg->method == RUNNER_METHOD_RANDOM)
        runner_set_proposer(r, runner_method_proposer, NULL);
}

st_status runner_launch(const runner_config *cfg, const runner_options *opts, runner **out,
                        char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = dummy;
    errmsg[0] = '\0';
    *out = NULL;
    runner *r = NULL;
    st_status rc = runner_alloc(opts, 1, &r, errmsg);
    if (rc)
        return rc;
    rc = runner_config_load_string(cfg->text, strlen(cfg->text), cfg->name, &r->cfg, errmsg);
    if (!rc)
        rc = alloc_slots(r);
    if (!rc)
        rc = attach_backend(r, errmsg);
    if (!rc)
        use_method(r);
    if (!rc)
        rc = store_rebuild_carbs(r->st, 0, r->cfg, 0, &r->cb);
    if (rc) {
        if (!errmsg[0])
            snprintf(errmsg, ST_ERRMSG_MAX, "%s", r->st->errmsg);
        runner_destroy(r);
        return rc;
    }

    /* the log directory, absolute so that resume from elsewhere finds it */
    char ld[4096], cwd[2048];
    if (r->opts.log_dir)
        snprintf(ld, sizeof(ld), "%s", r->opts.log_dir);
    else
        snprintf(ld, sizeof(ld), "%s.runs", r->opts.db_path);
    if (ld[0] != '/' && getcwd(cwd, sizeof(cwd))) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%.2040s/%.2040s", cwd, ld);
        snprintf(ld, sizeof(ld), "%s", tmp);
    }

    /* the runs' working directory, absolute and fixed now: the sweep file's workdir (resolved
     * against its directory by runner_config_load_file; one from a string is relative to the
     * current directory, as chdir would take it), else the directory launch runs in. Resume
     * and the Slurm backend read it back from the store whatever their current directory. */
    char *wd = runner_path_absolute(NULL, cfg->workdir ? cfg->workdir : ".");
    if (!wd) {
        rc = st_errf(errmsg, errno == ENOMEM ? ST_ENOMEM : ST_EIO,
                     "%s: workdir: cannot make '%s' absolute: %s", cfg->name,
                     cfg->workdir ? cfg->workdir : "the current directory", strerror(errno));
        runner_destroy(r);
        return rc;
    }
    free(r->cfg->workdir);
    r->cfg->workdir = wd;

    rc = store_begin(r->st);
    sqlite3_stmt *st = rc ? NULL : store_stmt(r->st, "SELECT id FROM sweeps WHERE name = ?1");
    if (st) {
        sqlite3_bind_text(st, 1, cfg->name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW)
            rc = st_errf(r->st->errmsg, ST_ESTATE,
                         "the store already has a sweep named '%s': use 'scaletune sweep resume' "
                         "or another name",
                         cfg->name);
        sqlite3_reset(st);
    } else if (!rc) {
        rc = ST_EDB;
    }
    if (!rc) {
        st = store_stmt(r->st, "INSERT INTO sweeps(name, config, created, log_dir, generation, "
                               "workdir) VALUES(?1, ?2, ?3, ?4, 1, ?5)");
        if (!st)
            rc = ST_EDB;
        else {
            sqlite3_bind_text(st, 1, cfg->name, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 2, cfg->text, -1, SQLITE_TRANSIENT);
            sqlite3_bind_double(st, 3, runner_now());
            sqlite3_bind_text(st, 4, ld, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 5, wd, -1, SQLITE_TRANSIENT);
            rc = store_exec_stmt(r->st, st, "recording the sweep");
        }
        r->sweep = sqlite3_last_insert_rowid(r->st->db);
        r->generation = 1;
    }
    for (size_t i = 0; !rc && i < r->cfg->n_params; i++) {
        const runner_param_spec *ps = &r->cfg->params[i];
        st = store_stmt(r->st, "INSERT INTO parameters(sweep_id, idx, name, space, min, max, "
                               "center, scale, base, is_integer, rounding, fixed_text) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
        if (!st) {
            rc = ST_EDB;
            break;
        }
        sqlite3_bind_int64(st, 1, r->sweep);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
        sqlite3_bind_text(st, 3, ps->p.name, -1, SQLITE_TRANSIENT);
        if (!ps->is_fixed) {
            sqlite3_bind_int(st, 4, (int)ps->p.space);
            sqlite3_bind_double(st, 5, ps->p.min);
            sqlite3_bind_double(st, 6, ps->p.max);
            sqlite3_bind_double(st, 7, ps->p.center);
            sqlite3_bind_double(st, 8, ps->p.scale);
            sqlite3_bind_double(st, 9, ps->p.base);
            sqlite3_bind_int(st, 10, ps->p.is_integer);
            sqlite3_bind_double(st, 11, ps->p.rounding);
        } else {
            sqlite3_bind_text(st, 12, ps->fixed_text, -1, SQLITE_TRANSIENT);
        }
        rc = store_exec_stmt(r->st, st, "recording parameters");
    }
    if (!rc)
        rc = store_event(r->st, r->sweep, 0, 0, "launch", cfg->name);
    if (!rc)
        rc = store_commit(r->st);
    else
        store_rollback(r->st);
    if (!rc) {
        r->log_dir = strdup(ld);
        rc = r->log_dir ? ST_OK : ST_ENOMEM;
    }
    if (!rc)
        rc = store_lease_take(r->st, r->sweep, r->owner, r->opts.lease_seconds);
    if (rc) {
        snprintf(errmsg, ST_ERRMSG_MAX, "%s", r->st->errmsg);
        runner_destroy(r);
        return rc;
    }
    r->last_beat = runner_mono();
    *out = r;
    return ST_OK;
}

/* ---- resume ------------------------------------------------------------------------------ */

static st_status add_active_from_row(runner *r, sqlite3_stmt *st);

/* A new generation, in one transaction: carbs ids issued by earlier controllers mean nothing to
 * this one; runs the user stopped go back to the queue; open runs are re-registered. */
static st_status begin_generation(runner *r)
{
    st_status rc = store_begin(r->st);
    sqlite3_stmt *st = rc ? NULL
                          : store_stmt(r->st, "UPDATE sweeps SET generation = generation + 1, "
                                              "stop_requested = 0 WHERE id = ?1 "
                                              "RETURNING generation, log_dir");
    if (!rc && !st)
        rc = ST_EDB;
    if (!rc) {
        sqlite3_bind_int64(st, 1, r->sweep);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r->generation = sqlite3_column_int64(st, 0);
            r->log_dir = strdup(store_col_text(st, 1));
        }
        sqlite3_reset(st);
        rc = r->log_dir ? ST_OK : ST_EDB;
    }
    /* runs the user stopped go back to the queue: stopping is not failing (runs stopped early
     * by the stop rule have ended: they stay) */
    if (!rc) {
        int64_t ids[1] = {r->sweep};
        rc = store_exec_ids(r->st,
                            "UPDATE runs SET status = 0, failure = 0, not_before = 0 "
                            "WHERE sweep_id = ?1 AND status = 5 AND stop_reason IS NULL",
                            "requeueing stopped runs", 1, ids);
    }
    /* open runs (and in deterministic mode the ended runs not released yet) are
     * re-registered with the rebuilt optimizer under their run id (store_rebuild_carbs): that
     * is their suggestion id in this generation */
    if (!rc) {
        int64_t ids[3] = {r->sweep, r->generation, r->det};
        rc = store_exec_ids(r->st,
                            "UPDATE runs SET carbs_id = id, generation = ?2 "
                            "WHERE sweep_id = ?1 AND parent_run IS NULL AND (status IN (0, 1) OR "
                            "(?3 AND (status IN "
                            "(2, 3, 4) OR stop_reason IS NOT NULL) AND id > (SELECT "
                            "coalesce(max(run_id), 0) FROM observations WHERE sweep_id = ?1)))",
                            "re-registering open runs", 3, ids);
    }
    if (!rc)
        rc = store_event(r->st, r->sweep, 0, 0, "resume", r->owner);
    if (!rc)
        rc = store_commit(r->st);
    else
        store_rollback(r->st);
    return rc;
}

/* the attempts that were launching or running when the last controller died, into r->act */
static st_status load_active_attempts(runner *r)
{
    sqlite3_stmt *st =
        store_stmt(r->st, "SELECT a.id, a.run_id, a.number, a.state, a.job_id, a.dir, a.slot,"
                          " a.started, a.last_metric, a.out_off, a.mf_off, a.n_lines, a.n_garbage,"
                          " a.max_cost, a.diverged, a.final, r.x, r.predicted_cost,"
                          " coalesce(r.parent_run, 0) FROM attempts a"
                          " JOIN runs r ON r.id = a.run_id WHERE r.sweep_id = ?1"
                          " AND a.state IN ('launching', 'running') ORDER BY a.id");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        st_status rc = add_active_from_row(r, st);
        if (rc) {
            sqlite3_reset(st);
            return rc;
        }
    }
    sqlite3_reset(st);
    return src == SQLITE_DONE ? ST_OK : store_fail(r->st, src, "reading running attempts");
}

/* A launching attempt: the backend says whether it started (job id jid) or never will; the
 * store records which, and requeues its run when it never will. */
static st_status settle_launching(runner *r, const active *a, int launched, const char *jid)
{
    st_status rc = store_begin(r->st);
    if (rc)
        return rc;
    sqlite3_stmt *st =
        launched ? store_stmt(r->st, "UPDATE attempts SET state = 'running', job_id = ?2 "
                                     "WHERE id = ?1")
                 : store_stmt(r->st, "UPDATE attempts SET state = 'abandoned', ended = ?2 "
                                     "WHERE id = ?1");
    if (!st) {
        store_rollback(r->st);
        return ST_EDB;
    }
    sqlite3_bind_int64(st, 1, a->attempt_id);
    if (launched)
        sqlite3_bind_text(st, 2, jid, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_double(st, 2, runner_now());
    rc = store_exec_stmt(r->st, st, "adopting an attempt");
    if (!rc && !launched)
        rc = store_requeue_run(r->st, a->run_id);
    if (!rc)
        rc = store_commit(r->st);
    else
        store_rollback(r->st);
    return rc;
}

/* launching attempts: adopt the ones that did start, requeue the ones that never will */
static st_status adopt_launching(runner *r)
{
    for (size_t i = 0; i < r->n_act;) {
        active *a = &r->act[i];
        if (a->job_id[0]) {
            i++;
            continue;
        }
        char jid[64];
        st_status rc = r->be->adopt(r->be_state, a->dir, jid, sizeof(jid), r->errmsg);
        if (rc && rc != ST_ENOTFOUND)
            return rc;
        int launched = rc == ST_OK;
        if ((rc = settle_launching(r, a, launched, jid)))
            return rc;
        if (launched) {
            snprintf(a->job_id, sizeof(a->job_id), "%s", jid);
            i++;
        } else {
            ctl_set_status_count(r, RUNNER_RUN_RUNNING, RUNNER_RUN_PENDING, a->parent != 0);
            r->slot_busy[a->slot] = 0;
            free(a->dir);
            free(a->final_line);
            free(a->x_all);
            es_free(a);
            r->act[i] = r->act[--r->n_act];
        }
    }
    return ST_OK;
}

/* the stored sweep file, its launch directory, slots, backend and method, and the lease */
static st_status open_stored_sweep(runner *r, const char *sweep, char *errmsg)
{
    char *text = NULL;
    st_status rc = store_find_sweep(r->st, sweep, &r->sweep, &text);
    if (!rc) {
        rc = runner_config_load_string(text, strlen(text), sweep ? sweep : "stored config", &r->cfg,
                                       errmsg);
        free(text);
    }
    /* the directory recorded at launch, not this process's current one */
    if (!rc)
        rc = store_sweep_workdir(r->st, r->sweep, r->cfg);
    if (!rc && !r->cfg->argc)
        rc = st_errf(errmsg, ST_EINVAL,
                     "sweep '%s' has no command: it is driven by ask/tell, not resumed",
                     r->cfg->name);
    if (!rc)
        rc = alloc_slots(r);
    if (!rc)
        rc = attach_backend(r, errmsg);
    if (!rc)
        use_method(r);
    if (!rc)
        rc = store_lease_take(r->st, r->sweep, r->owner, r->opts.lease_seconds);
    return rc;
}

st_status runner_resume(const char *sweep, const runner_options *opts, runner **out, char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    if (!errmsg)
        errmsg = dummy;
    errmsg[0] = '\0';
    *out = NULL;
    runner *r = NULL;
    st_status rc = runner_alloc(opts, 0, &r, errmsg);
    if (rc)
        return rc;
    rc = open_stored_sweep(r, sweep, errmsg);
    if (!rc)
        rc = begin_generation(r);
    if (!rc)
        rc = load_counts(r);
    if (!rc)
        rc = store_rebuild_carbs(r->st, r->sweep, r->cfg, r->n_runs, &r->cb);
    if (!rc)
        rc = ctl_release_load(r);
    if (!rc)
        rc = load_active_attempts(r);
    if (!rc)
        rc = adopt_launching(r);
    if (rc) {
        if (!errmsg[0])
            snprintf(errmsg, ST_ERRMSG_MAX, "%s", r->errmsg[0] ? r->errmsg : r->st->errmsg);
        runner_destroy(r);
        return rc;
    }
    r->last_beat = runner_mono();
    *out = r;
    return ST_OK;
}

static st_status add_active_from_row(runner *r, sqlite3_stmt *st)
{
    size_t slot = (size_t)sqlite3_column_int64(st, 6);
    if (r->n_act == r->cfg->slots || slot >= r->cfg->slots || r->slot_busy[slot]) {
        /* the sweep file's slots changed under us: find any free slot */
        for (slot = 0; slot < r->cfg->slots && r->slot_busy[slot]; slot++)
            ;
        if (slot == r->cfg->slots || r->n_act == r->cfg->slots)
            return st_errf(r->errmsg, ST_ESTATE, "more running attempts than slots");
    }
    active *a = &r->act[r->n_act];
    memset(a, 0, sizeof(*a));
    a->attempt_id = sqlite3_column_int64(st, 0);
    a->run_id = sqlite3_column_int64(st, 1);
    a->number = (unsigned)sqlite3_column_int(st, 2);
    const char *state = store_col_text(st, 3);
    const char *jid = store_col_text(st, 4);
    if (!strcmp(state, "running") && jid)
        snprintf(a->job_id, sizeof(a->job_id), "%s", jid);
    a->dir = strdup(store_col_text(st, 5));
    a->slot = slot;
    a->started = sqlite3_column_double(st, 7);
    a->last_metric =
        sqlite3_column_type(st, 8) == SQLITE_NULL ? a->started : sqlite3_column_double(st, 8);
    a->off[0] = sqlite3_column_int64(st, 9);
    a->off[1] = sqlite3_column_int64(st, 10);
    a->n_lines = sqlite3_column_int64(st, 11);
    a->n_garbage = sqlite3_column_int64(st, 12);
    a->max_cost = sqlite3_column_type(st, 13) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 13);
    a->diverged = sqlite3_column_int(st, 14);
    if (sqlite3_column_type(st, 15) != SQLITE_NULL)
        a->final_line = strdup(store_col_text(st, 15));
    size_t nb = r->cfg->n_params * sizeof(double);
    a->x_all = malloc(nb);
    if (!a->dir || !a->x_all)
        return ST_ENOMEM;
    if ((size_t)sqlite3_column_bytes(st, 16) != nb)
        return st_errf(r->errmsg, ST_EFORMAT, "store: run %lld has the wrong parameter count",
                       (long long)a->run_id);
    memcpy(a->x_all, sqlite3_column_blob(st, 16), nb);
    a->predicted_cost =
        sqlite3_column_type(st, 17) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 17);
    a->parent = sqlite3_column_int64(st, 18);
    /* re-registered as outstanding under its run id; a branch is not the optimizer's */
    a->carbs_id = a->parent ? 0 : (uint64_t)a->run_id;
    r->slot_busy[slot] = 1;
    r->n_act++;
    return ST_OK;
}

void runner_destroy(runner *r)
{
    if (!r)
        return;
    if (r->st && r->sweep)
        store_lease_release(r->st, r->sweep, r->owner);
    for (size_t i = 0; i < r->n_act; i++) {
        free(r->act[i].dir);
        free(r->act[i].final_line);
        free(r->act[i].x_all);
        es_free(&r->act[i]);
    }
    free(r->act);
    free(r->slot_busy);
    free(r->jobs);
    free(r->buf);
    free(r->ov);
    free(r->log_dir);
    free(r->supervisor);
    if (r->be && r->be_state)
        r->be->destroy(r->be_state);
    carbs_destroy(r->cb);
    runner_config_destroy(r->cfg);
    runner_store_close(r->st);
    free(r);
}
