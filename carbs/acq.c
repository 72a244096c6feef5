/*
 * acq.c — the acquisition pieces of a Bayesian step (shared specs/carbs.md §5.5–5.6): expected
 * improvement in the closed form of Jones et al. (1998), evaluated stably with GSL's hazard
 * function, and CARBS' locality weight (a 1-D normal pdf of the distance to the nearest origin).
 */
#include <gsl/gsl_sf_erf.h>
#include <math.h>

#include "carbs/carbs_int.h"

/* EI = sigma [phi(z) + z Phi(z)] = imp Phi(z) + sigma phi(z), z = imp / sigma, imp = mu - v - xi
 * (maximisation of mu). For z >= 0 both terms are positive and formed directly (phi may
 * underflow to 0 there, leaving imp). For z < 0 the two cancel, so EI is written as
 * sigma phi(z) (1 + z / h(-z)) with h(x) = phi(x) / (1 - Phi(x)) the normal hazard, which GSL
 * evaluates without an error for x > 0 (at x < -38 it reports an underflow, and GSL's default
 * handler would abort a caller that has not called st_global_init). */
double acq_ei(double mu, double sigma, double v, double xi)
{
    double imp = mu - v - xi;
    if (!(sigma > 0) || !isfinite(sigma))
        return imp > 0 ? imp : 0.0;
    double z = imp / sigma;
    if (!(z > -38.0)) /* phi(z) underflows, or imp is NaN */
        return 0.0;
    double phi = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    if (z >= 0)
        return imp * 0.5 * erfc(-z / M_SQRT2) + sigma * phi;
    double ei = sigma * phi * (1.0 + z / gsl_sf_hazard(-z));
    return ei > 0 ? ei : 0.0;
}

/* w(x) = max_o exp(-d^2 / (2 r^2)) / (r sqrt(2 pi)), d = |x - o|_2: CARBS' proximity score. */
double acq_locality(size_t d, const double *x, size_t n_origins, const double *origins, double r)
{
    double best = INFINITY;
    for (size_t o = 0; o < n_origins; o++) {
        double s = 0;
        for (size_t i = 0; i < d; i++) {
            double t = x[i] - origins[o * d + i];
            s += t * t;
        }
        if (s < best)
            best = s;
    }
    return exp(-best / (2.0 * r * r)) / (r * sqrt(2.0 * M_PI));
}
