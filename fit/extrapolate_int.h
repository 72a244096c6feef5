/*
 * extrapolate_int.h — private to fit/extrapolate*.c: the extrapolator's state, shared by the
 * driver (extrapolate.c), the front analysis (extrapolate_front*.c) and the model of every run
 * (extrapolate_model.c: the model's objectives and minimisers; extrapolate_model_fit.c: its fit;
 * extrapolate_recommend.c: the recommendation and predictions). tests/fit/test_fit_extrapolate.c
 * checks the objectives' gradients through the declarations below. Shapes: n runs, P parameters, R
 * bootstrap replicates; matrices are row-major.
 */
#ifndef FIT_EXTRAPOLATE_INT_H
#define FIT_EXTRAPOLATE_INT_H

#include "fit/extrapolate.h"

/* what this header declares is internal: hidden from libscaletune.so's exports (the static
 * library and the tests still link it); common/scaletune.map exports the public API */
#pragma GCC visibility push(hidden)

#define XP_MAX_HP 8 /* hyperparameters in the model (roles LR, BATCH, OTHER) */

/*
 * The model's parameter vector th: the Chinchilla part
 *   ln L = LSE(a - alpha ln N, b - beta ln D, e) + ln(1 + sum_k penalty_k),
 * then one block per modelled hyperparameter k at XP_HP_OFF(k), of XP_HP_LEN(k) slots: the law
 * of its optimum b_k* = a_k + sN_k lNc + sD_k lDc + sum_{j<k} t_kj bh_j (lNc, lDc: ln N, ln D
 * minus their centres; bh: centred basic coordinates; triangular: hyper k's optimum also moves
 * with the hypers before it) and the shape of its penalty
 *   kap_k (1 - exp(-c_k u_k^2 / kap_k)), u_k = bh_k - b_k*.
 */
enum {
    XP_TH_A = 0, /* a: ln of the N term's scale */
    XP_TH_B,     /* b: ln of the D term's scale */
    XP_TH_E,     /* e: ln of the irreducible loss */
    XP_TH_ALPHA, /* alpha: N exponent */
    XP_TH_BETA,  /* beta: D exponent */
    XP_TH_CHIN   /* slots of the Chinchilla part; hyper 0's block starts here */
};
enum {
    XP_HP_ICPT = 0, /* a_k: the optimum at the centres (centred basic coordinate) */
    XP_HP_SLOPE_N,  /* sN_k: d b_k* / d ln N */
    XP_HP_SLOPE_D,  /* sD_k: d b_k* / d ln D */
    XP_HP_LN_CURV,  /* ln c_k: curvature of the penalty at the optimum */
    XP_HP_LN_SAT,   /* ln kap_k: the penalty's saturation far from it */
    XP_HP_COUPLING  /* + j: t_kj, the coupling to hyper j < k */
};
#define XP_HP_LEN(k) (XP_HP_COUPLING + (k)) /* slots of hyper k's block */
#define XP_HP_OFF(k) (XP_TH_CHIN + XP_HP_COUPLING * (k) + (k) * ((k)-1) / 2)
/* Categorical factors (docs/algorithms/extrapolation.md, "Categorical parameters"): after the
 * hyper blocks, XP_LV_LEN slots per non-reference level q of every factor at XP_LV_OFF(n_hp, q):
 * its offset in ln loss and the shift of the learning rate's optimum (centred basic coordinate). */
#define XP_MAX_FAC   4  /* categorical parameters in the model */
#define XP_MAX_LV    16 /* non-reference levels over all of them */
enum { XP_LV_DELTA = 0, XP_LV_LRSHIFT, XP_LV_LEN };
#define XP_LV_OFF(n_hp, q) (XP_HP_OFF(n_hp) + XP_LV_LEN * (q))
#define XP_NTH             XP_LV_OFF(XP_MAX_HP, XP_MAX_LV) /* the largest parameter vector */
/* kap's ridge centre and start (a penalty that saturates at a 10% loss increase) */
#define XP_SAT_CENTRE      0.1

