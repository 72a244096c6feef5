/*
 * fuzz_metrics.c — libFuzzer target for the metrics-protocol line parser (runner_metrics_parse).
 * The input is one line, not NUL-terminated, so ASan catches any read past its end. Also checks
 * the parser's own promises: a valid line has at most RUNNER_METRICS_MAX metrics with
 * NUL-terminated names. Build and run: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    return 0;
}
