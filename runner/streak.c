/*
 * streak.c — a sweep whose trainer cannot work stops early (issue 19): when the last
 * cfg->stop_after_identical attempts (default 5) all failed the same deterministic way — the
 * same non-zero exit status (126 and 127: the command cannot run), exit 0 without a final
 * record, a malformed final record, or no launch at all — retrying and suggesting more only
 * repeats it. The controller stops as on `sweep stop` (running attempts are stopped, the sweep
 * resumes later) and runner_run returns ST_EBACKEND with the failure and the last attempt's
 * stderr tail. Only while no run of the sweep has worked (succeeded, or failed for its
 * hyperparameters): after one has, the command is known to work and failures are retried as
 * usual. Any other kind of failure ends the streak; a stop by the user neither counts nor ends
 * it.
 * Configuration errors (ctl_config_error): exit 126/127 while no run has worked and malformed
 * final records end the run at once, unretried, with the stderr tail in its event.
 */
#include <stdio.h>
#include <string.h>

#include "runner/controller_int.h"

/* The failure kinds a broken command or trainer repeats identically. */
static int deterministic_kind(runner_failure k)
{
    return k == RUNNER_FAIL_EXIT || k == RUNNER_FAIL_NO_FINAL || k == RUNNER_FAIL_BAD_FINAL ||
           k == RUNNER_FAIL_LAUNCH;
}

/* The last `cap - 1` bytes of DIR/stderr.log, one line (newlines as " | "), or "". */
static void stderr_tail(const char *dir, char *out, size_t cap)
{
    out[0] = '\0';
    if (!dir || cap < 2)
        return;
    char path[4200];
    snprintf(path, sizeof(path), "%s/stderr.log", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[240];
    long want = (long)sizeof(buf) - 1;
    if (fseek(f, -want, SEEK_END) != 0)
        rewind(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        if (buf[i] == '\n') {
            memcpy(out + o, " | ", 3);
            o += 3;
        } else if ((unsigned char)buf[i] >= 0x20 || buf[i] == '\t') {
            out[o++] = buf[i];
        }
    }
    out[o] = '\0';
}

static const char *exit_hint(runner_failure kind, int code)
{
    if (kind == RUNNER_FAIL_EXIT && code == 127)
        return " (127: the program was not found)";
    if (kind == RUNNER_FAIL_EXIT && code == 126)
        return " (126: the program cannot be executed)";
    return "";
}

int ctl_config_error(const runner *r, runner_failure kind, int exit_code)
{
    if (kind == RUNNER_FAIL_BAD_FINAL)
        return 1;
    /* 126/127 after a run worked: a node without the program or the directory (Slurm's
     * `cd DIR || exit 127`), an infrastructure failure */
    int worked = r->n_status[RUNNER_RUN_SUCCEEDED] + r->n_status[RUNNER_RUN_FAILED] > 0;
    return kind == RUNNER_FAIL_EXIT && (exit_code == 126 || exit_code == 127) && !worked;
}

void ctl_config_why(runner_failure kind, int exit_code, const char *dir, char *why, size_t cap)
{
    char tail[200];
    stderr_tail(dir, tail, sizeof(tail));
    size_t l = strlen(why);
    if (l < cap)
        snprintf(why + l, cap - l, "%s%s%s", exit_hint(kind, exit_code),
                 tail[0] ? "; stderr ends: " : "", tail);
}

void ctl_note_outcome(runner *r, runner_failure kind, int exit_code, const char *why,
                      const char *dir)
{
    if (kind == RUNNER_FAIL_STOPPED)
        return;
    int code = kind == RUNNER_FAIL_EXIT ? exit_code : 0;
    /* a run that succeeded or failed for its hyperparameters shows the command works: a
     * flaky trainer that crashes now and then is retried, never stopped */
    int worked = r->n_status[RUNNER_RUN_SUCCEEDED] + r->n_status[RUNNER_RUN_FAILED] > 0;
    if (!deterministic_kind(kind) || worked) {
        r->streak_n = 0;
        return;
    }
    if (r->streak_n && r->streak_kind == kind && r->streak_code == code)
        r->streak_n++;
    else {
        r->streak_kind = kind;
        r->streak_code = code;
        r->streak_n = 1;
    }
    unsigned limit = r->cfg->stop_after_identical;
    if (!limit || r->streak_n < limit || r->streak_stop)
        return;
    char tail[200];
    stderr_tail(dir, tail, sizeof(tail));
    snprintf(r->streak_msg, sizeof(r->streak_msg),
             "the last %zu attempts all failed the same way (%s%s); the sweep is stopped "
             "(retries.stop_after_identical: %u); fix the command or the trainer, then 'scaletune "
             "sweep resume'",
             r->streak_n, why && why[0] ? why : runner_failure_name(kind), exit_hint(kind, code),
             limit);
    if (tail[0]) {
        size_t l = strlen(r->streak_msg);
        snprintf(r->streak_msg + l, sizeof(r->streak_msg) - l, "; its stderr ends: %s", tail);
    }
    r->streak_stop = 1;
    r->stopping = 1;
    ctl_progress(r, "stopping: %zu attempts in a row failed the same way (%s%s)", r->streak_n,
                 runner_failure_name(kind), exit_hint(kind, code));
}