/* The logistic stability boundary P(fail) = sigma(g . (1, z)) on the centred covariates z of a
 * run: z[XP_Z_LR] = b_lr - m_lr, z[XP_Z_LN] = ln N - lN0, z[XP_Z_W] = w - m_w (b_lr: the learning
 * rate's basic coordinate; w: xp_boundary_w, how far the warmup-like parameter falls short of its
 * law's optimum at the run when that law is modelled, 0 without a warmup). */
enum { XP_G_ICPT = 0, XP_G_LR, XP_G_LN, XP_G_W, XP_NG };
enum { XP_Z_LR = 0, XP_Z_LN, XP_Z_W, XP_NZ };

typedef struct xp_model {
    size_t n_hp;                /* hyperparameters modelled */
    size_t hp_param[XP_MAX_HP]; /* their parameter indices */
    size_t n_th;                /* XP_HP_OFF(n_hp) */
    double hp_mean[XP_MAX_HP];  /* centres of the hypers' basic coordinates */
    double th[XP_NTH];          /* fitted on all successes */
    double *th_rep;             /* R × XP_NTH replicates */
    double *th_iv;              /* n_iv × XP_NTH replicates of the loss's interval (th_rep when
                                 * they are the same) */
    size_t n_iv;
    double sigma;     /* residual sd of ln loss */
    double lN0, lD0;  /* centres of ln N and ln D (hyper laws use lN - lN0, lD - lD0) */
    int has_div;      /* a logistic boundary was fitted */
    size_t lr_param;  /* index of the learning rate parameter */
    size_t wu_param;  /* index of the warmup-like parameter, (size_t)-1 if none */
    double g[XP_NG];  /* logistic coefficients (XP_G_*) */
    double m_lr, m_w; /* centres of the logistic's covariates */
    double *g_rep;    /* R × XP_NG */
    double cost_k;    /* cost = exp(cost_k) N D */
    /* ln N = size_c[0] + sum_j size_c[1+j] b_j over the SIZE parameters (NAN when none); with
     * size_log, on ln x_j in place of b_j */
    size_t n_size, size_param[XP_MAX_HP];
    double size_c[1 + XP_MAX_HP];
    int size_log;
    /* ln D = tok_c[0] + sum_j tok_c[1+j] ln x_j over the STEPS and BATCH parameters when a STEPS
     * parameter sets the tokens and D comes from the runs (n_tok 0 otherwise); tok_solve is the
     * index into tok_param of the STEPS parameter the recommendation solves for */
    size_t n_tok, tok_param[XP_MAX_HP], tok_solve;
    double tok_c[1 + XP_MAX_HP];
    double fail_loss;
    size_t n_rep;
    /* categorical factors: parameter indices, reference levels, their levels' first slot index
     * q (level l != ref has q = fac_q0 + l - (l > ref)), successful runs per level */
    size_t n_fac, n_lv;
    size_t fac_param[XP_MAX_FAC], fac_ref[XP_MAX_FAC], fac_q0[XP_MAX_FAC];
    size_t fac_n_ok[XP_MAX_FAC][FIT_XP_MAX_LEVELS];
    /* the factor whose levels set the model size (each level one N, levels apart: model:
     * {choices: [small, large]} with N from the runs' records), NONE if none; ln N of each of
     * its levels (NAN for a level no run gave N) */
    size_t size_fac;
    double size_fac_lN[FIT_XP_MAX_LEVELS];
    size_t k_lr; /* the learning rate's hyper index, (size_t)-1 when not modelled */
    size_t k_wu; /* the warmup's hyper index when its law is modelled, else (size_t)-1 */
} xp_model;

