/*
 * branch.c — cooldown branches the controller spawns (the sweep file's `branches:` block,
 * docs/config.md "Cooldown branches"; Hägele et al. 2024).
 *
 * When a run succeeds (in deterministic mode: when it is released, so that the store's ids stay
 * the same whatever the order runs finish in), each fraction f of branches.at becomes a branch:
 * a pending row of the runs table with the parent's parameters, `parent_run`, the checkpoint
 * step s it restores and its own decay steps K. With d = branches.decay_fraction, a branch that
 * ends at f S of the parent's S planned steps decays for its last share d: s is the parent's
 * latest checkpoint at or before (1 - d) f S and K = round(s d / (1 - d)), so that its final
 * loss is that of a run of s + K steps with the same schedule. The parent's planned steps come
 * from its {"event":"config","steps":S} record (else its final's "steps"), the checkpoints from
 * its {"event":"checkpoint","step":s} records. A branch is never a suggestion: the optimizer,
 * the budget's runs and the front never see it; its cost (its own steps only) counts in the
 * sweep's cost, charged at its planned cost, parent cost x K / S, when it is made.
 */
#include "runner/controller_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a parent's records say: its planned steps and its checkpoints' steps (ascending). */
typedef struct parent_plan {
    double steps;
    int64_t *ck;
    size_t n_ck, cap_ck;
} parent_plan;

static int add_checkpoint(parent_plan *p, int64_t step)
{
    for (size_t i = 0; i < p->n_ck; i++)
        if (p->ck[i] == step)
            return 1; /* a retried attempt that wrote it again */
    if (p->n_ck == p->cap_ck) {
        size_t cap = p->cap_ck ? 2 * p->cap_ck : 32;
        int64_t *n = realloc(p->ck, cap * sizeof(int64_t));
        if (!n)
            return 0;
        p->ck = n;
        p->cap_ck = cap;
    }
    p->ck[p->n_ck++] = step;
    return 1;
}

/* One stored line of the parent: a config record's steps, a final's steps, a checkpoint. */
static int note_record(parent_plan *p, int event, const char *line)
{
    json_t *j = line ? json_loads(line, 0, NULL) : NULL;
    const char *ev = json_string_value(json_object_get(j, "event"));
    json_t *steps = json_object_get(j, "steps"), *step = json_object_get(j, "step");
    int ok = 1;
    if (ev && event == RUNNER_EVENT_OTHER && !strcmp(ev, "config") && json_is_number(steps))
        p->steps = json_number_value(steps);
    else if (event == RUNNER_EVENT_FINAL && isnan(p->steps) && json_is_number(steps))
        p->steps = json_number_value(steps);
    else if (ev && event == RUNNER_EVENT_OTHER && !strcmp(ev, "checkpoint") &&
             json_is_integer(step) && json_integer_value(step) > 0)
        ok = add_checkpoint(p, (int64_t)json_integer_value(step));
    json_decref(j);
    return ok;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static st_status read_plan(runner *r, int64_t parent, parent_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->steps = NAN;
    sqlite3_stmt *st = store_stmt(r->st, "SELECT m.event, m.line FROM metric_points m JOIN "
                                         "attempts a ON a.id = m.attempt_id WHERE a.run_id = "
                                         "?1 AND m.event IN (3, 5) ORDER BY m.rowid");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, parent);
    int src;
    st_status rc = ST_OK;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW)
        if (!note_record(p, sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1)))
            rc = ST_ENOMEM;
    if (!rc && src != SQLITE_DONE)
        rc = store_fail(r->st, src, "reading a parent's checkpoints");
    sqlite3_reset(st);
    if (p->n_ck)
        qsort(p->ck, p->n_ck, sizeof(int64_t), cmp_i64);
    return rc;
}

/* The latest checkpoint at or before `step` (0: none). */
static int64_t checkpoint_before(const parent_plan *p, double step)
{
    int64_t best = 0;
    for (size_t i = 0; i < p->n_ck && (double)p->ck[i] <= step; i++)
        best = p->ck[i];
    return best;
}

