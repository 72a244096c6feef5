/*
 * libFuzzer target for reading a store: a file handed to `--db` may be anything (a damaged
 * store, another program's database, a store edited by hand). The bytes are written to a file
 * and opened with runner_store_open(); every read a user's command makes (list, status, params,
 * the typed read study/ uses, the JSON and CSV exports, a run's curve) must give ST_OK or an
 * error status, never a crash. The seed corpus (fuzz/corpus/store) is a real store of
 * examples/fake-trainer.yaml's sweep, so mutations land in rows our code parses.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/st.h"
#include "runner/runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(runner_store *s)
{
    const char *names = NULL;
    runner_status st;
    size_t n = 0;
    const char *const *params = NULL;
    char *out = NULL;
    runner_sweep *w = NULL;
    (void)runner_store_list(s, &names);
    (void)runner_store_status(s, NULL, &st);
    (void)runner_store_params(s, NULL, &n, &params);
    if (runner_store_export_json(s, NULL, &out) == ST_OK)
        st_free(out);
    out = NULL;
    if (runner_store_export_csv(s, NULL, &out) == ST_OK)
        st_free(out);
    if (runner_store_read_sweep(s, NULL, &w) == ST_OK) {
        for (size_t i = 0; i < w->n_runs && i < 4; i++) {
            double *steps = NULL, *values = NULL, *costs = NULL;
            size_t np = 0;
            if (runner_store_run_curve(s, w->runs[i].id, "val_loss", "flops", &np, &steps, &values,
                                       &costs) == ST_OK) {
                free(steps);
                free(values);
                free(costs);
            }
        }
        runner_sweep_free(w);
    }
}

static void remove_store(const char *path)
{
    char side[600];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-journal", path);
    unlink(side);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/fuzz-store-%d.db",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    remove_store(path);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t wrote = fwrite(data, 1, size, f);
    fclose(f);
    if (wrote == size) {
        runner_store *s = NULL;
        char err[ST_ERRMSG_MAX];
        if (runner_store_open(path, &s, err) == ST_OK) {
            read_all(s);
            runner_store_close(s);
        }
    }
    remove_store(path);
    return 0;
}
