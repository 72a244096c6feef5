/*
 * acq.c — the acquisition pieces of a Bayesian step (shared specs/carbs.md §5.5–5.6): expected
 * improvement in the closed form of Jones et al. (1998), evaluated stably with GSL's hazard
 * function, and CARBS' locality weight (a 1-D normal pdf of the distance to the nearest origin).
 */
#include <gsl/gsl_sf_erf.h>
#include <math.h>

#include "carbs/carbs_int.h"

/* EI = sigma [phi(z) + z Phi(z)], z = (mu - v - xi) / sigma  (maximisation of mu).
 * Written as sigma phi(z) (1 + z / h(-z)) with h(x) = phi(x) / (1 - Phi(x)) the normal hazard,
 * so that neither phi(z) nor Phi(z) is formed alone for large |z|. */
double acq_ei(double mu, double sigma, double v, double xi)
{
    double imp = mu - v - xi;
    if (!(sigma > 0) || !isfinite(sigma))
        return imp > 0 ? imp : 0.0;
    double z = imp / sigma;
    if (z < -38.0) /* phi(z) underflows */
        return 0.0;
    double phi = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
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
