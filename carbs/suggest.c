/*
 * suggest.c — one suggestion (shared specs/carbs.md §5.4–5.7, §6): the random phase (a
 * quasi-random or Gaussian design around the search centre), the resample phase (re-run the
 * least-sampled Pareto group), and the Bayesian step: GP models of output, cost, failure and the
 * Pareto front, candidates drawn around Pareto origins from per-dimension truncated normals
 * (no rejection, no 2^D over-generation), scored by expected improvement over the front at the
 * candidate's predicted cost x locality x P(success) x cost cap (variances solved in full only
 * for the candidates whose bound can still win, exact_scores). Batches place fantasies at the
 * picks of one fitted model. Never fails for want of a model: a fallback draws near the front.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_qrng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/models_int.h"

#define CAND_ROUNDS  4  /* rounds of Bayesian candidates drawn again in place of over-cap ones */
#define REDRAW_TRIES 32 /* redraws of a single-point phase before the descent */

/* ---- candidates and scores --------------------------------------------------------------- */

/* A candidate and the upper bound of its score. */
typedef struct bound {
    double ub;
    size_t j;
} bound;

typedef struct cands {
    size_t n;
    double *X;    /* n*D basic, rounded */
    double *w;    /* locality */
    double *ps;   /* P(success) */
    double *v;    /* Pareto value to beat (surrogate units) */
    double *chat; /* predicted cost (posterior mean) */
    double *capv; /* the cost checked against the cap (costcap.c) */
    int *ok;      /* not yet picked (every candidate kept is under the cap) */
    double *mu, *var;
    double *score;
    double *ltmp; /* 2*D: locality()'s workspace */
    bound *ord;   /* n: candidates by their score's upper bound (exact_scores) */
    double *Xg;   /* n*D: candidates whose variance is solved in full */
    double *mg, *vg;
} cands;

static void cands_clear(cands *k)
{
    free(k->X);
    free(k->w);
    free(k->ps);
    free(k->v);
    free(k->chat);
    free(k->capv);
    free(k->ok);
    free(k->mu);
    free(k->var);
    free(k->score);
    free(k->ltmp);
    free(k->ord);
    free(k->Xg);
    free(k->mg);
    free(k->vg);
    memset(k, 0, sizeof(*k));
}

/* log EI, finite even where EI underflows: EI ~ sigma phi(z) / z^2 as z -> -inf. */
static double log_ei(double mu, double sigma, double v, double xi)
{
    double ei = acq_ei(mu, sigma, v, xi);
    if (ei > 1e-300)
        return log(ei);
    if (!(sigma > 0))
        return -INFINITY;
    double z = (mu - v - xi) / sigma;
    if (z >= 0)
        return -INFINITY; /* unreachable: EI > 0 there */
    return log(sigma) - 0.5 * z * z - 0.5 * log(2 * M_PI) - 2 * log(-z);
}

/* The score of candidate j at variance var (>= 0): log EI + log locality + log P(success), or
 * their product in faithful mode. It cannot fall as var grows: EI rises with sigma (its
 * derivative is phi(z) > 0), except where log_ei switches to its asymptote below EI = 1e-300,
 * which lies above log EI by about 3/z^2 < 0.005 there (|z| > 25). */
static double score_at(carbs *c, const cands *k, size_t j, double var)
{
    double sd = sqrt(var > 0 ? var : 0);
    if (faithful(c))
        return acq_ei(k->mu[j], sd, k->v[j], xi_of(c)) * k->w[j] * k->ps[j];
    return log_ei(k->mu[j], sd, k->v[j], xi_of(c)) + log(k->w[j]) +
           log(k->ps[j] > 1e-300 ? k->ps[j] : 1e-300);
}

/* Whether a candidate whose score is at most ub can still beat (or tie) an exact score best:
 * the slack covers score_at's 0.005 in log mode and the rounding of EI in faithful mode. */
static int may_beat(carbs *c, double ub, double best)
{
    double slack = faithful(c) ? 1e-6 * fabs(best) : 0.01;
    return !(ub < best - slack);
}

