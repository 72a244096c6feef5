/*
 * fuzz_config.c — libFuzzer target for the sweep-file loader (runner_config_load_string) and,
 * through it, the cost-expression evaluator and template checks. Every accepted config must
 * satisfy the loader's promises (a name, a budget; every parameter may be fixed: a one-run
 * sweep, as `scaletune extrapolate --emit yaml` writes for the large run; the command may be
 * absent: a sweep driven by ask/tell only, which launch and resume refuse).
 * Build and run: make fuzz.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char em[ST_ERRMSG_MAX];
    runner_config *cfg = NULL;
    st_status rc = runner_config_load_string((const char *)data, size, "fuzz.yaml", &cfg, em);
    if (rc == ST_OK) {
        if (!cfg || !cfg->name || (cfg->argc > 0) != (cfg->argv != NULL) ||
            runner_config_dim(cfg) > cfg->n_params || !cfg->objective || !cfg->cost_metric ||
            cfg->slots == 0 || (cfg->budget_runs == 0 && isinf(cfg->budget_cost)))
            abort();
    } else if (cfg || !memchr(em, '\0', sizeof(em)) || !em[0]) {
        abort();
    }
    runner_config_destroy(cfg);
    return 0;
}
