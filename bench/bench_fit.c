/*
 * bench_fit.c — `make bench-fit`: the 4500-start Huber grid fit and a 4000-replicate bootstrap
 * on Epoch's 240 Chinchilla points, with 1 and 2 threads, and the same grid fitted by scipy's
 * L-BFGS-B (bench/fit_scipy_peer.py, Debian's /usr/bin/python3) in the same run. Prints
 * "BENCH fit.grid_s threads=<t> <seconds>", "BENCH fit.bootstrap_s threads=<t> <seconds>", the
 * optima, and "BENCH fit.grid_vs_scipy_per_thread <ratio>": scipy's CPU time per start over ours
 * per start on one thread (median of 3 runs), with scipy as Epoch ran it (finite-difference
 * gradients); then the same against scipy given the analytic gradient (..._jac_per_thread). The
 * peer times a fixed subset of the starts (every FIT_PEER_STRIDE'th, default 13) and is skipped,
 * with a message, when scipy is not installed.
 * Not a library test: this program prints, runs a subprocess and exits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "common/st.h"
#include "fit/fit.h"

#define CSV "tests/data/scaling/chinchilla_svg_extracted_data.csv"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

/* What the peer reported; per_start < 0 when it did not run. */
typedef struct peer {
    double per_start, cpu_per_start, obj, par[5];
    int have_opt;
} peer;

/* Runs bench/fit_scipy_peer.py on one thread with extra arguments `args`, echoing its lines;
 * returns 0 when it ran. */
static int run_peer(const char *args, peer *pr)
{
    const char *py = getenv("FIT_PEER_PYTHON");
    const char *stride = getenv("FIT_PEER_STRIDE");
    char cmd[512], line[512];
    snprintf(cmd, sizeof(cmd),
             "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 %s "
             "bench/fit_scipy_peer.py --stride %s %s 2>&1",
             py ? py : "/usr/bin/python3", stride ? stride : "13", args);
    memset(pr, 0, sizeof(*pr));
    pr->per_start = pr->cpu_per_start = -1;
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("  scipy peer: skipped (cannot run '%s')\n", cmd);
        return -1;
    }
    while (fgets(line, sizeof(line), p)) {
        printf("  %s", line);
        double v;
        if (sscanf(line, "PEER per_start_s %lf", &v) == 1)
            pr->per_start = v;
        else if (sscanf(line, "PEER cpu_per_start_s %lf", &v) == 1)
            pr->cpu_per_start = v;
        else if (sscanf(line, "PEER optimum %lf A %lf B %lf E %lf alpha %lf beta %lf", &pr->obj,
                        &pr->par[0], &pr->par[1], &pr->par[2], &pr->par[3], &pr->par[4]) == 6)
            pr->have_opt = 1;
    }
    int rc = pclose(p);
    if (rc != 0 || pr->per_start <= 0 || pr->cpu_per_start <= 0) {
        printf("  scipy peer: skipped (exit status %d; needs Debian's python3-scipy in "
               "/usr/bin/python3, or FIT_PEER_PYTHON)\n",
               rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
        return -1;
    }
    return 0;
}

