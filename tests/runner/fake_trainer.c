/*
 * fake_trainer.c — a stand-in trainer for the runner's tests, told by its arguments how to end:
 * succeed with a given loss and cost, crash, hang, diverge, run out of memory, print garbage,
 * stop half-way, run slowly, or pick one of those at random (chaos mode). It speaks the metrics
 * protocol on stdout or in $SCALETUNE_METRICS_FILE. Test helper, not library code: it prints.
 *
 *   fake_trainer [--mode M] [--loss L | --x V ...] [--cost C | --cost-pow2 V] [--steps N]
 *                [--sleep-ms MS] [--sleep-rand-ms MS]
 *                [--metrics-file] [--child] [--chaos crash,hang,diverge --chaos-key KEY]
 *   M: ok crash signal hang diverge divergeexit oom garbage nofinal nocost halfway exit:N
 *      badutf8 oddcost (odd ignored fields in a valid final) strobjective negcost (invalid)
 *   --x V (repeatable): loss = 1 + sum (V - 0.5)^2 ; cost defaults to 1 + steps
 *   --child: also forks a grandchild that sleeps (its pid in $FAKE_CHILD_PIDS, appended)
 *   --sleep-rand-ms MS: each step also sleeps a uniform [0, MS] ms drawn from this process's
 *   own random source (pid and clock): finish orders differ from one sweep to the next
 *   $FAKE_LAUNCH_LOG: "run attempt pid" appended at start (O_APPEND)
 *   --eval-every K: a config record {"event":"config","steps":N} first, then an eval record
 *   after every K-th step with val_loss = loss + 1/step (early stopping's curves)
 *   --bad-runs LIST: runs ($SCALETUNE_RUN_ID in the comma list) whose loss is 5 higher
 *   --spike-runs LIST --spikes STEPS: for those runs, val_loss 5 higher at the listed steps only
 *   --add-if A B V: loss += V when the strings A and B are equal (a categorical's effect:
 *   "--add-if", "{optimizer}", "lion", "0.5")
 *   --memory V: the final record reports {"constraints": {"memory_gb": 40 V}}
 *   --checkpoint PATH: after each step, the step in PATH (atomically) and a checkpoint record;
 *   --resume PATH (may be ""): start after the step PATH holds; every step record then carries
 *   "tokens_per_s" (1000 tokens over the step's wall time)
 *   --slow-attempt N --slow-from S --slow-factor F: in attempt N ($SCALETUNE_ATTEMPT), steps from
 *   S on sleep F x --sleep-ms (a straggling node)
 *   --slow-node NAME: the same in every attempt while $SCALETUNE_NODE is NAME (a slow node)
 *   {step} in the --checkpoint PATH: one file per step (the reference trainer's convention)
 *   --branch-from PATH --decay-steps K [--parent-run ID]: a cooldown branch: the K steps after
 *   the step PATH holds (exit 1 without it), val_loss = loss + 1/(s + K) at the end, cost
 *   (flops) its K steps' share of --cost only, and the branch fields in its final record
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static FILE *out;

static void msleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, strlen(line)) < 0)
        perror("write");
    close(fd);
}

/* A double as Python's json.dumps writes it (NaN, Infinity, -Infinity). */
static const char *pyjson(double v, char *buf, size_t cap)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "Infinity" : "-Infinity";
    snprintf(buf, cap, "%.17g", v);
    return buf;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    /* splitmix64's finaliser: FNV's high bits barely move when only the last byte changes */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

/* A uniform [0, 1) from a source seeded by this process's pid and the clock (not the run). */
static double rand_unit(void)
{
    static uint64_t s;
    if (!s) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char key[96];
        snprintf(key, sizeof(key), "%ld-%ld-%ld", (long)getpid(), (long)ts.tv_sec,
                 (long)ts.tv_nsec);
        s = fnv1a(key) | 1;
    }
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (double)(s >> 11) / 9007199254740992.0;
}

/* Whether `item` is one of the comma-separated `list` (both may be NULL). */
static int in_list(const char *list, const char *item)
{
    if (!list || !item)
        return 0;
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, item, n))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* The step a checkpoint file holds (0: none, or no file). */
static int read_step(const char *path)
{
    int step = 0;
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (f && fscanf(f, "%d", &step) != 1)
        step = 0;
    if (f)
        fclose(f);
    return step;
}

