/*
 * law.c — the law forms as strategy objects: each gives log y and d(log y)/d(theta)
 * analytically (checked against central differences in tests/fit/test_fit_laws.c) and a default
 * multi-start grid. Log-sum-exp forms keep A, B, E > 0 without bounds (Hoffmann et al. 2022 §D.2).
 * Not here: objectives and optimisation (objective.c, fit.c). Depends on libm only.
 */
#include "fit/fit_int.h"

#include <math.h>
#include <string.h>

/* Log-sum-exp of three terms: returns LSE, p receives the softmax weights. The largest term
 * contributes exp(0) = 1, so only two exponentials and one division are needed (hot path). */
static inline double lse3(double t0, double t1, double t2, double *p)
{
    double m, ea, eb, inv;
    if (t0 >= t1 && t0 >= t2) {
        m = t0;
        ea = exp(t1 - m);
        eb = exp(t2 - m);
        inv = 1 / (1 + ea + eb);
        p[0] = inv, p[1] = ea * inv, p[2] = eb * inv;
    } else if (t1 >= t2) {
        m = t1;
        ea = exp(t0 - m);
        eb = exp(t2 - m);
        inv = 1 / (1 + ea + eb);
        p[0] = ea * inv, p[1] = inv, p[2] = eb * inv;
    } else {
        m = t2;
        ea = exp(t0 - m);
        eb = exp(t1 - m);
        inv = 1 / (1 + ea + eb);
        p[0] = ea * inv, p[1] = eb * inv, p[2] = inv;
    }
    return m + log(1 + ea + eb);
}

static inline double lse2(double t0, double t1, double *p)
{
    double m = fmax(t0, t1), e = exp(-fabs(t0 - t1)), inv = 1 / (1 + e);
    p[0] = t0 >= t1 ? inv : e * inv;
    p[1] = t0 >= t1 ? e * inv : inv;
    return m + log(1 + e);
}

/* ---- Chinchilla: log L = LSE(a - alpha ln N, b - beta ln D, e) (Hoffmann eq. 2, §D.2) ---- */

static double chin_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    double p[3];
    double v = lse3(th[0] - th[3] * lx[0], th[1] - th[4] * lx[1], th[2], p);
    if (g) {
        g[0] = p[0];
        g[1] = p[1];
        g[2] = p[2];
        g[3] = -p[0] * lx[0];
        g[4] = -p[1] * lx[1];
    }
    return v;
}

static const char *const chin_par[] = {"a", "b", "e", "alpha", "beta"};
static const char *const chin_nat[] = {"A", "B", "E", "alpha", "beta"};
static const char *const in_ND[] = {"N", "D"};
static const unsigned char chin_log[] = {1, 1, 1, 0, 0};
/* Hoffmann's grid: a, b in {0, 5, ..., 25}, e in {-1, -0.5, ..., 1}, alpha, beta in
 * {0, 0.5, ..., 2}: 6·6·5·5·5 = 4500 starts. */
static const double g_ab[] = {0, 5, 10, 15, 20, 25};
static const double g_e[] = {-1, -0.5, 0, 0.5, 1};
static const double g_exp[] = {0, 0.5, 1, 1.5, 2};
static const double *const chin_grid[] = {g_ab, g_ab, g_e, g_exp, g_exp};
static const size_t chin_glen[] = {6, 6, 5, 5, 5};

static const struct fit_law law_chinchilla = {
    "chinchilla", 5,         2,         chin_par,  chin_nat, in_ND,
    chin_log,     chin_eval, chin_grid, chin_glen, 1,        fit_chin_huber_log,
};

/* ---- Kaplan eq. 1.5: log L = aD LSE((aN/aD)(ln Nc - ln N), ln Dc - ln D) ---------------- */

static double kap_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    double r = th[2] / th[3], d0 = th[0] - lx[0], p[2];
    double s = lse2(r * d0, th[1] - lx[1], p);
    if (g) {
        g[0] = p[0] * th[2];
        g[1] = p[1] * th[3];
        g[2] = p[0] * d0;
        g[3] = s - p[0] * r * d0;
    }
    return th[3] * s;
}

static const char *const kap_par[] = {"ln_Nc", "ln_Dc", "alpha_N", "alpha_D"};
static const char *const kap_nat[] = {"Nc", "Dc", "alpha_N", "alpha_D"};
static const unsigned char kap_log[] = {1, 1, 0, 0};
static const double g_kc[] = {20, 25, 30, 35};
static const double g_ka[] = {0.05, 0.1, 0.3};
static const double *const kap_grid[] = {g_kc, g_kc, g_ka, g_ka};
static const size_t kap_glen[] = {4, 4, 3, 3};
static const struct fit_law law_kaplan = {
    "kaplan", 4, 2, kap_par, kap_nat, in_ND, kap_log, kap_eval, kap_grid, kap_glen, 0, NULL,
};

/* ---- saturating power law y = E + A x^-alpha: log y = LSE(a - alpha ln x, e) ------------- */