struct fit_xp {
    char err[ST_ERRMSG_MAX];
    fit_xp_options o;
    /* runs */
    size_t P, n;
    fit_xp_param *par; /* names owned */
    fit_xp_role *role; /* resolved */
    char ***lv_names;  /* P: a categorical's level names (owned), NULL for the others */
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
    /* curve points (extrapolate_curves.c): n_cp extra rows of the model's loss fit, grouped by
     * run (cp_off: n + 1 offsets; run i's points are cp_off[i] .. cp_off[i + 1] - 1) */
    size_t n_cp, cp_max;      /* points; the most of one run */
    size_t *cp_off;           /* n + 1, NULL without points */
    double *cp_D, *cp_obj;    /* n_cp each, in run order */
    unsigned char *cp_branch; /* n_cp: 1 for a cooldown branch's final (keeps the warmup steps) */
    double cp_weight;         /* a run's points weigh this much in all in the point fit */
    /* model */
    int has_model;
    xp_model m;
    /* result */
    int done;
    fit_xp_result res;
    double *rec, *rec_lo, *rec_hi; /* P */
    char warn_text[4096];
    char clamp_names[320]; /* the clamped parameters of the last recommendation, for its warning */
};

/* Curve points (extrapolate_curves.c): freeing (fit_xp_set_runs and destroy call it); the
 * rows n + c of the model's arrays for the points of usable runs (usable[i]: run i is a row of
 * the loss fit) with lN, ly, bh copied from their run and wt the point's weight in the fit
 * (wt[i] = 1 for the runs), their indices appended to rows; returns how many. */
void xp_curves_free(fit_xp *xp);
size_t xp_curves_rows(const fit_xp *xp, const int *usable, size_t nh, double *lN, double *lD,
                      double *ly, double *bh, double *wt, size_t *rows);

/* Sets xp->err from fmt and returns s. */
st_status xp_fail(fit_xp *xp, st_status s, const char *fmt, ...);

/* Basic coordinate of value v in space s, and back. */
double xp_to_basic(fit_xp_space s, double v);
double xp_from_basic(fit_xp_space s, double b);
/* Clamps and rounds value of parameter i; sets *clamped when a bound was hit. */
double xp_finish_value(const fit_xp *xp, size_t i, double v, int *clamped);
/* xp_finish_value for the recommendation: a parameter it clamps is named in xp->clamp_names
 * ("lr (to its max 0.3)"; xp_clamp_reset empties it), for the warning xp_clamp_warn adds. */
double xp_finish_rec(fit_xp *xp, size_t i, double v);
void xp_clamp_reset(fit_xp *xp);
/* Adds "a recommended value was clamped to its bound: NAMES" (bit FIT_XP_WARN_BOUND) when
 * xp->clamp_names is not empty. */
void xp_clamp_warn(fit_xp *xp);

/* Appends a warning (bit may be 0) to the result. */
void xp_add_warning(fit_xp *xp, unsigned bit, const char *text);
/* FIT_XP_WARN_EXP_LIMIT if th's alpha or beta sits at its search limit (extrapolate_model.c). */
void xp_exp_limit_warn(fit_xp *xp, const double *th);

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

/* The model (extrapolate_model_fit.c): fit on xp's runs (ST_OK, or ST_EEMPTY / ST_ENUMERIC with
 * xp->err set); freeing. The recommendation at C into xp->rec*, xp->res (extrapolate_recommend.c).
 */
st_status xp_model_fit(fit_xp *xp);
st_status xp_model_recommend(fit_xp *xp, double C);
void xp_model_clear(xp_model *m);
/* Is parameter j active in the row of values x (its parent chain holds levels in the masks)? */
int xp_param_active(const fit_xp *xp, size_t j, const double *x);
/* Sets to NAN the entries of the row x (P; a categorical's entry its level) of the parameters
 * inactive in it, parents first. */
void xp_settle_active(const fit_xp *xp, double *x);
/* The level slot q of factor f's level l (a non-reference level), (size_t)-1 for the reference. */
size_t xp_level_slot(const xp_model *m, size_t f, size_t l);
/* For a full basic row b (P; a categorical's basic coordinate is its level index): the sum of its
 * levels' offsets in ln loss under th and of their shifts of the learning rate's optimum. */
