/*
 * test_runner_largerun.c — the large run, guarded (runner/largerun.h, docs/large-run.md):
 *  - restarts: the reference trainer (build/scaletune-train, CPU, one thread) killed 10 times at
 *    seeded random moments finishes with every step's loss and the final losses equal, as
 *    printed (%.9g of a float: the float itself), to an uninterrupted run's; each attempt resumed
 *    from the last checkpoint; restarts and lost steps as counted from the attempts' logs;
 *  - a diverged large run is not restarted;
 *  - alerts on constructed runs (a command that prints a prepared metrics file): NaN, a spike, a
 *    straggler window, the curve and the final loss outside / inside the predicted interval,
 *    each raised at the step the construction says and stored once;
 *  - the curve's law: a schedule stated in a config record is rebuilt as the reference trainer
 *    runs it; on a run whose eval curve follows the law of Tissue et al. 2024 under a cosine
 *    decay, the power law in steps misjudges the final loss (it cannot see the decay's drop)
 *    while the law under the schedule predicts it within its interval; the watch uses that law
 *    when the config record states the schedule, names the law in its alert, raises it for the
 *    same run shifted up, not for the run itself;
 *  - restart on straggler: the fake trainer slowed on its first attempt is reported within the
 *    window, restarted (failure node) and resumed from its checkpoint.
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fit/curve.h"
#include "runner/largerun.h"
#include "runner_test_util.h"

static char train_prog[4200];

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n)
        n = 0;
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

/* The text after `"key":` in line (up to , or }) into out; 0 if absent. */
static int field(const char *line, const char *key, char *out, size_t cap)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k);
    if (!p)
        return 0;
    p += strlen(k);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, ",}");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return 1;
}

/* The step lines of a trainer's output: loss text per step (steps 1..cap-1), and the final
 * line. Returns the highest step. */
typedef struct trace {
    char loss[512][24];
    int first, last, n_lines, last_ckpt;
    char final[1024];
} trace;

static void read_trace(const char *text, trace *t)
{
    memset(t, 0, sizeof(*t));
    t->first = t->last = t->last_ckpt = -1;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[1024], v[64];
        snprintf(line, sizeof(line), "%.*s", (int)(len < 1023 ? len : 1023), l);
        if (strstr(line, "\"event\":\"step\"") && field(line, "step", v, sizeof(v))) {
            int s = atoi(v);
            if (s > 0 && s < 512 && field(line, "loss", t->loss[s], sizeof(t->loss[s]))) {
                if (t->first < 0)
                    t->first = s;
                t->last = s;
                t->n_lines++;
            }
        } else if (strstr(line, "\"event\":\"checkpoint\"") && field(line, "step", v, sizeof(v)))
            t->last_ckpt = atoi(v);
        else if (strstr(line, "\"event\":\"final\""))
            snprintf(t->final, sizeof(t->final), "%s", line);
        l = e ? e + 1 : NULL;
    }
}

static const char *tflags =
    "'--d-model', 64, '--n-layer', 2, '--seq-len', 64, '--batch', 8, '--tokens', 6e4, "
    "'--eval-every', 25, '--threads', 1, '--seed', 7";

