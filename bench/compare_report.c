/*
 * compare_report.c — gathers `make bench` into bench/results/latest.json and a Markdown table.
 *
 * Reads compare's JSON (optimizers side by side) and the logs of the other benchmarks, whose
 * numbers are lines "BENCH <module>.<metric> [key=value ...] <number> [comment]". Metrics named
 * *speedup* or *vs_* also go into the `ratios` object (copy_ratios says under which key), next
 * to compare's own ratios. It measures nothing itself. Depends on jansson and POSIX directory
 * reading.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* ---- the other benchmarks' logs ------------------------------------------------------------ */

/* Parses one "BENCH name tags... value" line into metrics["name[tags]"]; counts names. */
static void parse_bench_line(char *line, json_t *metrics, json_t *counts)
{
    char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
    if (!tok || strcmp(tok, "BENCH"))
        return;
    char *name = strtok_r(NULL, " \t\n", &save);
    if (!name)
        return;
    char tags[256] = "";
    double value = NAN;
    while ((tok = strtok_r(NULL, " \t\n", &save))) {
        char *end;
        double v = strtod(tok, &end);
        if (end != tok && *end == '\0') {
            value = v;
            break;
        }
        if (strchr(tok, '=')) {
            size_t n = strlen(tags);
            snprintf(tags + n, sizeof(tags) - n, "%s%s", n ? "," : "", tok);
        }
    }
    if (isnan(value))
        return;
    char key[512];
    snprintf(key, sizeof(key), "%s%s%s%s", name, tags[0] ? "[" : "", tags, tags[0] ? "]" : "");
    json_object_set_new(metrics, key, json_real(value));
    json_object_set_new(counts, name,
                        json_integer(json_integer_value(json_object_get(counts, name)) + 1));
}

/* Copies ratio-like metrics (names with "speedup" or "vs_") into `ratios`: the name without its
 * module prefix ("carbs.suggest_speedup_vs_carbs" -> "suggest_speedup_vs_carbs"; a bare
 * "trainer.vs_pytorch" keeps it as "trainer_vs_pytorch"), with the tags when a name occurs on
 * more than one line. */
static void copy_ratios(json_t *metrics, json_t *counts, json_t *ratios)
{
    const char *key;
    json_t *v;
    json_object_foreach(metrics, key, v)
    {
        char name[512], out[600];
        snprintf(name, sizeof(name), "%s", key);
        char *br = strchr(name, '[');
        const char *tags = br ? key + (br - name) : "";
        if (br)
            *br = '\0';
        if (!strstr(name, "speedup") && !strstr(name, "vs_"))
            continue;
        const char *dot = strchr(name, '.');
        const char *base = dot ? dot + 1 : name;
        if (!strncmp(base, "vs_", 3) && dot)
            snprintf(out, sizeof(out), "%.*s_%s", (int)(dot - name), name, base);
        else
            snprintf(out, sizeof(out), "%s", base);
        if (json_integer_value(json_object_get(counts, name)) > 1 || json_object_get(ratios, out))
            snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s", tags);
        json_object_set(ratios, out, v);
    }
}

/* Every DIR/<name>.log with DIR/<name>.status ("ok 12.3" or "failed 0.4"). */
static json_t *read_logs(const char *dir, json_t *ratios)
{
    json_t *all = json_object();
    DIR *d = opendir(dir);
    if (!d)
        return all;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".log"))
            continue;
        char name[256], path[1024];
        snprintf(name, sizeof(name), "%.*s", (int)(n - 4), e->d_name);
        json_t *b = json_object(), *metrics = json_object(), *counts = json_object();
        snprintf(path, sizeof(path), "%s/%s.status", dir, name);
        FILE *f = fopen(path, "r");
        char status[64] = "unknown";
        double wall = NAN;
        if (f) {
            if (fscanf(f, "%63s %lf", status, &wall) < 1)
                snprintf(status, sizeof(status), "unknown");
            fclose(f);
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        f = fopen(path, "r");
        char line[2048];
        while (f && fgets(line, sizeof(line), f)) {
            if (strstr(line, "No rule to make target"))
                snprintf(status, sizeof(status), "missing");
            parse_bench_line(line, metrics, counts);
        }
        if (f)
            fclose(f);
        copy_ratios(metrics, counts, ratios);
        json_decref(counts);
        json_object_set_new(b, "status", json_string(status));
        json_object_set_new(b, "wall_s", isfinite(wall) ? json_real(wall) : json_null());
        json_object_set_new(b, "metrics", metrics);
        json_object_set_new(all, name, b);
    }
    closedir(d);
    return all;
}

