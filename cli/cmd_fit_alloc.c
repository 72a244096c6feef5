/*
 * cmd_fit_alloc.c — `scaletune fit allocate`: the compute-optimal N, D, tokens per parameter and
 * frontier loss at a budget (Chinchilla eq. 4, C = 6ND) from a fit saved by `scaletune fit
 * --json`. Uses only the public header fit/fit.h, and jansson to read the JSON.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_fit.h"
#include "common/st.h"

static void usage_alloc(FILE *f)
{
    fprintf(f, "usage: scaletune fit allocate --fit fit.json --compute C [--json]\n\n"
               "Compute-optimal allocation (C = 6ND) from a saved Chinchilla-type fit:\n"
               "N_opt(C), D_opt(C), tokens per parameter and the frontier loss L*(C).\n\n"
               "  --fit FILE     JSON written by 'scaletune fit --json'\n"
               "  --compute C    training FLOP budget (required)\n"
               "  --loss L       also print the compute needed to reach loss L\n"
               "  --json         print JSON\n");
}

static int parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0 && isfinite(*v);
}

int fit_cli_allocate(int argc, char **argv)
{
    const char *path = NULL;
    double C = NAN, target = NAN;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage_alloc(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--fit") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--compute") && i + 1 < argc) {
            if (!parse_double(argv[++i], &C) || !(C > 0)) {
                cli_error(NULL, "--compute: '%s' is not a positive number", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--loss") && i + 1 < argc) {
            if (!parse_double(argv[++i], &target)) {
                cli_error(NULL, "--loss: '%s' is not a number", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            cli_error("run 'scaletune fit allocate --help'", "unknown option '%s'", argv[i]);
            return 2;
        }
    }
    if (!path || !(C > 0)) {
        cli_error("run 'scaletune fit allocate --help'", "--fit and --compute are required");
        return 2;
    }
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        cli_error(NULL, "%s:%d: %s", path, je.line, je.text);
        return 1;
    }
    const char *law_name = json_string_value(json_object_get(root, "law"));
    const fit_law *law = fit_law_by_name(law_name);
    json_t *params = json_object_get(root, "params");
    int rc = 1;
    if (!law || !params || (strcmp(law_name, "chinchilla") && strcmp(law_name, "muennighoff"))) {
        cli_error("allocation needs a chinchilla or muennighoff fit", "%s: law '%s' unusable", path,
                  law_name ? law_name : "(missing)");
        goto done;
    }
    double nat[16];
    for (size_t i = 0; i < fit_law_n_params(law); i++) {
        json_t *v = json_object_get(params, fit_law_natural_name(law, i));
        if (!json_is_number(v)) {
            cli_error(NULL, "%s: params.%s missing or not a number", path,
                      fit_law_natural_name(law, i));
            goto done;
        }
        nat[i] = json_number_value(v);
    }
    fit_alloc al;
    if (fit_allocate(nat, C, &al) != ST_OK) {
        cli_error(NULL, "%s: parameters do not allow an allocation (A, B, alpha, beta > 0)", path);
        goto done;
    }
    double Ct = NAN;
    if (isfinite(target) && fit_compute_for_loss(nat, target, &Ct) != ST_OK)
        cli_error(NULL, "loss %g is at or below the irreducible loss E = %g", target, nat[2]);
    if (json) {
        json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "compute", C, "N_opt", al.N_opt,
                              "D_opt", al.D_opt, "tokens_per_param", al.tokens_per_param, "L_opt",
                              al.L_opt, "a", al.a, "b", al.b, "G", al.G);
        if (isfinite(Ct))
            json_object_set_new(o, "compute_for_loss",
                                json_pack("{s:f,s:f}", "loss", target, "compute", Ct));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', stdout);
        json_decref(o);
    } else {
        printf("compute            %.4g FLOP\n", C);
        printf("N_opt              %.4g parameters   (N_opt ∝ C^%.4f)\n", al.N_opt, al.a);
        printf("D_opt              %.4g tokens       (D_opt ∝ C^%.4f)\n", al.D_opt, al.b);
        printf("tokens per param   %.2f\n", al.tokens_per_param);
        printf("L*(C)              %.5f\n", al.L_opt);
        if (isfinite(Ct))
            printf("compute for L=%.4g  %.4g FLOP\n", target, Ct);
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}