/* The uninterrupted run, straight from the trainer. */
static int reference(const char *data, trace *t)
{
    char cmd[16384], out[4200];
    snprintf(out, sizeof(out), "%s", tu_path("ref.jsonl"));
    snprintf(cmd, sizeof(cmd),
             "'%s' --d-model 64 --n-layer 2 --seq-len 64 --batch 8 --tokens 6e4 --eval-every 25 "
             "--threads 1 --seed 7 --data '%s' --val-data '' > '%s' 2>/dev/null",
             train_prog, data, out);
    if (system(cmd) != 0)
        return -1;
    char *text = slurp(out);
    read_trace(text, t);
    free(text);
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double unit(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The trainer's pid of attempt n when it has started and not ended; 0 otherwise. */
static long live_trainer(const char *log, int n)
{
    char p[4400];
    snprintf(p, sizeof(p), "%s/big/run-1/attempt-%d/exit", log, n);
    if (access(p, F_OK) == 0)
        return -1; /* ended */
    snprintf(p, sizeof(p), "%s/big/run-1/attempt-%d/pid", log, n);
    char *t = slurp(p);
    long sup = 0, tr = 0;
    if (t && sscanf(t, "%ld %ld", &sup, &tr) != 2)
        tr = 0;
    free(t);
    return tr;
}

static void write_text(const char *path)
{
    FILE *t = fopen(path, "w");
    for (int i = 0; t && i < 3000; i++)
        fprintf(t, "And it came to pass in those days, that %d went out unto the %s.\n", i % 97,
                i % 3 ? "city" : "field");
    if (t)
        fclose(t);
}

/* Step records attempt n has written so far (its metrics file or its stdout, whichever has
 * more). */
static int attempt_steps(const char *log, int n)
{
    int most = 0;
    static const char *const files[] = {"metrics.jsonl", "stdout.log"};
    for (int f = 0; f < 2; f++) {
        char p[4400];
        snprintf(p, sizeof(p), "%s/big/run-1/attempt-%d/%s", log, n, files[f]);
        char *t = slurp(p);
        int c = 0;
        for (const char *q = t; q && (q = strstr(q, "\"event\": \"step\"")); q++)
            c++;
        for (const char *q = t; q && (q = strstr(q, "\"event\":\"step\"")); q++)
            c++;
        free(t);
        most = c > most ? c : most;
    }
    return most;
}

/* Steps the controller to its end, killing the trainer of attempts 1..n_kill once each after a
 * seeded random 1-6 of its step records (so at most about one checkpoint of progress per
 * attempt: all n_kill kills land before the run can finish, however fast the machine is).
 * Returns the kills made. */
static int run_killing(runner *r, const char *log, int n_kill)
{
    int kills = 0, done = 0, kill_after = 0;
    while (!done) {
        if (runner_step(r, &done)) {
            fprintf(stderr, "step: %s\n", runner_errmsg(r));
            break;
        }
        long pid = kills < n_kill ? live_trainer(log, kills + 1) : 0;
        if (pid > 0 && !kill_after)
            kill_after = 1 + (int)(6 * unit());
        if (pid > 0 && attempt_steps(log, kills + 1) >= kill_after) {
            kill((pid_t)pid, SIGKILL);
            kills++;
            kill_after = 0;
        }
        sleep_s(0.002);
    }
    return kills;
}

static void test_restarts(const char *data, const trace *ref)
{
    char log[4200], db[4200], text[16384];
    snprintf(log, sizeof(log), "%s", tu_path("runs"));
    snprintf(db, sizeof(db), "%s", tu_path("restarts.db"));
    trace *t = calloc(1, sizeof(trace));
    snprintf(text, sizeof(text),
             "name: big\n"
             "command: ['%s', %s, '--data', '%s', '--val-data', '', '--checkpoint', "
             "'{_checkpoint}', '--checkpoint-every', 5, '--resume', '{_resume}', '--lr', '{lr}']\n"
             "objective: {metric: val_loss}\n"
             "cost: {metric: flops}\n"
             "parameters:\n  lr: {value: 1e-3}\n"
             "budget: {runs: 1}\n"
             "retries: {infrastructure: 15, backoff_seconds: 0.01, backoff_max_seconds: 0.05}\n",
             train_prog, tflags, data);
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "big", &cfg, em), ST_OK);
    runner_options o = runner_options_default();
    o.db_path = db;
    o.log_dir = log;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    CHECK_ST(runner_launch(cfg, &o, &r, em), ST_OK);
    int kills = r ? run_killing(r, log, 10) : 0;
    CHECK(r && runner_finished(r));
    runner_destroy(r);
    runner_config_destroy(cfg);
    CHECK(kills == 10);

    /* every attempt: the uninterrupted run's losses, resumed from the last checkpoint */
    int resume_point = 0, n_att = 0;
    long step_lines = 0;
    for (int k = 1; k <= kills + 1; k++) {
        char p[4400];
        snprintf(p, sizeof(p), "%s/big/run-1/attempt-%d/metrics.jsonl", log, k);
        char *out = slurp(p);
        if (!out)
            break;
        n_att++;
        read_trace(out, t);
        free(out);
        int same = 1;
        for (int s = t->first; s > 0 && s <= t->last; s++)
            same &= !strcmp(t->loss[s], ref->loss[s]);
        CHECK(same);
        /* a kill between a checkpoint's rename and its record: one checkpoint later */
        CHECK(t->first < 0 || t->first - 1 == resume_point || t->first - 1 == resume_point + 5);
        if (t->first > 0)
            resume_point = t->first - 1;
        if (t->last_ckpt > resume_point)
            resume_point = t->last_ckpt;
        step_lines += t->n_lines;
    }
    CHECK(n_att == kills + 1 && step_lines >= ref->last);
    char want[64], got[64];
    CHECK(field(ref->final, "val_loss", want, sizeof(want)) &&
          field(t->final, "val_loss", got, sizeof(got)) && !strcmp(want, got));
    CHECK(field(ref->final, "loss", want, sizeof(want)) &&
          field(t->final, "loss", got, sizeof(got)) && !strcmp(want, got));
    CHECK(tu_query(db, "SELECT count(*) FROM attempts WHERE signal = 9") == kills);

    runner_store *s = NULL;
    runner_large_summary m;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_large_run(s, "big", &m), ST_OK);
    CHECK(m.status == RUNNER_RUN_SUCCEEDED && m.has_final);
    CHECK(field(ref->final, "val_loss", want, sizeof(want)) &&
          m.final_objective == strtod(want, NULL));
    CHECK(m.n_attempts == (size_t)kills + 1 && m.n_restarts == (size_t)kills);
    /* every step done is kept once or done again: lost = all step records - the run's steps */
    CHECK(m.lost_steps == step_lines - ref->last);
    CHECK(m.last_step == ref->last);
    CHECK(m.lost_seconds > 0 && m.downtime_seconds > 0 && m.lost_work_seconds > 0);
    CHECK_ABS(m.lost_seconds, m.lost_work_seconds + m.downtime_seconds, 1e-9);
    printf("restarts %zu, lost %.3f s (%.3f work, %.3f down), %lld steps done again\n",
           m.n_restarts, m.lost_seconds, m.lost_work_seconds, m.downtime_seconds,
           (long long)m.lost_steps);
    runner_store_close(s);
    free(t);
}