void xp_level_terms(const fit_xp *xp, const double *th, const double *b, double *delta,
                    double *lr_shift);
/* ln N of a parameter row x (via the N parameter or the SIZE regression), NAN if unknown. */
/* extrapolate_sizes.c: the SIZE and tokens regressions and the size-setting factor (m->n_size,
 * m->n_tok, m->size_fac), after choose_factors. */
st_status xp_sizes_fit(fit_xp *xp);
double xp_model_lnN(const fit_xp *xp, const double *x);
/* ln D of the full row x: the D parameter's, else the STEPS regression's (m->tok_c), else NAN. */
double xp_model_lnD(const fit_xp *xp, const double *x);

/* ---- the model's objectives and minimisers (extrapolate_model.c) ---------------------------- */

/* Hyper k's optimum b_k* (centred basic coordinate) under its block h = &th[XP_HP_OFF(k)] at
 * lNc = ln N - lN0, lDc = ln D - lD0 and the centred coordinates bh of the hypers before it (an
 * inactive one, NAN, counts as at its centre). A hyper whose bh is NAN (a conditional parameter
 * inactive in the run) adds no penalty in xp_jm_eval. */
double xp_hp_optimum(const double *h, size_t k, double lNc, double lDc, const double *bh);

/* A hyper law is flat when its curvature is under XP_FLAT_CURV: the runs show no bowl, so its
 * optimum is placed at the best runs (xp_hyper_flat_anchor) and the loss it predicts does not
 * depend on the hyper's value. */
#define XP_FLAT_CURV 1e-4
int xp_hp_flat(const double *th, size_t k);

/* The stability boundary's warmup covariate (uncentred) of the full basic row b at (lN, lD): how
 * far the warmup falls short of its optimum under the point fit m->th (k_wu; lD NAN: at lD0), its
 * basic coordinate less the optimum's, capped at 0; the coordinate itself when its law is not
 * modelled; 0 without a warmup. One-sided: a warmup shorter than its optimum may lower the largest
 * stable learning rate, and that a longer one raises it is not assumed. Linear in both directions
 * the boundary let the recommendation buy learning rate with warmup beyond its optimum, or with a
 * smaller batch (which shortens the warmup's optimum through its law's coupling): world 39 at
 * 1000x, a batch 0.7x and a learning rate 1.19x the largest stable one (it diverged). */
double xp_boundary_w(const fit_xp *xp, double lN, double lD, const double *b);

/* ln L of model th (XP_HP_OFF(n_hp) parameters) at one run and, if g != NULL, d ln L / d th.
 * bh: the run's n_hp centred basic coordinates of the modelled hyperparameters. */
double xp_jm_eval(const double *th, size_t n_hp, double lN, double lD, double lN0, double lD0,
                  const double *bh, double *g);

/* The joint fit's objective: 0.5 sum_rows (ln L - ln y)^2 + the priors and ridges, over the free
 * parameters (the others held at full[]). */