static double sat_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    double p[2];
    double v = lse2(th[0] - th[1] * lx[0], th[2], p);
    if (g) {
        g[0] = p[0];
        g[1] = -p[0] * lx[0];
        g[2] = p[1];
    }
    return v;
}

static const char *const sat_par[] = {"a", "alpha", "e"};
static const char *const sat_nat[] = {"A", "alpha", "E"};
static const char *const in_C[] = {"C"};
static const unsigned char sat_log[] = {1, 0, 1};
static const double g_sa[] = {0, 2.5, 5, 7.5, 10, 12.5, 15, 17.5, 20, 22.5, 25};
static const double g_salpha[] = {0.05, 0.1, 0.2, 0.35, 0.5, 1};
static const double *const sat_grid[] = {g_sa, g_salpha, g_e};
static const size_t sat_glen[] = {11, 6, 5};
static const struct fit_law law_saturating = {
    "saturating", 3, 1, sat_par, sat_nat, in_C, sat_log, sat_eval, sat_grid, sat_glen, 0, NULL,
};

/* ---- product power laws: log y = ln k + sum_i p_i ln x_i ---------------------------------- */

static double pow1_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    if (g) {
        g[0] = 1;
        g[1] = lx[0];
    }
    return th[0] + th[1] * lx[0];
}

static double pow2_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    if (g) {
        g[0] = 1;
        g[1] = lx[0];
        g[2] = lx[1];
    }
    return th[0] + th[1] * lx[0] + th[2] * lx[1];
}

static const char *const pow_par[] = {"ln_k", "p1", "p2"};
static const char *const pow_nat[] = {"k", "p1", "p2"};
static const char *const in_X[] = {"x1", "x2"};
static const unsigned char pow_log[] = {1, 0, 0};
static const double g_pk[] = {-5, 0, 5};
static const double g_pp[] = {-1, 0, 1};
static const double *const pow_grid[] = {g_pk, g_pp, g_pp};
static const size_t pow_glen[] = {3, 3, 3};
static const struct fit_law law_power1 = {
    "power1", 2, 1, pow_par, pow_nat, in_X, pow_log, pow1_eval, pow_grid, pow_glen, 0, NULL,
};
static const struct fit_law law_power2 = {
    "power2", 3, 2, pow_par, pow_nat, in_X, pow_log, pow2_eval, pow_grid, pow_glen, 0, NULL,
};

/* ---- Muennighoff et al. 2023 eq. 5–7: effective data D' and parameters N' ----------------- */

/* U' = U (1 + R* (1 - exp(-R/R*))), R = X/U - 1. Returns ln U'; d_lrs = d ln U' / d ln R*,
 * d_lu = d ln U' / d ln U at fixed X. */
static double effective(double X, double U, double rs, double *d_lrs, double *d_lu)
{
    double R = X / U - 1, q = R / rs, E = exp(-q);
    double up = U * (1 + rs * (1 - E));
    *d_lrs = rs * U * (1 - E - q * E) / up;
    *d_lu = U * (1 + rs * (1 - E) - E * X / U) / up;
    return log(up);
}

static double mue_eval(const double *th, const double *x, const double *lx, double *g)
{
    double al = th[3], be = th[4], rd = exp(th[5]), rn = exp(th[6]);
    /* N_opt(U_D) = (alpha A / (beta B))^(1/alpha) U_D^(beta/alpha) (from Chinchilla eq. 4) */
    double k = log(al) + th[0] - log(be) - th[1];
    double lnopt = k / al + (be / al) * lx[2];
    double dld_lrd, dld_lu, lnd = effective(x[1], x[2], rd, &dld_lrd, &dld_lu);
    double lnn = lx[0], dln_lrn = 0, dln_lun = 0;
    if (lx[0] > lnopt)
        lnn = effective(x[0], exp(lnopt), rn, &dln_lrn, &dln_lun);
    double p[3];
    double v = lse3(th[0] - al * lnn, th[1] - be * lnd, th[2], p);
    if (g) {
        /* d ln N'/d theta through ln U_N = ln N_opt (zero when U_N = N) */
        double c = -p[0] * al * dln_lun;
        g[0] = p[0] + c / al;
        g[1] = p[1] - c / al;
        g[2] = p[2];
        g[3] = -p[0] * lnn + c * (1 / (al * al) - k / (al * al) - be * lx[2] / (al * al));
        g[4] = -p[1] * lnd + c * (-1 / (al * be) + lx[2] / al);
        g[5] = -p[1] * be * dld_lrd;
        g[6] = -p[0] * al * dln_lrn;
    }
    return v;
}