/* A weight bit flipped after step 23 (SCALETUNE_TRAIN_FLIP) in a large run whose trainer
 * replays every 10 steps: the sdc record reaches the store as an alert at step 30, within 10
 * steps of the flip, and the run, rolled back by the trainer, ends with the clean run's losses. */
static void test_sdc(const char *data, const trace *ref)
{
    char db[4200], text[16384], em[ST_ERRMSG_MAX];
    snprintf(db, sizeof(db), "%s", tu_path("sdc.db"));
    snprintf(text, sizeof(text),
             "name: sdc\n"
             "command: ['%s', %s, '--data', '%s', '--val-data', '', '--sdc-every', 10, "
             "'--lr', '{lr}']\n"
             "env: {SCALETUNE_TRAIN_FLIP: '23:100:22'}\n"
             "objective: {metric: val_loss}\ncost: {metric: flops}\n"
             "parameters:\n  lr: {value: 1e-3}\nbudget: {runs: 1}\n",
             train_prog, tflags, data);
    runner_config *cfg = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "sdc", &cfg, em), ST_OK);
    int fin = 0;
    CHECK_ST(tu_sweep(db, cfg, "sdc", &fin), ST_OK);
    runner_config_destroy(cfg);
    runner_watch *w = NULL;
    runner_watch_state ws;
    CHECK_ST(runner_watch_create(db, "sdc", NULL, &w, em), ST_OK);
    CHECK_ST(runner_watch_poll(w, &ws), ST_OK);
    runner_watch_destroy(w);
    runner_store *s = NULL;
    runner_alert a[8];
    size_t n = 0;
    runner_large_summary m;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_alerts(s, "sdc", 8, &n, a), ST_OK);
    CHECK_ST(runner_store_large_run(s, "sdc", &m), ST_OK);
    runner_store_close(s);
    CHECK(n == 1 && !strcmp(a[0].kind, "sdc") && a[0].step == 30 &&
          strstr(a[0].message, "back to step 20"));
    char want[64];
    CHECK(fin && m.status == RUNNER_RUN_SUCCEEDED && m.n_attempts == 1 &&
          field(ref->final, "val_loss", want, sizeof(want)) &&
          m.final_objective == strtod(want, NULL));
}

/* A diverged large run stops at once: a hyperparameter failure is not restarted. */
static void test_diverged_stops(void)
{
    runner_config *cfg = tu_config("div", "'--mode', diverge",
                                   "budget: {runs: 1}\nretries: {infrastructure: 5, "
                                   "backoff_seconds: 0.01}\n");
    char db[4200];
    snprintf(db, sizeof(db), "%s", tu_path("div.db"));
    int fin = 0;
    CHECK_ST(tu_sweep(db, cfg, "div", &fin), ST_OK);
    runner_config_destroy(cfg);
    runner_store *s = NULL;
    runner_large_summary m;
    CHECK_ST(runner_store_open(db, &s, NULL), ST_OK);
    CHECK_ST(runner_store_large_run(s, "div", &m), ST_OK);
    CHECK(fin && m.status == RUNNER_RUN_FAILED && m.failure == RUNNER_FAIL_DIVERGED);
    CHECK(m.n_attempts == 1 && m.n_restarts == 0 && m.lost_seconds == 0);
    runner_store_close(s);
}

/* ---- alerts on constructed runs ---------------------------------------------------------- */

typedef struct construct {
    int spike_at, nan_at;   /* step loss x3 / NaN at that step; 0: none */
    int slow_from, slow_to; /* tokens_per_s 300 instead of ~1000 on [from, to]; 0: none */
    int nan_final;          /* the final val_loss NaN (no diverged record) */
    int tissue;             /* 1: the eval curve of the Tissue law under TS_CONFIG's schedule */
    double shift;           /* tissue: every loss times this (0: 1) */
    int no_schedule;        /* tissue: the config record states only the steps */
} construct;