typedef struct xp_jm_data {
    size_t n_hp;
    size_t n;                   /* rows */
    const size_t *rows;         /* n indices into the arrays below */
    const double *lN, *lD, *ly; /* per run (all runs) */
    const double *bh;           /* runs × n_hp centred basic coordinates of the hypers */
    double lN0, lD0;
    const double *wt;          /* per row weight of its squared residual, NULL: all 1 */
    size_t n_th, n_free;       /* n_th = XP_HP_OFF(n_hp) */
    size_t free_idx[XP_NTH];   /* the free parameters' slots, increasing */
    double full[XP_NTH];       /* every parameter; the held ones keep these values */
    double w_ab, mu_ab, sd_ab; /* the prior on alpha - beta: weight, centre, sd */
    double w_e, mu_e, sd_e;    /* the prior on e = ln E: weight, centre, sd */
    /* categorical factors: per run n_fac level slots q (fq, runs × n_fac; (size_t)-1: the
     * reference level); ln L gains th[XP_LV_OFF(n_hp, q) + XP_LV_DELTA] and the learning rate's
     * optimum (hyper k_lr's intercept) moves by th[.. + XP_LV_LRSHIFT]; the later hypers'
     * couplings see the learning rate itself */
    size_t n_fac, k_lr;
    const size_t *fq;
    /* Gaussian priors on hyper and level slots j >= XP_TH_CHIN: weight pw[j] (0: none) towards
     * pmu[j], whose sd is psd[j] (the bootstrap draws each replicate's centres from them) */
    double pw[XP_NTH], pmu[XP_NTH], psd[XP_NTH];
    /* per hyper: an upper bound of its curvature below the search box's (0: none), set where
     * the first fit's bowl was narrower than the runs could show (extrapolate_model_fit.c) */
    double curv_cap[XP_MAX_HP];
} xp_jm_data;
/* ln L of row i of d under th with its levels' terms; g (may be NULL): d ln L / d th (n_th). */
double xp_jm_row_eval(const xp_jm_data *d, const double *th, size_t i, double *g);
/* NLopt objective: xf the n_free free parameters, gf (may be NULL) its gradient. */
double xp_jm_objective(unsigned nf, const double *xf, double *gf, void *data);
/* Minimises from th (n_th, updated) within the search box; the objective (INFINITY on failure). */
double xp_jm_minimise(xp_jm_data *d, double *th, size_t max_eval);

/* The boundary's objective: -log likelihood of the failed flags + a ridge on the slopes. */
typedef struct xp_lg_data {
    size_t n;
    const size_t *rows;
    const double *z; /* runs × XP_NZ centred covariates */
    const int *y;    /* failed */
    int use_w;       /* the warmup covariate is in (XP_NG coefficients; else XP_NG - 1) */
    /* The slope tie (0 weight: none): + tie_w (g_LN + tie_slope g_LR)^2, a Gaussian prior that the
     * boundary's ln lr moves with ln N as -g_LN / g_LR = tie_slope (linearised at a fitted g_LR).
     */
    double tie_slope, tie_w;
} xp_lg_data;
double xp_lg_objective(unsigned nv, const double *g, double *grad, void *data);
/* Minimises from g (XP_NG, updated; g[XP_G_W] = 0 without use_w); 1 on success. */
int xp_lg_minimise(xp_lg_data *d, double *g);

/* ---- the priors (extrapolate_priors.c) ---- */
/* The literature priors of the hyperparameter laws, each sd scaled by o.prior_law_sd, weighted
 * sigma^2 / (2 sd^2); hyper k_wd (NONE: none) is left to its timescale prior. */
void xp_law_priors_set(const fit_xp *xp, xp_jm_data *d, size_t k_wd, double sigma);
/* The categorical levels' priors (offset and lr shift towards 0). */
void xp_level_priors_set(const fit_xp *xp, xp_jm_data *d, double sigma);
/* The hyper index of a weight decay under the AdamW timescale prior, (size_t)-1 if none. */
size_t xp_wd_prior_hyper(const fit_xp *xp);
/* The timescale prior on hyper k_wd's slopes and couplings. */
void xp_wd_prior_set(const fit_xp *xp, xp_jm_data *d, size_t k_wd, double sigma);
/* The priors' centres of the point fit, kept while the bootstrap draws each replicate's. */
typedef struct xp_prior_centres {
    double pmu[XP_NTH], mu_ab, mu_e, tie_slope, tie_w;
} xp_prior_centres;
void xp_prior_centres_save(const xp_jm_data *d, const xp_lg_data *L, xp_prior_centres *c);
void xp_prior_centres_restore(xp_jm_data *d, xp_lg_data *L, const xp_prior_centres *c);
/* A replicate's prior centres, each drawn from a Gaussian of kap x its sd around c's. */
void xp_prior_centres_draw(xp_jm_data *d, const xp_prior_centres *c, st_rng *rng, double kap);

#pragma GCC visibility pop

#endif /* FIT_EXTRAPOLATE_INT_H */