static const char *const mue_par[] = {"a", "b", "e", "alpha", "beta", "ln_RD", "ln_RN"};
static const char *const mue_nat[] = {"A", "B", "E", "alpha", "beta", "R_D", "R_N"};
static const char *const in_NDU[] = {"N", "D", "U"};
static const unsigned char mue_log[] = {1, 1, 1, 0, 0, 1, 1};
static const double g_ma[] = {5, 10};
static const double g_me[] = {0, 0.5};
static const double g_mx[] = {0.25, 0.5};
static const double g_mrd[] = {1.609438, 2.708050}; /* ln 5, ln 15 */
static const double g_mrn[] = {0.693147, 1.609438}; /* ln 2, ln 5 */
static const double *const mue_grid[] = {g_ma, g_ma, g_me, g_mx, g_mx, g_mrd, g_mrn};
static const size_t mue_glen[] = {2, 2, 2, 2, 2, 2, 2};
static const struct fit_law law_muennighoff = {
    "muennighoff", 7, 3, mue_par, mue_nat, in_NDU, mue_log, mue_eval, mue_grid, mue_glen, 1, NULL,
};

/* ---- Gadre et al. 2024 eq. 4: log L = LSE(e, ln a + eta ln M - eta ln C, ln b - eta ln M -
 * eta ln C) ------------------------------------------------------------------------------ */

static double gad_eval(const double *th, const double *x, const double *lx, double *g)
{
    (void)x;
    double p[3], et = th[3];
    double v = lse3(th[0], th[1] + et * (lx[1] - lx[0]), th[2] - et * (lx[1] + lx[0]), p);
    if (g) {
        g[0] = p[0];
        g[1] = p[1];
        g[2] = p[2];
        g[3] = p[1] * (lx[1] - lx[0]) - p[2] * (lx[1] + lx[0]);
    }
    return v;
}

static const char *const gad_par[] = {"e", "ln_a", "ln_b", "eta"};
static const char *const gad_nat[] = {"E", "a", "b", "eta"};
static const char *const in_CM[] = {"C", "M"};
static const unsigned char gad_log[] = {1, 1, 1, 0};
static const double g_ge[] = {-1, 0, 0.5, 1};
static const double g_gab[] = {0, 5, 10, 15, 20};
static const double g_geta[] = {0.05, 0.1, 0.2, 0.4};
static const double *const gad_grid[] = {g_ge, g_gab, g_gab, g_geta};
static const size_t gad_glen[] = {4, 5, 5, 4};
static const struct fit_law law_gadre = {
    "gadre", 4, 2, gad_par, gad_nat, in_CM, gad_log, gad_eval, gad_grid, gad_glen, 0, NULL,
};

/* ---- registry and accessors --------------------------------------------------------------- */

const fit_law *const fit_law_chinchilla = &law_chinchilla;
const fit_law *const fit_law_kaplan = &law_kaplan;
const fit_law *const fit_law_saturating = &law_saturating;
const fit_law *const fit_law_power1 = &law_power1;
const fit_law *const fit_law_power2 = &law_power2;
const fit_law *const fit_law_muennighoff = &law_muennighoff;
const fit_law *const fit_law_gadre = &law_gadre;

static const fit_law *const all_laws[] = {&law_chinchilla, &law_kaplan, &law_saturating,
                                          &law_power1,     &law_power2, &law_muennighoff,
                                          &law_gadre};
#define N_LAWS (sizeof(all_laws) / sizeof(all_laws[0]))

const fit_law *fit_law_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_LAWS; i++)
        if (!strcmp(all_laws[i]->name, name))
            return all_laws[i];
    return NULL;
}

const char *fit_law_list(size_t i)
{
    return i < N_LAWS ? all_laws[i]->name : NULL;
}

const char *fit_law_name(const fit_law *law)
{
    return law->name;
}

size_t fit_law_n_params(const fit_law *law)
{
    return law->n_par;
}

size_t fit_law_n_inputs(const fit_law *law)
{
    return law->n_in;
}

const char *fit_law_param_name(const fit_law *law, size_t i)
{
    return i < law->n_par ? law->par_names[i] : NULL;
}

const char *fit_law_natural_name(const fit_law *law, size_t i)
{
    return i < law->n_par ? law->nat_names[i] : NULL;
}

const char *fit_law_input_name(const fit_law *law, size_t i)
{
    return i < law->n_in ? law->in_names[i] : NULL;
}

void fit_law_natural(const fit_law *law, const double *theta, double *natural)
{
    for (size_t i = 0; i < law->n_par; i++)
        natural[i] = law->is_log[i] ? exp(theta[i]) : theta[i];
}

st_status fit_law_theta(const fit_law *law, const double *natural, double *theta)
{
    for (size_t i = 0; i < law->n_par; i++) {
        if (law->is_log[i] && !(natural[i] > 0))
            return ST_EINVAL;
        theta[i] = law->is_log[i] ? log(natural[i]) : natural[i];
    }
    return ST_OK;
}

double fit_law_eval(const fit_law *law, const double *theta, const double *x, double *grad)
{
    double lx[FIT_MAX_PAR];
    for (size_t j = 0; j < law->n_in; j++)
        lx[j] = log(x[j]);
    return law->eval(theta, x, lx, grad);
}