/* ---- Markdown ------------------------------------------------------------------------------ */

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "median [q25, q75]" or "—", with a reached count when some seeds did not finish */
static void cell(FILE *f, json_t *s, int prec, int show_count)
{
    if (!s) {
        fputs(" — |", f);
        return;
    }
    double m = num(s, "median"), a = num(s, "q25"), b = num(s, "q75");
    long fin = (long)json_integer_value(json_object_get(s, "finite"));
    long n = (long)json_integer_value(json_object_get(s, "n"));
    char x[3][64];
    double v[3] = {m, a, b};
    for (int i = 0; i < 3; i++) {
        if (isfinite(v[i]))
            snprintf(x[i], sizeof(x[i]), "%.*g", prec, v[i]);
        else
            snprintf(x[i], sizeof(x[i]), "∞");
    }
    fprintf(f, " %s [%s, %s]", x[0], x[1], x[2]);
    if (show_count)
        fprintf(f, " (%ld/%ld)", fin, n);
    fputs(" |", f);
}

/* The simulator's extrapolation to 100x: CARBS' front method and scaletune's engine on the same
 * sweeps (compare.c's "engine" object; absent when compare ran with --engine-boot 0). */
static void write_engine_md(FILE *f, json_t *p)
{
    const char *on;
    json_t *o;
    int any = 0;
    json_object_foreach(json_object_get(p, "optimizers"), on, o) any |=
        json_object_get(o, "engine") != NULL;
    if (!any)
        return;
    fprintf(f, "### sim: the sweep extrapolated to 100x its largest run\n\n"
               "Regret = (true loss of the recommendation - optimal loss at that compute) / "
               "optimal loss; ∞ when the recommendation diverges in truth.\n\n"
               "| optimizer's sweep | front method regret (finite) | engine regret (finite) | "
               "engine lr / lr_opt | engine predicted p_diverge | engine prediction error | "
               "seeds: engine < 1%% / diverged / no failed run in the sweep |\n"
               "|---|---|---|---|---|---|---|\n");
    json_object_foreach(json_object_get(p, "optimizers"), on, o)
    {
        json_t *e = json_object_get(o, "engine");
        if (!e)
            continue;
        fprintf(f, "| %s |", on);
        cell(f, json_object_get(o, "regret_100x"), 3, 1);
        cell(f, json_object_get(e, "regret_100x"), 3, 1);
        cell(f, json_object_get(e, "lr_ratio_100x"), 3, 0);
        cell(f, json_object_get(e, "p_diverge"), 3, 0);
        cell(f, json_object_get(e, "prediction_error"), 3, 0);
        fprintf(
            f, " %lld / %lld / %lld of %lld |\n",
            (long long)json_integer_value(json_object_get(e, "seeds_regret_below_1pct")),
            (long long)json_integer_value(json_object_get(e, "seeds_diverged")),
            (long long)json_integer_value(json_object_get(e, "seeds_without_failed_runs")),
            (long long)json_integer_value(json_object_get(json_object_get(e, "regret_100x"), "n")));
    }
    fputc('\n', f);
}