/* Highest bound first (NaN first of all: solved in full), then by index. */
static int by_bound(const void *a, const void *b)
{
    const bound *x = a, *y = b;
    double u = isnan(x->ub) ? INFINITY : x->ub, w = isnan(y->ub) ? INFINITY : y->ub;
    if (u != w)
        return u > w ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

#define BOUND_MIN_N 200 /* output GP rows from which candidates are scored by bounds first */
#define EXACT_FIRST 16  /* candidates solved in full before the first cut */
#define EXACT_BLOCK 64  /* at most this many per full solve after it */

/*
 * Scores every candidate as the full GP would, solving its variance in full (O(n^2) each) only
 * where it can matter: k->score holds upper bounds (from gp_predict_bound's variance bound) on
 * entry; the candidates are solved in full in order of their bound, and once the best exact
 * score is more than may_beat's slack above a candidate's bound, that candidate and all after
 * it keep their bounds, which are below the best and so never picked. The pick and the
 * variance and score of every candidate that ties or beats it are those of a full solve of all
 * candidates (each column of the solve is independent of the others).
 */
static st_status exact_scores(carbs *c, const models *m, cands *k)
{
    size_t n_ok = 0, d = c->d;
    for (size_t j = 0; j < k->n; j++)
        if (k->ok[j])
            k->ord[n_ok++] = (bound){k->score[j], j};
    qsort(k->ord, n_ok, sizeof(bound), by_bound);
    double best = -INFINITY;
    for (size_t t0 = 0; t0 < n_ok;) {
        size_t cap = t0 == 0 ? EXACT_FIRST : EXACT_BLOCK, nb = 0;
        while (t0 + nb < n_ok && nb < cap && (t0 == 0 || may_beat(c, k->ord[t0 + nb].ub, best)))
            nb++;
        if (nb == 0)
            break;
        for (size_t t = 0; t < nb; t++)
            memcpy(k->Xg + t * d, k->X + k->ord[t0 + t].j * d, d * sizeof(double));
        st_status s = gp_predict(m->out, nb, k->Xg, k->mg, k->vg);
        if (s != ST_OK)
            return s;
        for (size_t t = 0; t < nb; t++) {
            size_t j = k->ord[t0 + t].j;
            k->var[j] = k->vg[t];
            k->score[j] = score_at(c, k, j, k->vg[t]);
            if (k->score[j] > best)
                best = k->score[j];
        }
        t0 += nb;
    }
    return ST_OK;
}

static st_status score_cands(carbs *c, const models *m, cands *k)
{
    /* below BOUND_MIN_N rows a full solve of every candidate costs about what the bounds do */
    int bounded = gp_n(m->out) >= BOUND_MIN_N;
    st_status s = bounded ? gp_predict_bound(m->out, k->n, k->X, k->mu, k->var)
                          : gp_predict(m->out, k->n, k->X, k->mu, k->var);
    if (s != ST_OK)
        return s;
    for (size_t j = 0; j < k->n; j++)
        k->score[j] = k->ok[j] ? score_at(c, k, j, k->var[j]) : -INFINITY;
    return bounded ? exact_scores(c, m, k) : ST_OK;
}

static ptrdiff_t argmax(const cands *k)
{
    ptrdiff_t best = -1;
    for (size_t j = 0; j < k->n; j++)
        if (k->ok[j] && (best < 0 || k->score[j] > k->score[best]))
            best = (ptrdiff_t)j;
    return best;
}

/* The level switches: each Pareto origin with one categorical coordinate set to each of its
 * other choices, the ordered coordinates kept (locality 1), so that every choice is scored at
 * the best points found so far and not only at points that also moved. None without a
 * categorical parameter (the candidates and the random stream are then as before). Returns the
 * number written at the start of k->X, at most N. */
static size_t level_switches(carbs *c, const models *m, cands *k, size_t N)
{
    size_t d = c->d, n = 0;
    for (size_t g = 0; g < m->n_sel; g++)
        for (size_t i = 0; i < d; i++) {
            if (c->params[i].space != CARBS_SPACE_CATEGORICAL)
                continue;
            const double *o = m->origins + g * d;
            for (size_t ch = 0; ch < (size_t)c->params[i].n_choices && n < N; ch++) {
                if ((double)ch == o[i])
                    continue;
                double *b = k->X + n * d;
                memcpy(b, o, d * sizeof(double));
                b[i] = (double)ch;
                k->w[n] = carbs_priv_locality(c, b, m->n_sel, m->origins, k->ltmp);
                if (carbs_priv_round(c, b))
                    n++;
            }
        }
    return n;
}

/* Candidates: origin uniform, each coordinate N(o_i, r^2) truncated to the bounds; the locality
 * weight is taken before rounding (CARBS); rounded points must stay inside. Under a cost cap
 * the candidates whose checked cost is over it are dropped and their places drawn again, for
 * CAND_ROUNDS rounds at most; k->n may end below N (0: none admissible). */
static st_status draw_cands(carbs *c, const models *m, cands *k, size_t N)
{
    size_t d = c->d, n = 0;
    capm cm;
    st_status s = cap_borrow(c, &cm, m->cost, &m->lc);
    int rounds = cm.kind == CAP_NONE ? 1 : CAND_ROUNDS;
    for (int round = 0; round < rounds && n < N && s == ST_OK; round++) {
        size_t n0 = n;
        if (round == 0)
            n = level_switches(c, m, k, N);
        for (size_t tries = 0; n < N && tries < 4 * N; tries++) {
            double *b = k->X + n * d;
            const double *o = m->origins + st_rng_uniform_int(c->rng, m->n_sel) * d;
            for (size_t i = 0; i < d; i++)
                b[i] = carbs_priv_draw_coord(c, i, o[i], st_rng_uniform_pos(c->rng));
            k->w[n] = carbs_priv_locality(c, b, m->n_sel, m->origins, k->ltmp);
            if (carbs_priv_round(c, b))
                n++;
        }
        s = cap_cost(c, &cm, n - n0, k->X + n0 * d, k->capv + n0);
        size_t kept = n0;
        for (size_t j = n0; s == ST_OK && j < n; j++)
            if (cap_ok(&cm, k->capv[j])) {
                memmove(k->X + kept * d, k->X + j * d, d * sizeof(double));
                k->w[kept] = k->w[j];
                k->capv[kept++] = k->capv[j];
            }
        n = kept;
    }
    k->n = n;
    cap_clear(&cm);
    return s;
}

/* Draws the candidates around the Pareto origins and computes everything that does not change
 * when fantasies are added: locality, P(success), predicted cost, the Pareto value, the mask. */
static st_status make_cands(carbs *c, models *m, cands *k)
{
    size_t d = c->d, N = c->o.candidates_per_dim * d;
    memset(k, 0, sizeof(*k));
    k->X = malloc(N * d * sizeof(double));
    k->w = malloc(N * sizeof(double));
    k->ps = malloc(N * sizeof(double));
    k->v = malloc(N * sizeof(double));
    k->chat = malloc(N * sizeof(double));
    k->capv = malloc(N * sizeof(double));
    k->ok = malloc(N * sizeof(int));
    k->mu = malloc(N * sizeof(double));
    k->var = malloc(N * sizeof(double));
    k->score = malloc(N * sizeof(double));
    k->ltmp = malloc(2 * d * sizeof(double));
    k->ord = malloc(N * sizeof(bound));
    k->Xg = malloc(N * d * sizeof(double));
    k->mg = malloc(N * sizeof(double));
    k->vg = malloc(N * sizeof(double));
    double *tmp = malloc(2 * N * sizeof(double));
    if (!k->X || !k->w || !k->ps || !k->v || !k->chat || !k->capv || !k->ok || !k->mu || !k->var ||
        !k->score || !k->ltmp || !k->ord || !k->Xg || !k->mg || !k->vg || !tmp) {
        free(tmp);
        return ST_ENOMEM;
    }

    /* 1. samples around the origins, those over the cost cap dropped and redrawn, within the
     *    trust region's radius when the objective is deterministic (a repeat reproduced its
     *    objective): with noise a stall is as often the noise as the optimum, and a sweep for
     *    the scaling laws needs the spread (bench_extrapolate's CARBS sweeps on llmsim lost it:
     *    100x median regret 0.58% -> 0.90%, world 9 diverging, with the region always on) */
    c->radius = carbs_priv_repeats_agree(c, m) ? carbs_priv_trust_radius(c) : 0;
    st_status s = draw_cands(c, m, k, N);
    c->radius = 0;
    size_t n = k->n;
    if (s == ST_OK && n == 0)
        s = ST_EEMPTY;
    if (s != ST_OK) {
        free(tmp);
        return s;
    }

    /* 2. cost, Pareto value and success at each candidate */
    double *muc = tmp, *vs = tmp + N;
    s = gp_predict(m->cost, n, k->X, muc, NULL);
    if (s != ST_OK) {
        free(tmp);
        return s;
    }
    for (size_t j = 0; j < n; j++) {
        k->chat[j] = logcost_inverse(&m->lc, muc[j]);
        double l = muc[j] < m->par_lmin ? m->par_lmin : muc[j] > m->par_lmax ? m->par_lmax : muc[j];
        muc[j] = l; /* the clamped query */
        k->ok[j] = 1;
    }
    s = gp_predict(m->par, n, muc, k->v, NULL);
    if (s == ST_OK && m->succ)
        s = gp_predict(m->succ, n, k->X, muc, vs);
    if (s != ST_OK) {
        free(tmp);
        return s;
    }
    for (size_t j = 0; j < n; j++)
        k->ps[j] = m->succ ? carbs_priv_p_success(c, muc[j], vs[j]) : 1.0;
    free(tmp);

    /* 3. the value to beat: the front at the candidate's cost, clamped from below by the front
     *    at a random cost between the cheapest and the dearest front group (spec §5.6) */
    const pgroup *first = &m->groups[m->sel[0]], *last = &m->groups[m->sel[m->n_sel - 1]];
    if (c->o.ei_always_max) {
        double mean_out = sign_of(c) * last->value;
        double vmax = sign_of(c) * qt_forward(&m->qt, mean_out);
        for (size_t j = 0; j < n; j++)
            k->v[j] = vmax;
    } else if (c->o.ei_clamp) {
        double clo = first->cost, chi = last->cost;
        if (chi > c->o.max_suggestion_cost)
            chi = c->o.max_suggestion_cost;
        double cstar = exp(log(clo) + st_rng_uniform(c->rng) * (log(chi) - log(clo)));
        double l = logcost_forward(&m->lc, cstar), vstar;
        l = l < m->par_lmin ? m->par_lmin : l > m->par_lmax ? m->par_lmax : l;
        s = gp_predict(m->par, 1, &l, &vstar, NULL);
        if (s != ST_OK)
            return s;
        for (size_t j = 0; j < n; j++)
            if (k->v[j] < vstar)
                k->v[j] = vstar;
    }
    return ST_OK;
}

/* Fills the info of a Bayesian pick j. */
static void bayes_info(carbs *c, const models *m, const cands *k, size_t j)
{
    double sg = sign_of(c), sd = sqrt(k->var[j] > 0 ? k->var[j] : 0);
    c->info.phase = CARBS_PHASE_BAYES;
    c->info.predicted_output = qt_inverse(&m->qt, sg * k->mu[j]);
    c->info.predicted_output_sd = 0.5 * fabs(qt_inverse(&m->qt, sg * (k->mu[j] + sd)) -
                                             qt_inverse(&m->qt, sg * (k->mu[j] - sd)));
    c->info.predicted_cost = k->chat[j];
    c->info.pareto_value = qt_inverse(&m->qt, sg * k->v[j]);
    c->info.expected_improvement = acq_ei(k->mu[j], sd, k->v[j], xi_of(c));
    c->info.p_success = k->ps[j];
    c->info.locality = k->w[j];
    c->info.cap_cost = k->capv[j];
}

/* ---- the phases -------------------------------------------------------------------------- */

static void info_none(carbs *c, carbs_phase ph)
{
    c->info = (carbs_suggestion_info){ph, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

/* Resample: the cheapest plain Pareto group with the fewest runs (members + outstanding),
 * among the groups whose point is under the cost cap; none: no resample. */
static int try_resample(carbs *c, double *x)
{
    if (c->o.resample_frequency == 0 ||
        !(c->n_succ > (c->resample_count + 1) * c->o.resample_frequency))
        return 0;
    models m;
    memset(&m, 0, sizeof(m));
    capm cm;
    int done = 0;
    if (cap_init(c, &cm) != ST_OK)
        return 0;
    if (carbs_priv_load_successes(c, &m) == ST_OK && !carbs_priv_repeats_agree(c, &m)) {
        if (carbs_priv_fit_pareto(c, &m, 0) == ST_OK && m.n_sel > 0) {
            size_t best = 0, best_count = SIZE_MAX;
            double best_v = NAN;
            for (size_t g = 0; g < m.n_sel; g++) {
                const pgroup *G = &m.groups[m.sel[g]];
                size_t count = G->n;
                const double *ref = m.Xs + G->members[0] * c->d;
                double v;
                if (cap_cost(c, &cm, 1, ref, &v) != ST_OK || !cap_ok(&cm, v))
                    continue;
                for (size_t o = 0; o < c->n_out; o++) {
                    int close = 1;
                    for (size_t i = 0; i < c->d && close; i++)
                        close = fabs(c->out_b[o * c->d + i] - ref[i]) <= 1e-8 + 1e-5 * fabs(ref[i]);
                    count += close;
                }
                if (count < best_count) {
                    best_count = count;
                    best = g;
                    best_v = v;
                }
            }
            if (best_count < SIZE_MAX) {
                size_t i = m.obs_idx[m.groups[m.sel[best]].members[0]];
                memcpy(x, c->obs_x + i * c->d, c->d * sizeof(double));
                c->resample_count++;
                info_none(c, CARBS_PHASE_RESAMPLE);
                c->info.cap_cost = best_v;
                done = 1;
            }
        }
    }
    carbs_priv_models_clear(&m);
    cap_clear(&cm);
    return done;
}

typedef struct near_ctx {
    size_t n;
    const double *origins;
} near_ctx;

static void redraw_near(carbs *c, void *ctx, double *b)
{
    const near_ctx *o = ctx;
    carbs_priv_draw_near(c, o->n, o->origins, b);
}

static void redraw_design(carbs *c, void *ctx, double *b)
{
    (void)ctx;
    carbs_priv_random_point(c, b);
    c->n_design++;
}

/* Fallback: a point near the (conservative) Pareto origins, or the centre without successes,
 * redrawn while over the cost cap. ST_OK or ST_ENOMEM. */
static st_status fallback(carbs *c, double *b)
{
    models m;
    memset(&m, 0, sizeof(m));
    capm cm;
    near_ctx o = {1, c->center_b};
    st_status s = carbs_priv_load_successes(c, &m);
    if (s == ST_OK && m.ns > 0 && carbs_priv_fit_pareto(c, &m, c->o.pareto_conservative) == ST_OK &&
        m.n_sel > 0)
        o = (near_ctx){m.n_sel, m.origins};
    carbs_priv_draw_near(c, o.n, o.origins, b);
    double v = NAN;
    s = cap_init(c, &cm);
    if (s == ST_OK)
        s = cap_enforce(c, &cm, b, redraw_near, &o, REDRAW_TRIES, &v);
    cap_clear(&cm);
    carbs_priv_models_clear(&m);
    info_none(c, CARBS_PHASE_FALLBACK);
    c->info.cap_cost = v;
    return s == ST_ERANGE ? ST_OK : s; /* the cheapest point met: info.cap_cost says so */
}

/* Random phase: the next design point; under a cost cap, design points over it are skipped
 * (bounded) and the last resort descends toward lower cost. ST_OK or ST_ENOMEM. */
static st_status random_capped(carbs *c, double *b)
{
    capm cm;
    carbs_priv_random_point(c, b);
    c->n_design++;
    double v = NAN;
    st_status s = cap_init(c, &cm);
    if (s == ST_OK)
        s = cap_enforce(c, &cm, b, redraw_design, NULL, REDRAW_TRIES, &v);
    cap_clear(&cm);
    info_none(c, CARBS_PHASE_RANDOM);
    c->info.cap_cost = v;
    return s == ST_ERANGE ? ST_OK : s;
}

/* Registers x (parameter units) as an outstanding suggestion with a new id. */
static st_status remember(carbs *c, const double *x, uint64_t *id)
{
    if (!id)
        return ST_OK;
    if (carbs_priv_reserve_outstanding(c, c->n_out + 1) != ST_OK)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    size_t k = c->n_out++, d = c->d;
    c->out_id[k] = c->next_id;
    c->out_born[k] = c->n_obs;
    carbs_priv_to_basic(c, x, c->out_b + k * d, c->out_x + k * d);
    *id = c->next_id++;
    return ST_OK;
}

/* Bayesian step for q picks (q >= 1). Returns the number of picks written (0: use fallback). */
static size_t bayes(carbs *c, size_t q, double *x_out, uint64_t *ids, st_status *err)
{
    models m;
    cands k;
    memset(&k, 0, sizeof(k));
    size_t picked = 0;
    *err = ST_OK;
    st_status s = carbs_priv_models_fit(c, &m, 1);
    if (s == ST_OK)
        s = carbs_priv_add_fantasies(c, &m);
    if (s == ST_OK)
        s = make_cands(c, &m, &k);
    while (s == ST_OK && picked < q) {
        s = score_cands(c, &m, &k);
        if (s != ST_OK)
            break;
        ptrdiff_t j = argmax(&k);
        if (j < 0 || (faithful(c) && !(k.score[j] > 0) && picked > 0))
            break;
        bayes_info(c, &m, &k, (size_t)j);
        double *x = x_out + picked * c->d;
        carbs_priv_to_params(c, k.X + (size_t)j * c->d, x);
        s = remember(c, x, ids ? ids + picked : NULL);
        if (s != ST_OK) {
            *err = s;
            break;
        }
        picked++;
        /* exclude this point (and identical rounded ones), then fantasise an output there */
        for (size_t t = 0; t < k.n; t++)
            if (!memcmp(k.X + t * c->d, k.X + (size_t)j * c->d, c->d * sizeof(double)))
                k.ok[t] = 0;
        if (picked < q) {
            double f;
            s = carbs_priv_fantasy_value(c, m.out, k.X + (size_t)j * c->d, &f);
            if (s == ST_OK)
                s = gp_append(m.out, k.X + (size_t)j * c->d, f);
            if (s == ST_ENUMERIC)
                s = ST_OK;
        }
    }
    if (s == ST_ENOMEM)
        *err = s;
    cands_clear(&k);
    carbs_priv_models_clear(&m);
    return picked;
}

static void reseed(carbs *c)
{
    st_rng_reseed(c->rng, st_mix64(c->o.seed ^ st_mix64(c->n_suggest + 0x51ed)));
    c->n_suggest++;
}

/* One non-batch suggestion: random, resample, Bayes or fallback. */
static st_status suggest_one(carbs *c, double *x, uint64_t *id)
{
    size_t d = c->d;
    if (d == 0) /* nothing to search: every suggestion is the (empty) fixed point */
        return remember(c, x, id);
    double *b = malloc(d * sizeof(double));
    if (!b)
        return st_errf(c->errmsg, ST_ENOMEM, "out of memory");
    reseed(c);
    st_status s = ST_OK;
    if (carbs_priv_random_phase(c)) {
        s = random_capped(c, b);
        carbs_priv_to_params(c, b, x);
    } else if (try_resample(c, x)) {
        /* try_resample filled the info */
    } else {
        size_t got = bayes(c, 1, x, id, &s);
        if (got == 1) {
            free(b);
            return ST_OK; /* bayes() registered it */
        }
        if (s != ST_OK) {
            free(b);
            return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
        }
        s = fallback(c, b);
        carbs_priv_to_params(c, b, x);
    }
    free(b);
    if (s != ST_OK)
        return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
    return remember(c, x, id);
}

st_status carbs_suggest(carbs *c, double *x_out, uint64_t *id)
{
    c->errmsg[0] = 0;
    return suggest_one(c, x_out, id);
}

st_status carbs_suggest_batch(carbs *c, size_t q, double *x_out, uint64_t *ids)
{
    c->errmsg[0] = 0;
    if (q == 0)
        return st_errf(c->errmsg, ST_EINVAL, "a batch needs at least one suggestion");
    size_t done = 0;
    st_status s = ST_OK;
    while (done < q && s == ST_OK) {
        if (c->d == 0 || carbs_priv_random_phase(c) ||
            (c->o.resample_frequency > 0 &&
             c->n_succ > (c->resample_count + 1) * c->o.resample_frequency)) {
            s = suggest_one(c, x_out + done * c->d, ids ? ids + done : NULL);
            done += s == ST_OK;
            continue;
        }
        reseed(c);
        size_t got = bayes(c, q - done, x_out + done * c->d, ids ? ids + done : NULL, &s);
        done += got;
        if (s != ST_OK)
            return st_errf(c->errmsg, s, "suggest: %s", st_strerror(s));
        if (got == 0) /* no admissible candidate: one fallback, then try again */
            s = suggest_one(c, x_out + done * c->d, ids ? ids + done : NULL), done += s == ST_OK;
    }
    return s;
}

st_status carbs_predict(carbs *c, size_t m_pts, const double *X, double *mean, double *sd,
                        double *cost, double *p_succ)
{
    c->errmsg[0] = 0;
    if (c->n_succ < 2)
        return st_errf(c->errmsg, ST_EEMPTY,
                       "predictions need at least 2 successful runs (have "
                       "%zu)",
                       c->n_succ);
    size_t d = c->d;
    double *B = malloc(m_pts * d * sizeof(double)), *mu = malloc(m_pts * sizeof(double)),
           *var = malloc(m_pts * sizeof(double));
    models m;
    memset(&m, 0, sizeof(m));
    st_status s = (!B || !mu || !var) ? ST_ENOMEM : ST_OK;
    for (size_t j = 0; s == ST_OK && j < m_pts; j++) {
        carbs_priv_to_basic(c, X + j * d, B + j * d, NULL);
        for (size_t i = 0; i < d; i++) {
            if (!isfinite(B[j * d + i]))
                s = st_errf(c->errmsg, ST_EINVAL,
                            "point %zu: parameter '%s' value %g is not "
                            "valid",
                            j, c->params[i].name, X[j * d + i]);
        }
    }
    st_rng_reseed(c->rng, st_mix64(c->o.seed ^ 0x9e3779b9u));
    if (s == ST_OK)
        s = carbs_priv_models_fit(c, &m, 0);
    if (s == ST_OK)
        s = gp_predict(m.out, m_pts, B, mu, var);
    double sg = sign_of(c);
    for (size_t j = 0; s == ST_OK && j < m_pts; j++) {
        double sdv = sqrt(var[j] > 0 ? var[j] : 0);
        if (mean)
            mean[j] = qt_inverse(&m.qt, sg * mu[j]);
        if (sd)
            sd[j] = 0.5 * fabs(qt_inverse(&m.qt, sg * (mu[j] + sdv)) -
                               qt_inverse(&m.qt, sg * (mu[j] - sdv)));
    }
    if (s == ST_OK && cost) {
        s = gp_predict(m.cost, m_pts, B, mu, NULL);
        for (size_t j = 0; s == ST_OK && j < m_pts; j++)
            cost[j] = logcost_inverse(&m.lc, mu[j]);
    }
    if (s == ST_OK && p_succ) {
        if (m.succ)
            s = gp_predict(m.succ, m_pts, B, mu, var);
        for (size_t j = 0; s == ST_OK && j < m_pts; j++)
            p_succ[j] = m.succ ? carbs_priv_p_success(c, mu[j], var[j]) : 1.0;
    }
    if (s != ST_OK && !c->errmsg[0])
        st_errf(c->errmsg, s, "predict: %s", st_strerror(s));
    carbs_priv_models_clear(&m);
    free(B);
    free(mu);
    free(var);
    return s;
}

st_status carbs_pareto(carbs *c, int conservative, size_t cap, size_t *n, double *cost,
                       double *output, size_t *count, double *x)
{
    c->errmsg[0] = 0;
    *n = 0;
    if (c->n_succ == 0)
        return ST_OK;
    models m;
    memset(&m, 0, sizeof(m));
    st_status s = carbs_priv_load_successes(c, &m);
    if (s == ST_OK)
        s = carbs_priv_fit_pareto(c, &m, conservative);
    if (s == ST_OK) {
        *n = m.n_sel;
        for (size_t g = 0; g < m.n_sel && g < cap; g++) {
            const pgroup *G = &m.groups[m.sel[g]];
            if (cost)
                cost[g] = G->cost;
            if (output)
                output[g] = sign_of(c) * G->value;
            if (count)
                count[g] = G->n;
            if (x)
                memcpy(x + g * c->d, c->obs_x + m.obs_idx[G->members[0]] * c->d,
                       c->d * sizeof(double));
        }
    } else {
        st_errf(c->errmsg, s, "pareto: %s", st_strerror(s));
    }
    carbs_priv_models_clear(&m);
    return s;
}