/* A 200-step run with warmup and a cosine decay to 0.1 of the peak, as the reference trainer
 * states it, and a loss curve that follows the law of Tissue et al. 2024 under it. */
#define TS_STEPS 200
#define TS_CONFIG                                                                                  \
    "{\"event\":\"config\",\"steps\":200,\"schedule\":\"cosine\",\"lr\":0.001,"                    \
    "\"warmup_steps\":10,\"min_lr_ratio\":0.1}"
static const fit_curve_law ts_law = {2.0, 0.3, 0.5, 5.0};

/* The law's loss after s steps of TS_CONFIG's schedule (lr: its TS_STEPS learning rates), with
 * a fixed noise of up to +-0.3% (a hash of s) before the last step. */
static double ts_loss(const double *lr, int s)
{
    double L = NAN;
    fit_curve_predict(&ts_law, lr, TS_STEPS, 0.999, (size_t)s, &L, NULL);
    uint32_t h = (uint32_t)s * 2654435761u;
    h ^= h >> 15;
    return s < TS_STEPS ? L * (1 + 0.003 * ((double)(h % 2001) / 1000.0 - 1)) : L;
}

static void ts_schedule(double *lr)
{
    runner_schedule sc;
    runner_schedule_parse(TS_CONFIG, &sc);
    runner_schedule_lr(&sc, TS_STEPS, lr);
}

/* L(s) = 2 + 3/sqrt(s): the step and eval losses of a constructed 100-step run */
static double curve_L(int s)
{
    return 2 + 3 / sqrt((double)s);
}

static void write_construct(const char *path, const construct *c)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    if (c->tissue) {
        double lr[TS_STEPS], k = c->shift > 0 ? c->shift : 1;
        ts_schedule(lr);
        fprintf(f, "%s\n", c->no_schedule ? "{\"event\":\"config\",\"steps\":200}" : TS_CONFIG);
        for (int s = 1; s <= TS_STEPS; s++) {
            fprintf(f, "{\"event\":\"step\",\"step\":%d,\"loss\":%.17g}\n", s, k * ts_loss(lr, s));
            if (s % 10 == 0)
                fprintf(f, "{\"event\":\"eval\",\"step\":%d,\"val_loss\":%.17g}\n", s,
                        k * ts_loss(lr, s));
        }
        fprintf(f, "{\"event\":\"final\",\"val_loss\":%.17g,\"flops\":1e9}\n",
                k * ts_loss(lr, TS_STEPS));
        fclose(f);
        return;
    }
    fprintf(f, "{\"event\":\"config\",\"steps\":100}\n");
    for (int s = 1; s <= 100; s++) {
        double loss = curve_L(s) * (s == c->spike_at ? 3 : 1);
        double tps = s >= c->slow_from && s <= c->slow_to ? 300 : 1000 + s % 3;
        if (s == c->nan_at)
            fprintf(f, "{\"event\":\"step\",\"step\":%d,\"loss\":NaN,\"tokens_per_s\":%g}\n", s,
                    tps);
        else
            fprintf(f, "{\"event\":\"step\",\"step\":%d,\"loss\":%.17g,\"tokens_per_s\":%g}\n", s,
                    loss, tps);
        if (s % 10 == 0)
            fprintf(f, "{\"event\":\"eval\",\"step\":%d,\"val_loss\":%.17g}\n", s, curve_L(s));
    }
    if (c->nan_final)
        fprintf(f, "{\"event\":\"final\",\"val_loss\":NaN,\"flops\":1e9}\n");
    else
        fprintf(f, "{\"event\":\"final\",\"val_loss\":%.17g,\"flops\":1e9}\n", curve_L(100));
    fclose(f);
}

/* Runs the constructed run as sweep `name` (a command that prints it) and watches it with the
 * interval [lo, hi] (NAN: none); the alerts into out (cap 16), their count returned. */
