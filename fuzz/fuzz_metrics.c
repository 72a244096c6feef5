/*
 * fuzz_metrics.c — libFuzzer target for the metrics-protocol line parser (runner_metrics_parse).
 * The input is one line, not NUL-terminated, so ASan catches any read past its end. Also checks
 * the parser's own promises: a valid line has at most RUNNER_METRICS_MAX metrics with
 * NUL-terminated names. The same bytes, NUL-terminated, go to the config record's schedule
 * reader (runner_schedule_parse) and, when it names a schedule of at most 1e5 steps, to its
 * rebuild, whose learning rates must be finite and non-negative. Build and run: make fuzz.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/largerun.h"
#include "runner/runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_schedule(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    runner_schedule s;
    if (runner_schedule_parse(text, &s) == ST_OK && s.kind != RUNNER_SCHEDULE_UNKNOWN &&
        s.steps <= 1e5) {
        size_t n = (size_t)s.steps;
        double *lr = malloc(n * sizeof(double));
        if (lr && runner_schedule_lr(&s, n, lr) == ST_OK)
            for (size_t i = 0; i < n; i++)
                if (!isfinite(lr[i]) || lr[i] < 0)
                    abort();
        free(lr);
    }
    (void)runner_schedule_name(s.kind);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size heap copy so that over-reads are caught */
    char *line = malloc(size ? size : 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    runner_metrics_line l;
    st_status rc = runner_metrics_parse(line, size, &l);
    if (rc == ST_OK) {
        if (l.n_metrics > RUNNER_METRICS_MAX || l.event == RUNNER_EVENT_NONE)
            abort();
        for (size_t i = 0; i < l.n_metrics; i++)
            if (memchr(l.metrics[i].name, '\0', RUNNER_METRIC_NAME_MAX) == NULL)
                abort();
        (void)runner_metrics_get(&l, "loss", NULL);
    } else if (l.event != RUNNER_EVENT_NONE) {
        abort();
    }
    free(line);
    fuzz_schedule(data, size);
    return 0;
}