static void write_md(FILE *f, json_t *root)
{
    json_t *cmp = json_object_get(root, "comparisons");
    fprintf(f,
            "# scaletune benchmarks — latest run\n\nGenerated by `make bench` (%s). "
            "Medians [25th, 75th percentile] over seeds; how to read them: "
            "docs/benchmarks.md.\n\n",
            json_string_value(json_object_get(root, "date")));
    json_t *probs = json_object_get(cmp, "problems");
    const char *pn;
    json_t *p;
    json_object_foreach(probs, pn, p)
    {
        fprintf(f,
                "## %s (best achievable %.6g; budget %.4g cost units of %.4g, at most %lld "
                "runs)\n\n",
                pn, num(p, "f_best"), num(p, "budget") / num(p, "unit_cost"), num(p, "unit_cost"),
                (long long)json_integer_value(json_object_get(p, "max_evals")));
        int sim = !strcmp(pn, "sim");
        fprintf(f,
                "| optimizer | cost to 1%% of the front (reached) | cost to 1%% of the best "
                "(reached) | objective at 1/4 budget | objective at full budget |%s "
                "failed runs | s per seed |\n",
                sim ? " regret at 100x (finite) | lr / lr_opt at 100x |" : "");
        fprintf(f, "|---|---|---|---|---|%s---|---|\n", sim ? "---|---|" : "");
        const char *on;
        json_t *o;
        json_object_foreach(json_object_get(p, "optimizers"), on, o)
        {
            json_t *ab = json_object_get(o, "objective_at_budget");
            fprintf(f, "| %s |", on);
            cell(f, json_object_get(o, "cost_to_1pct_units"), 3, 1);
            cell(f, json_object_get(o, "cost_to_1pct_global_units"), 3, 1);
            cell(f, json_array_get(ab, 0), 4, 0);
            cell(f, json_array_get(ab, json_array_size(ab) - 1), 4, 0);
            if (sim) {
                cell(f, json_object_get(o, "regret_100x"), 3, 1);
                cell(f, json_object_get(o, "lr_ratio_100x"), 3, 0);
            }
            cell(f, json_object_get(o, "failed_runs"), 3, 0);
            cell(f, json_object_get(o, "wall_s"), 3, 0);
            fputc('\n', f);
        }
        fputc('\n', f);
        if (sim)
            write_engine_md(f, p);
    }
    fprintf(f, "## Ratios (scaletune's median / the baseline's; below 1 is better, except "
               "speed-ups)\n\n| ratio | value |\n|---|---|\n");
    const char *k;
    json_t *v;
    json_t *notes = json_object_get(root, "ratio_notes");
    json_object_foreach(json_object_get(root, "ratios"), k, v)
    {
        const char *note = json_string_value(json_object_get(notes, k));
        if (json_is_number(v))
            fprintf(f, "| %s | %.4g%s%s%s |\n", k, json_number_value(v), note ? " (" : "",
                    note ? note : "", note ? ")" : "");
        else
            fprintf(f, "| %s | n/a%s%s%s |\n", k, note ? " (" : "", note ? note : "",
                    note ? ")" : "");
    }
    fprintf(f, "\n## Other benchmarks\n\n| benchmark | status | seconds | metric | value |\n"
               "|---|---|---|---|---|\n");
    json_object_foreach(json_object_get(root, "benchmarks"), k, v)
    {
        json_t *m = json_object_get(v, "metrics");
        const char *st = json_string_value(json_object_get(v, "status"));
        double w = num(v, "wall_s");
        if (json_object_size(m) == 0)
            fprintf(f, "| %s | %s | %.1f | — | — |\n", k, st, w);
        const char *mk;
        json_t *mv;
        json_object_foreach(m, mk, mv)
        {
            fprintf(f, "| %s | %s | %.1f | %s | %.4g |\n", k, st, w, mk, json_number_value(mv));
        }
    }
}

int main(int argc, char **argv)
{
    const char *cmp_path = NULL, *logs = NULL, *out_json = NULL, *out_md = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--compare"))
            cmp_path = argv[i + 1];
        else if (!strcmp(argv[i], "--logs"))
            logs = argv[i + 1];
        else if (!strcmp(argv[i], "--json"))
            out_json = argv[i + 1];
        else if (!strcmp(argv[i], "--md"))
            out_md = argv[i + 1];
    }
    if (!out_json) {
        fprintf(stderr, "usage: compare_report --json OUT [--md OUT] [--compare compare.json] "
                        "[--logs DIR]\n");
        return 2;
    }
    json_t *root = json_object(), *ratios = json_object();
    char date[64];
    time_t t = time(NULL);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    json_object_set_new(root, "date", json_string(date));

    json_t *cmp = NULL;
    if (cmp_path) {
        json_error_t e;
        cmp = json_load_file(cmp_path, 0, &e);
        if (!cmp)
            fprintf(stderr, "compare_report: %s: %s (comparisons left out)\n", cmp_path, e.text);
    }
    if (cmp) {
        json_object_update(ratios, json_object_get(cmp, "ratios"));
        json_object_set(root, "ratio_notes", json_object_get(cmp, "ratio_notes"));
        json_object_set(root, "comparisons", cmp);
    } else {
        json_object_set_new(root, "comparisons", json_null());
    }
    json_object_set_new(root, "benchmarks", logs ? read_logs(logs, ratios) : json_object());
    json_object_set_new(root, "ratios", ratios);

    if (json_dump_file(root, out_json, JSON_INDENT(1) | JSON_REAL_PRECISION(6))) {
        fprintf(stderr, "compare_report: cannot write %s\n", out_json);
        return 1;
    }
    if (out_md) {
        FILE *f = fopen(out_md, "w");
        if (!f) {
            fprintf(stderr, "compare_report: cannot write %s\n", out_md);
            return 1;
        }
        write_md(f, root);
        fclose(f);
    }
    fprintf(stderr, "compare_report: wrote %s%s%s\n", out_json, out_md ? " and " : "",
            out_md ? out_md : "");
    json_decref(cmp);
    json_decref(root);
    return 0;
}