static size_t watch_construct(const char *name, const construct *c, double lo, double hi,
                              runner_alert *out)
{
    char file[4200], db[4200], text[8192], em[ST_ERRMSG_MAX];
    snprintf(file, sizeof(file), "%s/%s.jsonl", tu_dir, name);
    snprintf(db, sizeof(db), "%s", tu_path("alerts.db"));
    write_construct(file, c);
    snprintf(text, sizeof(text),
             "name: %s\ncommand: ['/bin/cat', '%s']\nobjective: {metric: val_loss}\n"
             "cost: {metric: flops}\nparameters:\n  p: {value: 1}\nbudget: {runs: 1}\n",
             name, file);
    runner_config *cfg = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), name, &cfg, em), ST_OK);
    int fin = 0;
    CHECK_ST(tu_sweep(db, cfg, name, &fin), ST_OK);
    runner_config_destroy(cfg);
    runner_watch_options o = runner_watch_options_default();
    o.expect_lo = lo;
    o.expect_hi = hi;
    o.expect = 0.5 * (lo + hi);
    runner_watch_state ws[2];
    size_t n = 0;
    /* twice, as after a restart of the watch: the same alerts are not stored again */
    for (int k = 0; k < 2; k++) {
        runner_watch *w = NULL;
        CHECK_ST(runner_watch_create(db, name, &o, &w, em), ST_OK);
        CHECK_ST(runner_watch_poll(w, &ws[k]), ST_OK);
        runner_watch_destroy(w);
    }
    CHECK(ws[1].n_new == 0 && ws[0].attempt == 1 && ws[0].run > 0);
    size_t n_new = ws[0].n_new;
    runner_store *s = NULL;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_alerts(s, name, 16, &n, out), ST_OK);
    runner_store_close(s);
    CHECK(n == n_new);
    return n;
}

static void test_alerts(void)
{
    runner_alert a[16];
    construct clean = {0, 0, 0, 0, 0, 0, 0, 0};
    /* the curve inside its interval, no spike, steady throughput: nothing */
    CHECK(watch_construct("inside", &clean, 2.25, 2.35, a) == 0);
    /* the same run against an interval it misses: the curve's extrapolation (from 30% of
     * the steps on, 4 evals needed: step 40), then the final loss */
    size_t n = watch_construct("outside", &clean, 3.0, 3.1, a);
    CHECK(n == 2);
    CHECK(n == 2 && !strcmp(a[0].kind, "curve_outside") && a[0].step == 40);
    CHECK(n == 2 && !strcmp(a[1].kind, "final_outside") && a[1].step == -1 && a[1].run == a[0].run);
    /* a spike at 60, NaN at 80: exactly those */
    construct bad = {60, 80, 0, 0, 0, 0, 0, 0};
    n = watch_construct("spiky", &bad, NAN, NAN, a);
    CHECK(n == 2);
    CHECK(n == 2 && !strcmp(a[0].kind, "spike") && a[0].step == 60);
    CHECK(n == 2 && !strcmp(a[1].kind, "nan") && a[1].step == 80);
    /* throughput at 30% for steps 41-50: reported at the window's 5th slow step, once */
    construct slow = {0, 0, 41, 50, 0, 0, 0, 0};
    n = watch_construct("slow", &slow, NAN, NAN, a);
    CHECK(n == 1);
    CHECK(n == 1 && !strcmp(a[0].kind, "straggler") && a[0].step == 45);
    /* a NaN final objective, after a NaN step loss at 80: a nan alert of its own (no step),
     * with or without an interval (not final_outside) */
    construct nanfin = {0, 80, 0, 0, 1, 0, 0, 0};
    n = watch_construct("nanfinal", &nanfin, NAN, NAN, a);
    CHECK(n == 2);
    CHECK(n == 2 && !strcmp(a[0].kind, "nan") && a[0].step == 80);
    CHECK(n == 2 && !strcmp(a[1].kind, "nan") && a[1].step == -1 && strstr(a[1].message, "final"));
    construct nanonly = {0, 0, 0, 0, 1, 0, 0, 0};
    n = watch_construct("nanfinal2", &nanonly, 2.25, 2.35, a);
    CHECK(n == 1 && !strcmp(a[0].kind, "nan") && a[0].step == -1);
}

/* ---- the curve's law under the run's schedule ---------------------------------------------- */

/* The schedule a config record states, rebuilt, is the one the trainer ran: against the lr of
 * every step record of the reference trainer's output `out` (printed %.9g). */
static void check_trainer_schedule(const char *out, runner_schedule_kind want)
{
    char *text = slurp(out);
    runner_schedule sc = {RUNNER_SCHEDULE_UNKNOWN, 0, 0, 0, 0, 0, 0};
    double *lr = NULL;
    size_t n_cmp = 0;
    int same = 1;
    for (char *l = text; l && *l;) {
        char *e = strchr(l, '\n');
        if (e)
            *e = '\0';
        if (strstr(l, "\"event\":\"config\"")) {
            runner_schedule_parse(l, &sc);
            lr = sc.kind == want ? calloc((size_t)sc.steps, sizeof(double)) : NULL;
            CHECK(lr && runner_schedule_lr(&sc, (size_t)sc.steps, lr) == ST_OK);
        }
        char v[64], st[64];
        if (lr && strstr(l, "\"event\":\"step\"") && field(l, "lr", v, sizeof(v)) &&
            field(l, "step", st, sizeof(st))) {
            long k = strtol(st, NULL, 10);
            double got = strtod(v, NULL);
            same &= k >= 1 && k <= (long)sc.steps && fabs(lr[k - 1] - got) <= 1e-8 * got;
            n_cmp++;
        }
        l = e ? e + 1 : NULL;
    }
    CHECK(sc.kind == want && same && n_cmp >= 50);
    free(lr);
    free(text);
}

