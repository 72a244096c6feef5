/*
 * alloc.c — compute-optimal allocation from a Chinchilla-type fit under C = 6 N D (Hoffmann et
 * al. 2022 eq. 4): N_opt(C) = G (C/6)^a, D_opt(C) = G^-1 (C/6)^b, a = beta/(alpha+beta),
 * G = (alpha A / (beta B))^(1/(alpha+beta)); the frontier loss L*(C), its inverse (the compute
 * for a target loss) and the loss of a fixed N trained on more tokens. Depends on libm only.
 */
#include "fit/fit_int.h"

#include <math.h>

double fit_loss_at(const double *nat, double N, double D)
{
    /* L(N, D) = E + A N^-alpha + B D^-beta */
    return nat[2] + nat[0] * pow(N, -nat[3]) + nat[1] * pow(D, -nat[4]);
}

st_status fit_allocate(const double *nat, double C, fit_alloc *out)
{
    double A = nat[0], B = nat[1], al = nat[3], be = nat[4];
    if (!(A > 0) || !(B > 0) || !(al > 0) || !(be > 0) || !(C > 0))
        return ST_EINVAL;
    out->a = be / (al + be);
    out->b = al / (al + be);
    out->G = pow(al * A / (be * B), 1 / (al + be));
    out->N_opt = out->G * pow(C / 6, out->a);
    out->D_opt = pow(C / 6, out->b) / out->G;
    out->tokens_per_param = out->D_opt / out->N_opt;
    out->L_opt = fit_loss_at(nat, out->N_opt, out->D_opt);
    return ST_OK;
}

st_status fit_compute_for_loss(const double *nat, double target, double *C)
{
    double A = nat[0], B = nat[1], E = nat[2], al = nat[3], be = nat[4];
    fit_alloc x;
    if (fit_allocate(nat, 6, &x) != ST_OK)
        return ST_EINVAL;
    if (!(target > E))
        return ST_ERANGE;
    /* L*(C) = E + K (C/6)^(-alpha beta/(alpha+beta)), K = A G^-alpha + B G^beta */
    double K = A * pow(x.G, -al) + B * pow(x.G, be);
    *C = 6 * pow((target - E) / K, -(al + be) / (al * be));
    return ST_OK;
}