int main(void)
{
    char err[ST_ERRMSG_MAX];
    fit_table *t;
    if (fit_table_read_csv(CSV, "N=Model Size,C=Training FLOP", &t, err) != ST_OK) {
        fprintf(stderr, "bench_fit: %s\n", err);
        return 1;
    }
    fit_table_exclude_top_loss(t, 5);
    size_t n = fit_table_n_rows(t);
    const char *names[] = {"N", "D"};
    double *x = malloc(n * 2 * sizeof(double));
    fit_table_matrix(t, 2, names, x, err);
    double tg[3] = {0}, tb[3] = {0}, cpu1 = 0, par1[5] = {0}, obj1 = 0;
    size_t n_starts = 0;
    for (size_t nt = 1; nt <= 2; nt++) {
        fit *f;
        fit_create(fit_law_chinchilla, &f);
        fit_options o = fit_options_default();
        o.n_threads = nt;
        fit_set_options(f, &o);
        fit_set_data(f, n, x, fit_table_column(t, "loss"), NULL);
        double wall[3], cpu[3];
        for (int rep = 0; rep < 3; rep++) { /* median of 3: the machine is shared and noisy */
            double t0 = now(), c0 = cpu_now();
            if (fit_run(f) != ST_OK) {
                fprintf(stderr, "bench_fit: %s\n", fit_errmsg(f));
                return 1;
            }
            wall[rep] = now() - t0;
            cpu[rep] = cpu_now() - c0;
        }
        tg[nt] = median3(wall);
        const double *p = fit_params(f);
        fit_diag d;
        fit_get_diag(f, &d);
        n_starts = d.n_starts;
        if (nt == 1) {
            cpu1 = median3(cpu);
            obj1 = fit_objective_value(f);
            memcpy(par1, p, sizeof(par1));
        }
        printf("BENCH fit.grid_s threads=%zu %.4f (median of 3: %.4f %.4f %.4f s; %zu starts, "
               "%zu evaluations)\n",
               nt, tg[nt], wall[0], wall[1], wall[2], d.n_starts, d.n_evals);
        printf("  optimum: objective %.10g A %.6g B %.6g E %.6g alpha %.6g beta %.6g\n",
               fit_objective_value(f), p[0], p[1], p[2], p[3], p[4]);
        fit_boot_options bo = fit_boot_options_default();
        bo.n_rep = 4000;
        bo.n_threads = nt;
        fit_boot *b;
        double t0 = now();
        if (fit_bootstrap(f, &bo, &b) != ST_OK) {
            fprintf(stderr, "bench_fit: %s\n", fit_errmsg(f));
            return 1;
        }
        tb[nt] = now() - t0;
        printf("BENCH fit.bootstrap_s threads=%zu %.4f\n", nt, tb[nt]);
        printf("  bootstrap SE: A %.5g B %.5g E %.5g alpha %.5g beta %.5g\n", fit_boot_se(b, 0),
               fit_boot_se(b, 1), fit_boot_se(b, 2), fit_boot_se(b, 3), fit_boot_se(b, 4));
        fit_boot_destroy(b);
        fit_destroy(f);
    }
    printf("2-thread speed-up: grid %.2fx, bootstrap %.2fx\n", tg[1] / tg[2], tb[1] / tb[2]);
    printf("targets: grid <= 0.5 s, bootstrap <= 2 s\n");

    /* The peer, in the same run: scipy per start against ours per start on one thread, first
     * as Epoch ran it (finite-difference gradients), then given the analytic gradient. */
    const char *modes[2] = {"--fd", "--jac"};
    const char *metric[2] = {"grid_vs_scipy_per_thread", "grid_vs_scipy_jac_per_thread"};
    double ours = cpu1 / (double)n_starts, ours_wall = tg[1] / (double)n_starts;
    for (int mi = 0; mi < 2; mi++) {
        peer pr;
        printf("scipy L-BFGS-B peer (bench/fit_scipy_peer.py %s, one thread):\n", modes[mi]);
        if (run_peer(modes[mi], &pr) != 0)
            break;
        if (pr.have_opt) {
            double dmax = fabs(pr.obj - obj1) / obj1;
            for (int j = 0; j < 5; j++)
                dmax = fmax(dmax, fabs(pr.par[j] - par1[j]) / fabs(par1[j]));
            printf("  same optimum: objective scipy %.10g ours %.10g, largest relative "
                   "difference (objective and A B E alpha beta) %.2g: %s\n",
                   pr.obj, obj1, dmax, dmax <= 2e-3 ? "yes (<= 2e-3)" : "NO");
        }
        printf("  per start: scipy %.4g ms CPU (%.4g ms wall), ours %.4g ms CPU (%.4g ms wall) "
               "on one thread\n",
               1e3 * pr.cpu_per_start, 1e3 * pr.per_start, 1e3 * ours, 1e3 * ours_wall);
        printf("BENCH fit.%s %.1f (scipy CPU per start / ours on 1 thread%s)\n", metric[mi],
               pr.cpu_per_start / ours, mi == 0 ? "; target >= 60" : "");
        printf("BENCH fit.%s_wall %.1f (same, wall clock)\n", metric[mi], pr.per_start / ours_wall);
    }
    free(x);
    fit_table_destroy(t);
    return 0;
}