/* The reference trainer's schedules, cosine (the restarts' reference run) and WSD with a
 * 1-sqrt decay: rebuilt from its config record as it ran them. */
static void test_trainer_schedules(const char *data)
{
    check_trainer_schedule(tu_path("ref.jsonl"), RUNNER_SCHEDULE_COSINE);
    char cmd[16384], out[4200];
    snprintf(out, sizeof(out), "%s", tu_path("wsd.jsonl"));
    snprintf(cmd, sizeof(cmd),
             "'%s' --d-model 16 --n-layer 1 --seq-len 16 --batch 2 --tokens 2500 --threads 1 "
             "--schedule wsd --decay-frac 0.3 --decay-shape 1-sqrt --warmup 7 --min-lr-ratio 0.05 "
             "--data '%s' --val-data '' > '%s' 2>/dev/null",
             train_prog, data, out);
    CHECK(system(cmd) == 0);
    check_trainer_schedule(out, RUNNER_SCHEDULE_WSD);
}

static void test_schedule_parse(void)
{
    runner_schedule sc;
    double lr[TS_STEPS];
    CHECK_ST(runner_schedule_parse(TS_CONFIG, &sc), ST_OK);
    CHECK(sc.kind == RUNNER_SCHEDULE_COSINE && sc.steps == 200 && sc.warmup_steps == 10);
    CHECK_ST(runner_schedule_lr(&sc, TS_STEPS, lr), ST_OK);
    CHECK(lr[0] == 1e-4 && lr[9] == 1e-3 && fabs(lr[TS_STEPS - 1] - 1e-4) < 1e-15);
    /* no schedule, an unknown one, a WSD without its shape: unknown (the power law) */
    CHECK_ST(runner_schedule_parse("{\"event\":\"config\",\"steps\":150}", &sc), ST_OK);
    CHECK(sc.kind == RUNNER_SCHEDULE_UNKNOWN);
    CHECK_ST(
        runner_schedule_parse("{\"event\":\"config\",\"steps\":150,\"schedule\":\"step\"}", &sc),
        ST_OK);
    CHECK(sc.kind == RUNNER_SCHEDULE_UNKNOWN);
    CHECK_ST(
        runner_schedule_parse("{\"event\":\"config\",\"steps\":150,\"schedule\":\"wsd\"}", &sc),
        ST_OK);
    CHECK(sc.kind == RUNNER_SCHEDULE_UNKNOWN);
    CHECK_ST(runner_schedule_parse("{\"event\":\"step\",\"step\":1}", &sc), ST_EINVAL);
    CHECK_ST(runner_schedule_lr(&sc, 10, lr), ST_EINVAL);
}

/* runner_curve_interval_law on the eval points (step, loss: n) of a run of TS_STEPS steps cut
 * at `upto`, under the schedule lr (NULL: unknown), in a one-run sweep's store; *used: which law
 * gave the interval (1: under the schedule). */
static st_status ts_interval_points(const double *step, const double *loss, size_t n, int upto,
                                    const double *lr, double *pred, double *lo, double *hi,
                                    int *used)
{
    char text[512], em[ST_ERRMSG_MAX];
    snprintf(text, sizeof(text),
             "name: ts\ncommand: ['/bin/true']\nobjective: {metric: val_loss}\n"
             "cost: {metric: flops}\nparameters:\n  p: {value: 1}\nbudget: {runs: 1}\n");
    runner_config *cfg = NULL;
    CHECK_ST(runner_config_load_string(text, strlen(text), "ts", &cfg, em), ST_OK);
    char db[4200];
    static int n_db = 0; /* one store per call: the sweep is launched anew */
    snprintf(db, sizeof(db), "%s/ts%d.db", tu_dir, n_db++);
    int fin = 0;
    CHECK_ST(tu_sweep(db, cfg, "ts", &fin), ST_OK);
    runner_curve c;
    memset(&c, 0, sizeof(c));
    c.run = 1;
    c.n = n;
    c.step = step;
    c.loss = loss;
    c.planned_steps = TS_STEPS;
    c.planned_tokens = c.planned_cost = NAN;
    c.fraction = (double)upto / TS_STEPS;
    c.lr = lr;
    st_status rc = runner_curve_interval_law(cfg, db, &c, pred, lo, hi, used, em);
    if (rc)
        fprintf(stderr, "curve interval: %s\n", em);
    runner_config_destroy(cfg);
    return rc;
}

