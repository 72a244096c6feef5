/*
 * testfuncs.h — standard optimization test functions with known minima (Dixon & Szego 1978;
 * Rosenbrock 1960), shared by the carbs/ tests and the benchmarks. Header-only, no state.
 *   branin      on [-5, 10] x [0, 15], minimum 0.397887357729739 at (pi, 2.275) and two more
 *   hartmann6   on [0, 1]^6, minimum -3.32236801141551 at TF_HARTMANN6_XMIN
 *   rosenbrock  2-D, minimum 0 at (1, 1)
 */
#ifndef ST_TESTFUNCS_H
#define ST_TESTFUNCS_H

#include <math.h>
#include <stdlib.h>

#define TF_BRANIN_FMIN    0.397887357729739
#define TF_HARTMANN6_FMIN (-3.32236801141551)
#define TF_HARTMANN6_XMIN                                                                          \
    {                                                                                              \
        0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573                                    \
    }

static inline double tf_branin(const double *x)
{
    const double pi = 3.14159265358979323846;
    double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - 6;
    return u * u + 10 * (1 - t) * cos(x[0]) + 10;
}

static inline double tf_hartmann6(const double *x)
{
    static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{.1312, .1696, .5569, .0124, .8283, .5886},
                                   {.2329, .4135, .8307, .3736, .1004, .9991},
                                   {.2348, .1451, .3522, .2883, .3047, .6650},
                                   {.4047, .8828, .8732, .5743, .1091, .0381}};
    static const double alpha[4] = {1, 1.2, 3, 3.2};
    double s = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 6; j++)
            e += A[i][j] * (x[j] - P[i][j]) * (x[j] - P[i][j]);
        s += alpha[i] * exp(-e);
    }
    return -s;
}

static inline double tf_rosenbrock(const double *x)
{
    return 100 * (x[1] - x[0] * x[0]) * (x[1] - x[0] * x[0]) + (1 - x[0]) * (1 - x[0]);
}

static inline int tf_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v in place; n > 0). */
static inline double tf_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), tf_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