static void write_step(const char *pattern, int step)
{
    char path[4200], tmp[4300];
    const char *at = strstr(pattern, "{step}");
    if (at)
        snprintf(path, sizeof(path), "%.*s%d%s", (int)(at - pattern), pattern, step, at + 6);
    else
        snprintf(path, sizeof(path), "%s", pattern);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%d\n", step);
    fclose(f);
    if (rename(tmp, path) == 0)
        fprintf(out, "{\"event\": \"checkpoint\", \"step\": %d}\n", step);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A cooldown branch off the checkpoint at `from` (its step s): K steps, the final at s + K. */
static int run_branch(const char *from, int k, const char *parent_run, int steps, double loss,
                      double cost)
{
    int s = read_step(from);
    if (s <= 0 || k <= 0) {
        fprintf(stderr, "fake_trainer: no checkpoint at '%s' (or no --decay-steps)\n", from);
        return 1;
    }
    char lb[64], pr[96] = "";
    for (int j = 1; j <= k; j++)
        fprintf(out, "{\"event\": \"step\", \"step\": %d, \"loss\": %s, \"flops\": %.17g}\n", s + j,
                pyjson(loss + 1.0 / (s + j), lb, sizeof(lb)), cost * j / steps);
    if (parent_run)
        snprintf(pr, sizeof(pr), ", \"parent_run\": %s", parent_run);
    fprintf(out,
            "{\"event\": \"final\", \"val_loss\": %s, \"flops\": %.17g, \"params\": 1000, "
            "\"tokens\": %.17g, \"branch\": 1, \"parent_step\": %d, \"branch_steps\": %d%s}\n",
            pyjson(loss + 1.0 / (s + k), lb, sizeof(lb)), cost * k / steps,
            20000.0 * (s + k) / steps, s, k, pr);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = "ok";
    double loss = NAN, cost = NAN, xsum = 0, add = 0, memory = NAN;
    int steps = 3, have_x = 0, have_loss = 0, child = 0, use_file = 0;
    long sleep_ms = 0, sleep_rand_ms = 0;
    double p_crash = 0, p_hang = 0, p_div = 0;
    const char *chaos_key = NULL;
    int eval_every = 0;
    const char *bad_runs = NULL, *spike_runs = NULL, *spikes = NULL;
    const char *ckpt = NULL, *resume = NULL, *slow_node = NULL;
    int slow_attempt = 0, slow_from = 0, decay_steps = 0;
    double slow_factor = 1;
    const char *branch_from = NULL, *parent_run = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mode") && v)
            mode = v, i++;
        else if (!strcmp(a, "--loss") && v)
            loss = strtod(v, NULL), have_loss = 1, i++;
        else if (!strcmp(a, "--x") && v)
            xsum += (atof(v) - 0.5) * (atof(v) - 0.5), have_x = 1, i++;
        else if (!strcmp(a, "--cost") && v)
            cost = atof(v), i++;
        else if (!strcmp(a, "--cost-pow2") && v) /* a cost that grows with a parameter */
            cost = pow(2.0, atof(v)), i++;
        else if (!strcmp(a, "--steps") && v)
            steps = atoi(v), i++;
        else if (!strcmp(a, "--sleep-ms") && v)
            sleep_ms = atol(v), i++;
        else if (!strcmp(a, "--sleep-rand-ms") && v)
            sleep_rand_ms = atol(v), i++;
        else if (!strcmp(a, "--metrics-file"))
            use_file = 1;
        else if (!strcmp(a, "--child"))
            child = 1;
        else if (!strcmp(a, "--chaos") && v) {
            if (sscanf(v, "%lf,%lf,%lf", &p_crash, &p_hang, &p_div) != 3)
                return 2;
            i++;
        } else if (!strcmp(a, "--chaos-key") && v)
            chaos_key = v, i++;
        else if (!strcmp(a, "--eval-every") && v)
            eval_every = atoi(v), i++;
        else if (!strcmp(a, "--bad-runs") && v)
            bad_runs = v, i++;
        else if (!strcmp(a, "--spike-runs") && v)
            spike_runs = v, i++;
        else if (!strcmp(a, "--spikes") && v)
            spikes = v, i++;
        else if (!strcmp(a, "--memory") && v)
            memory = 40 * atof(v), i++;
        else if (!strcmp(a, "--add-if") && i + 3 < argc) {
            add += strcmp(argv[i + 1], argv[i + 2]) ? 0.0 : atof(argv[i + 3]);
            i += 3;
        } else if (!strcmp(a, "--checkpoint") && v)
            ckpt = v, i++;
        else if (!strcmp(a, "--resume") && v)
            resume = v, i++;
        else if (!strcmp(a, "--slow-attempt") && v)
            slow_attempt = atoi(v), i++;
        else if (!strcmp(a, "--slow-from") && v)
            slow_from = atoi(v), i++;
        else if (!strcmp(a, "--slow-factor") && v)
            slow_factor = atof(v), i++;
        else if (!strcmp(a, "--slow-node") && v)
            slow_node = v, i++;
        else if (!strcmp(a, "--branch-from") && v)
            branch_from = v, i++;
        else if (!strcmp(a, "--decay-steps") && v)
            decay_steps = atoi(v), i++;
        else if (!strcmp(a, "--parent-run") && v)
            parent_run = v, i++;
        else {
            fprintf(stderr, "fake_trainer: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (!have_loss)
        loss = have_x ? 1 + xsum : 2.0;
    loss += add;
    if (isnan(cost))
        cost = 1 + steps;
    const char *run_id = getenv("SCALETUNE_RUN_ID");
    if (in_list(bad_runs, run_id))
        loss += 5;
    int spiky = in_list(spike_runs, run_id);

    const char *log = getenv("FAKE_LAUNCH_LOG");
    if (log) {
        char line[128];
        snprintf(line, sizeof(line), "%s %s %ld\n", getenv("SCALETUNE_RUN_ID") ?: "?",
                 getenv("SCALETUNE_ATTEMPT") ?: "?", (long)getpid());
        append_line(log, line);
    }
    if (chaos_key) {
        double u = (double)(fnv1a(chaos_key) >> 11) / 9007199254740992.0;
        if (u < p_crash)
            mode = "crash";
        else if (u < p_crash + p_hang)
            mode = "hang";
        else if (u < p_crash + p_hang + p_div)
            mode = "diverge";
    }
    out = stdout;
    if (use_file) {
        const char *mf = getenv("SCALETUNE_METRICS_FILE");
        out = mf ? fopen(mf, "a") : NULL;
        if (!out)
            return 2;
        printf("metrics go to %s\n", mf);
    }
    setvbuf(out, NULL, _IOLBF, 0);
    if (child) {
        pid_t p = fork();
        if (p == 0) {
            for (;;)
                pause();
        }
        const char *cp = getenv("FAKE_CHILD_PIDS");
        if (cp) {
            char line[32];
            snprintf(line, sizeof(line), "%ld\n", (long)p);
            append_line(cp, line);
        }
    }

    if (!strcmp(mode, "oom"))
        return 4;
    if (!strncmp(mode, "exit:", 5)) {
        fprintf(stderr, "fake_trainer: exit %d as asked\n", atoi(mode + 5));
        return atoi(mode + 5);
    }
    if (branch_from)
        return run_branch(branch_from, decay_steps, parent_run, steps, loss, cost);
    int last = steps;
    if (eval_every > 0)
        fprintf(out, "{\"event\": \"config\", \"steps\": %d}\n", steps);
    if (!strcmp(mode, "halfway") || !strcmp(mode, "crash") || !strcmp(mode, "signal"))
        last = steps / 2;
    const char *att = getenv("SCALETUNE_ATTEMPT");
    const char *node = getenv("SCALETUNE_NODE");
    int slow_here = (slow_attempt > 0 && att && atoi(att) == slow_attempt) ||
                    (slow_node && node && !strcmp(node, slow_node));
    double t_step = now_s();
    for (int s = read_step(resume) + 1; s <= last; s++) {
        if (!strcmp(mode, "garbage"))
            fprintf(out, "epoch %d: loss looks fine {not json\n", s);
        char lb[64], tps[64] = "";
        if (ckpt || resume) {
            double t = now_s();
            snprintf(tps, sizeof(tps), ", \"tokens_per_s\": %.6g", 1000 / fmax(t - t_step, 1e-6));
            t_step = t;
        }
        fprintf(out, "{\"event\": \"step\", \"step\": %d, \"loss\": %s, \"flops\": %.17g%s}\n", s,
                pyjson(loss + 1.0 / s, lb, sizeof(lb)), cost * s / steps, tps);
        if (ckpt)
            write_step(ckpt, s);
        if (eval_every > 0 && s % eval_every == 0 && s < last) {
            char sb[16];
            snprintf(sb, sizeof(sb), "%d", s);
            double v = loss + 1.0 / s + (spiky && in_list(spikes, sb) ? 5 : 0);
            fprintf(out, "{\"event\": \"eval\", \"step\": %d, \"val_loss\": %s}\n", s,
                    pyjson(v, lb, sizeof(lb)));
        }
        if (!strcmp(mode, "hang")) {
            for (;;)
                pause();
        }
        if (sleep_ms)
            msleep(slow_here && s + 1 >= slow_from ? (long)(slow_factor * (double)sleep_ms)
                                                   : sleep_ms);
        if (sleep_rand_ms > 0)
            msleep((long)(rand_unit() * (double)sleep_rand_ms));
    }
    if (!strcmp(mode, "crash"))
        return 1;
    if (!strcmp(mode, "signal"))
        abort();
    if (!strcmp(mode, "halfway"))
        raise(SIGKILL);
    if (!strcmp(mode, "diverge") || !strcmp(mode, "divergeexit")) {
        fprintf(out, "{\"event\": \"diverged\", \"step\": %d, \"reason\": \"loss is NaN\"}\n",
                last);
        return !strcmp(mode, "divergeexit") ? 3 : 0;
    }
    if (!strcmp(mode, "nofinal"))
        return 0;
    char lb[64];
    /* final records with something odd in them (issue 21) */
    if (!strcmp(mode, "badutf8")) /* not UTF-8 in a field nobody reads: valid */
        fprintf(out,
                "{\"event\": \"final\", \"note\": \"caf\xe9 \xff\xfe\", \"val_loss\": %s, "
                "\"flops\": %.17g}\n",
                pyjson(loss, lb, sizeof(lb)), cost);
    else if (!strcmp(mode, "oddcost")) /* NaN and negative in fields nobody reads: valid */
        fprintf(out,
                "{\"event\": \"final\", \"cost\": NaN, \"tokens\": -5, \"val_loss\": %s, "
                "\"flops\": %.17g}\n",
                pyjson(loss, lb, sizeof(lb)), cost);
    else if (!strcmp(mode, "strobjective")) /* the objective is there, as a string */
        fprintf(out, "{\"event\": \"final\", \"val_loss\": \"low\", \"flops\": %.17g}\n", cost);
    else if (!strcmp(mode, "nocost")) /* the objective, without the sweep's cost metric */
        fprintf(out, "{\"event\": \"final\", \"val_loss\": %s}\n", pyjson(loss, lb, sizeof(lb)));
    else if (!strcmp(mode, "negcost")) /* the reported cost is there, negative */
        fprintf(out, "{\"event\": \"final\", \"val_loss\": %s, \"flops\": -1}\n",
                pyjson(loss, lb, sizeof(lb)));
    if (!strncmp(mode, "badutf8", 7) || !strcmp(mode, "oddcost") || !strcmp(mode, "strobjective") ||
        !strcmp(mode, "negcost") || !strcmp(mode, "nocost"))
        return 0;
    fprintf(out, "{\"event\": \"eval\", \"step\": %d, \"val_loss\": %s}\n", last,
            pyjson(loss, lb, sizeof(lb)));
    char con[64] = "";
    if (!isnan(memory))
        snprintf(con, sizeof(con), ", \"constraints\": {\"memory_gb\": %.17g}", memory);
    fprintf(out,
            "{\"event\": \"final\", \"val_loss\": %s, \"flops\": %.17g, \"params\": 1000, "
            "\"tokens\": 20000%s}\n",
            pyjson(loss, lb, sizeof(lb)), cost, con);
    return 0;
}