/* The eval curve up to `upto` of the Tissue run: the law under the schedule (lr) or, without
 * it, the power law; *pred, *lo, *hi at the planned end. */
static st_status ts_interval(int upto, const double *lr, double *pred, double *lo, double *hi)
{
    double step[TS_STEPS / 10], loss[TS_STEPS / 10], sched[TS_STEPS];
    ts_schedule(sched);
    size_t n = 0;
    for (int s = 10; s <= upto; s += 10, n++) {
        step[n] = s;
        loss[n] = ts_loss(sched, s);
    }
    int used = -1;
    st_status rc = ts_interval_points(step, loss, n, upto, lr, pred, lo, hi, &used);
    CHECK(rc || used == (lr != NULL));
    return rc;
}

/* Points that fall in a straight line from 10% to 40% of a cosine run: under the schedule, the
 * law puts the fall in its annealing term and extrapolates to a negative loss; the interval is
 * then the power law's, positive, and says so. */
static void test_curve_runaway(void)
{
    double lr[TS_STEPS], step[TS_STEPS / 10], loss[TS_STEPS / 10];
    ts_schedule(lr);
    size_t n = 0;
    for (int s = 20; s <= 80; s += 5, n++) {
        step[n] = s;
        loss[n] = 3.0 - 2.0 * s / TS_STEPS;
    }
    double pred, lo, hi, ppred, plo, phi;
    int used = -1;
    CHECK_ST(ts_interval_points(step, loss, n, 80, lr, &pred, &lo, &hi, &used), ST_OK);
    CHECK(used == 0 && lo > 0 && lo <= pred && pred <= hi);
    CHECK_ST(ts_interval_points(step, loss, n, 80, NULL, &ppred, &plo, &phi, &used), ST_OK);
    CHECK(used == 0 && ppred == pred && plo == lo && phi == hi);
    /* the law under the schedule alone refuses: not a positive loss */
    fit_curve_options o = fit_curve_options_default();
    fit_curve_interval_options io = fit_curve_interval_options_default();
    io.n_boot = 60;
    size_t ps[TS_STEPS / 10];
    for (size_t k = 0; k < n; k++)
        ps[k] = (size_t)step[k];
    char em[ST_ERRMSG_MAX] = "";
    CHECK_ST(fit_curve_predict_interval(lr, TS_STEPS, ps, loss, n, &o, &io, TS_STEPS, &pred, &lo,
                                        &hi, em),
             ST_ENUMERIC);
    CHECK(strstr(em, "not a positive loss") != NULL);
    printf("runaway: %s; the power law instead: %.4f [%.4f, %.4f]\n", em, ppred, plo, phi);
}

static void test_curve_law(void)
{
    double lr[TS_STEPS], want, pp, plo, phi, tp, tlo, thi;
    ts_schedule(lr);
    want = ts_loss(lr, TS_STEPS);
    /* from 40% of the run: the power law misses the cosine's drop, the law under the schedule
     * does not, and its interval holds the final loss */
    CHECK_ST(ts_interval(80, NULL, &pp, &plo, &phi), ST_OK);
    CHECK_ST(ts_interval(80, lr, &tp, &tlo, &thi), ST_OK);
    printf("final %.5f: power law %.5f [%.5f, %.5f] (%+.1f%%), Tissue %.5f [%.5f, %.5f] "
           "(%+.2f%%)\n",
           want, pp, plo, phi, 100 * (pp / want - 1), tp, tlo, thi, 100 * (tp / want - 1));
    CHECK(fabs(pp / want - 1) > 0.05);
    CHECK(fabs(tp / want - 1) < 0.02 && fabs(tp / want - 1) < fabs(pp / want - 1) / 4);
    CHECK(tlo <= want && want <= thi);

    /* the watch: the run inside a tight prediction raises nothing; shifted up 25%, the curve
     * leaves it at the first judged eval and the alert names the law; without the schedule in
     * its config record, the power law's */
    runner_alert a[16];
    construct run = {0, 0, 0, 0, 0, 1, 1, 0};
    CHECK(watch_construct("ts_in", &run, want * 0.98, want * 1.02, a) == 0);
    construct up = {0, 0, 0, 0, 0, 1, 1.25, 0};
    size_t n = watch_construct("ts_up", &up, want * 0.98, want * 1.02, a);
    if (n)
        printf("first alert at step %lld of %zu alerts\n", (long long)a[0].step, n);
    CHECK(n >= 2 && !strcmp(a[0].kind, "curve_outside") && a[0].step <= 100 &&
          strstr(a[0].message, "Tissue law, schedule cosine"));
    CHECK(n >= 2 && !strcmp(a[n - 1].kind, "final_outside"));
    for (size_t i = 0; i + 1 < n; i++) /* out, back in, out again: each leaving once */
        CHECK(!strcmp(a[i].kind, "curve_outside"));
    if (n)
        printf("%s\n", a[0].message);
    construct up_pl = {0, 0, 0, 0, 0, 1, 1.25, 1};
    n = watch_construct("ts_up_pl", &up_pl, want * 0.98, want * 1.02, a);
    CHECK(n >= 1 && !strcmp(a[0].kind, "curve_outside") &&
          strstr(a[0].message, "power law in steps: schedule unknown"));
}