static st_status insert_branch(runner *r, int64_t parent, const double *x_all, int64_t step,
                               int64_t decay, double planned)
{
    sqlite3_stmt *st = store_stmt(r->st, "INSERT INTO runs(sweep_id, status, x, created, "
                                         "generation, predicted_cost, parent_run, branch_step, "
                                         "decay_steps) VALUES(?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, r->sweep);
    sqlite3_bind_blob(st, 2, x_all, (int)(r->cfg->n_params * sizeof(double)), SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, runner_now());
    sqlite3_bind_int64(st, 4, r->generation);
    if (isfinite(planned))
        sqlite3_bind_double(st, 5, planned);
    sqlite3_bind_int64(st, 6, parent);
    sqlite3_bind_int64(st, 7, step);
    sqlite3_bind_int64(st, 8, decay);
    st_status rc = store_exec_stmt(r->st, st, "recording a cooldown branch");
    if (rc)
        return rc;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "cooldown branch of run %lld: from its checkpoint at step %lld, %lld decay steps",
             (long long)parent, (long long)step, (long long)decay);
    return store_event(r->st, r->sweep, sqlite3_last_insert_rowid(r->st->db), 0, "branch", msg);
}

/* Whether run `parent` has branches already (a controller that died after making them). */
static st_status has_branches(runner *r, int64_t parent, int *yes)
{
    sqlite3_stmt *st = store_stmt(r->st, "SELECT count(*) FROM runs WHERE parent_run = ?1");
    if (!st)
        return ST_EDB;
    sqlite3_bind_int64(st, 1, parent);
    int src = sqlite3_step(st);
    *yes = src == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
    sqlite3_reset(st);
    return src == SQLITE_ROW ? ST_OK : store_fail(r->st, src, "reading branches");
}

st_status ctl_branches_spawn(runner *r, int64_t parent, const double *x_all, double parent_cost,
                             size_t *n_new, double *planned)
{
    *n_new = 0;
    *planned = 0;
    const runner_config *cfg = r->cfg;
    if (!cfg->n_br_at)
        return ST_OK;
    int done = 0;
    parent_plan p;
    st_status rc = has_branches(r, parent, &done);
    if (rc || done)
        return rc;
    if ((rc = read_plan(r, parent, &p)))
        goto out;
    double d = cfg->br_decay, S = p.steps;
    int64_t made[16]; /* branches.at has at most 16 fractions (config_branches.c) */
    size_t n_made = 0;
    for (size_t i = 0; i < cfg->n_br_at && S >= 2 && n_made < 16; i++) {
        int64_t s = checkpoint_before(&p, floor((1 - d) * cfg->br_at[i] * S));
        int64_t k = (int64_t)llround((double)s * d / (1 - d));
        if (k < 1)
            k = 1;
        int dup = 0;
        for (size_t j = 0; j < n_made; j++)
            dup |= made[j] == s;
        if (s < 1 || dup || (double)(s + k) >= S)
            continue; /* no checkpoint early enough, the same one again, or not shorter */
        double cost = parent_cost * (double)k / S;
        if ((rc = insert_branch(r, parent, x_all, s, k, cost)))
            goto out;
        made[n_made++] = s;
        *planned += isfinite(cost) ? cost : 0;
    }
    *n_new = n_made;
out:
    free(p.ck);
    return rc;
}

void ctl_branches_made(runner *r, int64_t parent, size_t n_new, double planned)
{
    if (!n_new)
        return;
    r->n_status[RUNNER_RUN_PENDING] += n_new;
    r->n_branch_status[RUNNER_RUN_PENDING] += n_new;
    if (r->det)
        r->rel_spent += planned; /* deterministic: the planned cost, known when released */
    ctl_progress(r, "run %lld: %zu cooldown branch%s queued", (long long)parent, n_new,
                 n_new == 1 ? "" : "es");
}
