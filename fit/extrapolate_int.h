/*
 * extrapolate_int.h — private to fit/extrapolate*.c: the extrapolator's state, shared by the
 * front analysis (extrapolate.c) and the model of every run (extrapolate_model.c).
 * Shapes: n runs, P parameters, R bootstrap replicates; matrices are row-major.
 */
#ifndef FIT_EXTRAPOLATE_INT_H
#define FIT_EXTRAPOLATE_INT_H

#include "fit/extrapolate.h"

#define XP_MAX_HP    8 /* hyperparameters in the model (roles LR, BATCH, OTHER) */
/* model parameters: Chinchilla (a, b, e, alpha, beta) + per hyper k (a_k, sN, sD, ln c, ln kap,
 * t_k0 .. t_k(k-1)): hyper k's optimum also moves with the hypers before it (triangular) */
#define XP_NTH       (5 + 5 * XP_MAX_HP + XP_MAX_HP * (XP_MAX_HP - 1) / 2)
#define XP_HP_OFF(k) (5 + 5 * (k) + (k) * ((k)-1) / 2)
#define XP_NG        4 /* logistic coefficients of the stability boundary */

typedef struct xp_model {
    size_t n_hp;                /* hyperparameters modelled */
    size_t hp_param[XP_MAX_HP]; /* their parameter indices */
    size_t n_th;                /* XP_HP_OFF(n_hp) */
    double hp_mean[XP_MAX_HP];  /* centres of the hypers' basic coordinates */
    double th[XP_NTH];          /* fitted on all successes */
    double *th_rep;             /* R × XP_NTH replicates */
    double sigma;               /* residual sd of ln loss */
    double lN0, lD0;            /* centres of ln N and ln D (hyper laws use lN - lN0, lD - lD0) */
    int has_div;                /* a logistic boundary was fitted */
    size_t lr_param;            /* index of the learning rate parameter */
    size_t wu_param;            /* index of the warmup-like parameter, (size_t)-1 if none */
    double g[XP_NG];            /* logistic on (1, ln lr - m_lr, lN - lN0, w - m_w) */
    double m_lr, m_w;           /* centres of the logistic's covariates */
    double *g_rep;              /* R × XP_NG */
    double cost_k;              /* cost = exp(cost_k) N D */
    /* ln N = size_c[0] + sum_j size_c[1+j] b_j over the SIZE parameters (NAN when none) */
    size_t n_size, size_param[XP_MAX_HP];
    double size_c[1 + XP_MAX_HP];
    double fail_loss;
    size_t n_rep;
} xp_model;

struct fit_xp {
    char err[ST_ERRMSG_MAX];
    fit_xp_options o;
    /* runs */
    size_t P, n;
    fit_xp_param *par; /* names owned */
    fit_xp_role *role; /* resolved */
    double *x;         /* n × P */
    double *b;         /* n × P basic coordinates */
    double *cost, *obj, *N, *D;
    int *failed;
    size_t n_ok;
    /* front */
    size_t n_front;
    size_t *front_run, *front_count;
    double *front_cost, *front_obj;
    int *front_law_ok;      /* P */
    double *front_coef;     /* P × 2 */
    double *front_rep;      /* R × P × 2 */
    double *front_slope_ci; /* P × 2 */
    int loss_law_ok;
    double loss_nat[3];
    double *loss_rep; /* R × 3 natural */
    size_t n_front_rep;
    /* the front's stability boundary (extrapolate_front_boundary.c):
     * logit P(fail) = fb_g[0] + fb_g[1] (b_lr - fb_m_lr) + fb_g[2] (ln cost - fb_m_lc) */
    size_t fb_lr;      /* index of the learning rate, (size_t)-1 when none */
    int fb_ok;         /* the boundary was fitted */
    size_t fb_n_fail;  /* failed runs in the sweep (real ones, not the prior's) */
    size_t fb_n_prior; /* pseudo-failures of the prior */
    double fb_g[3];    /* fitted on every run and the prior */
    double fb_m_lr;    /* centre of the learning rate's basic coordinate */
    double fb_m_lc;    /* centre of ln cost */
    double *fb_g_rep;  /* fb_n_rep × 3 run-bootstrap replicates */
    size_t fb_n_rep;
    char unsafe_text[512];
    /* model */
    int has_model;
    xp_model m;
    /* result */
    int done;
    fit_xp_result res;
    double *rec, *rec_lo, *rec_hi; /* P */
    char warn_text[1024];
};

/* Sets xp->err from fmt and returns s. */
st_status xp_fail(fit_xp *xp, st_status s, const char *fmt, ...);

/* Basic coordinate of value v in space s, and back. */
double xp_to_basic(fit_xp_space s, double v);
double xp_from_basic(fit_xp_space s, double b);
/* Clamps and rounds value of parameter i; sets *clamped when a bound was hit. */
double xp_finish_value(const fit_xp *xp, size_t i, double v, int *clamped);

/* Appends a warning (bit may be 0) to the result. */
void xp_add_warning(fit_xp *xp, unsigned bit, const char *text);

/* The front (extrapolate_front.c): groups and front into xp->front_*; the laws along it and
 * their group bootstrap; the FRONT recommendation at C into xp->rec*, xp->res. */
st_status xp_front(fit_xp *xp);
st_status xp_front_laws(fit_xp *xp);
st_status xp_front_recommend_fill(fit_xp *xp, double C);
/* The front's stability boundary (extrapolate_front_boundary.c): the logistic fit and its
 * replicates (ST_OK also when there is no learning rate: then fb_ok = 0); holding the FRONT
 * recommendation at C to it (lowers the learning rate, sets res.p_diverge, res.safe, warnings);
 * freeing. */
st_status xp_front_boundary_fit(fit_xp *xp);
st_status xp_front_boundary_apply(fit_xp *xp, double C);
void xp_front_boundary_clear(fit_xp *xp);

/* The model (extrapolate_model.c): fit on xp's runs (ST_OK, or ST_EEMPTY / ST_ENUMERIC with
 * xp->err set), the recommendation at C into xp->rec*, xp->res; freeing. */
st_status xp_model_fit(fit_xp *xp);
st_status xp_model_recommend(fit_xp *xp, double C);
void xp_model_clear(xp_model *m);
/* ln N of a parameter row x (via the N parameter or the SIZE regression), NAN if unknown. */
double xp_model_lnN(const fit_xp *xp, const double *x);

#endif /* FIT_EXTRAPOLATE_INT_H */