/* ---- restart on straggler ---------------------------------------------------------------- */

/* The fake trainer slowed 6x from step 30 on its first attempt only (a slow node): the watch
 * reports it within the window and, as `scaletune run --restart-on-straggler` does, the run is
 * restarted (failure node) and resumed from its checkpoint on a "healthy" second attempt. */
static void test_straggler_restart(void)
{
    runner_config *cfg =
        tu_config("strag",
                  "'--steps', 60, '--sleep-ms', 15, '--checkpoint', '{_checkpoint}', '--resume', "
                  "'{_resume}', '--slow-attempt', 1, '--slow-from', 30, '--slow-factor', 6",
                  "budget: {runs: 1}\nretries: {infrastructure: 3, backoff_seconds: 0.01}\n"
                  "timeouts: {kill_grace_seconds: 0.2}\n");
    char db[4200], em[ST_ERRMSG_MAX];
    snprintf(db, sizeof(db), "%s", tu_path("strag.db"));
    runner_options o = runner_options_default();
    o.db_path = db;
    o.poll_seconds = 0.005;
    runner *r = NULL;
    CHECK_ST(runner_launch(cfg, &o, &r, em), ST_OK);
    runner_config_destroy(cfg);
    runner_watch *w = NULL;
    runner_watch_options wo = runner_watch_options_default();
    CHECK_ST(runner_watch_create(db, "strag", &wo, &w, em), ST_OK);
    int done = 0, restarts = 0;
    while (r && w && !done) {
        CHECK_ST(runner_step(r, &done), ST_OK);
        runner_watch_state ws;
        CHECK_ST(runner_watch_poll(w, &ws), ST_OK);
        if (ws.straggling && runner_restart_run(r, ws.run, ws.attempt) == ST_OK)
            restarts++;
        sleep_s(0.005);
    }
    runner_watch_destroy(w);
    runner_destroy(r);
    runner_store *s = NULL;
    runner_large_summary m;
    runner_alert a[4];
    size_t n = 0;
    CHECK_ST(runner_store_open(db, &s, em), ST_OK);
    CHECK_ST(runner_store_large_run(s, "strag", &m), ST_OK);
    CHECK_ST(runner_store_alerts(s, "strag", 4, &n, a), ST_OK);
    runner_store_close(s);
    CHECK(restarts >= 1);
    CHECK(n == 1 && !strcmp(a[0].kind, "straggler") && a[0].step >= 30 && a[0].step <= 34 + 1);
    CHECK(m.status == RUNNER_RUN_SUCCEEDED && m.n_attempts == 2 && m.n_restarts == 1);
    CHECK(tu_query(db, "SELECT failure FROM attempts WHERE number = 1") == RUNNER_FAIL_NODE);
    /* the second attempt resumed where the first had checkpointed: no step done twice beyond
     * the one in flight */
    CHECK(m.lost_steps >= 0 && m.lost_steps <= 2 && m.last_step == 60);
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_init(argv[0]);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s", argv[0]);
    char *cut = strstr(tmp, "tests/runner/test_runner_largerun");
    if (cut)
        strcpy(cut, "scaletune-train");
    char *abs = cut ? realpath(tmp, NULL) : NULL;
    snprintf(train_prog, sizeof(train_prog), "%s", abs ? abs : "/nonexistent");
    free(abs);
    test_diverged_stops();
    test_alerts();
    test_schedule_parse();
    test_curve_law();
    test_curve_runaway();
    test_straggler_restart();
    char data[4200];
    snprintf(data, sizeof(data), "%s", tu_path("text.txt"));
    write_text(data);
    trace *ref = calloc(1, sizeof(trace));
    if (access(train_prog, X_OK)) {
        printf("SKIP largerun.restarts, largerun.sdc: %s is not built (make)\n", train_prog);
    } else {
        CHECK(reference(data, ref) == 0 && ref->last > 100 && ref->final[0]);
        test_trainer_schedules(data);
        test_restarts(data, ref);
        test_sdc(data, ref);
    }
    free(ref);
    tu_cleanup();
    return check_summary("runner.largerun");
}
