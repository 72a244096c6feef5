/*
 * test_trainer_layers.c — each CPU layer of trainer/layers.c against an independent float64
 * reference written here: the forward against the reference's value, the backward against
 * central finite differences of the reference (kann's kad_check_grad method) of the scalar
 * J = Σ out ⊙ R for a fixed random R. Tiny shapes, fixed seeds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "trainer/gpt_int.h"

#define H 1e-5 /* finite-difference step in float64 */

static unsigned long long lcg = 88172645463325252ull;
static double urand(void) /* uniform in (-1, 1) */
{
    lcg ^= lcg << 13;
    lcg ^= lcg >> 7;
    lcg ^= lcg << 17;
    return (double)(lcg >> 11) / 4503599627370496.0 - 1.0;
}
static void fill(double *x, size_t n, double s)
{
    for (size_t i = 0; i < n; i++)
        x[i] = s * urand();
}
static float *tof(const double *x, size_t n)
{
    float *f = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        f[i] = (float)x[i];
    return f;
}
static double maxabs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

/* a layer seen as J(x) = Σ f(x) ⊙ R in float64 */
typedef double (*objective)(void *ctx);

/* central differences of J over x[0..n) and the largest deviation from `got`, relative to the
 * largest gradient entry */
static double fd_check(objective J, void *ctx, double *x, size_t n, const float *got)
{
    double *fd = calloc(n ? n : 1, sizeof(double)), err = 0;
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + H;
        double jp = J(ctx);
        x[i] = keep - H;
        double jm = J(ctx);
        x[i] = keep;
        fd[i] = (jp - jm) / (2 * H);
    }
    double scale = fmax(maxabs(fd, n), 1e-3);
    for (size_t i = 0; i < n; i++)
        err = fmax(err, fabs(fd[i] - got[i]) / scale);
    free(fd);
    return err;
}

static double fwd_err(const float *got, const double *want, size_t n)
{
    double e = 0, s = fmax(maxabs(want, n), 1e-6);
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs(got[i] - want[i]) / s);
    return e;
}

/* ---- LayerNorm --------------------------------------------------------------------------- */

enum { N = 6, C = 16, T = 5, NH = 2, V = 11 };

struct ln {
    double x[N * C], w[C], b[C], R[N * C], out[N * C];
};
static double ln_ref(void *p)
{
    struct ln *c = p;
    double J = 0;
    for (int r = 0; r < N; r++) {
        double m = 0, v = 0;
        for (int k = 0; k < C; k++)
            m += c->x[r * C + k];
        m /= C;
        for (int k = 0; k < C; k++)
            v += (c->x[r * C + k] - m) * (c->x[r * C + k] - m);
        v /= C;
        for (int k = 0; k < C; k++) {
            double y = (c->x[r * C + k] - m) / sqrt(v + 1e-5) * c->w[k] + c->b[k];
            c->out[r * C + k] = y;
            J += y * c->R[r * C + k];
        }
    }
    return J;
}

static void test_layernorm(void)
{
    struct ln c;
    fill(c.x, N * C, 2.0);
    fill(c.w, C, 1.0);
    fill(c.b, C, 1.0);
    fill(c.R, N * C, 1.0);
    ln_ref(&c);
    float *x = tof(c.x, N * C), *w = tof(c.w, C), *b = tof(c.b, C), *R = tof(c.R, N * C);
    float out[N * C], mean[N], rstd[N], dx[N * C] = {0}, dw[C] = {0}, db[C] = {0};
    gpt_layernorm_forward(out, mean, rstd, x, w, b, N, C);
    CHECK(fwd_err(out, c.out, N * C) < 1e-5);
    gpt_layernorm_backward(dx, dw, db, R, x, w, mean, rstd, N, C);
    CHECK(fd_check(ln_ref, &c, c.x, N * C, dx) < 1e-4);
    CHECK(fd_check(ln_ref, &c, c.w, C, dw) < 1e-4);
    CHECK(fd_check(ln_ref, &c, c.b, C, db) < 1e-4);
    free(x), free(w), free(b), free(R);
}

/* ---- linear ------------------------------------------------------------------------------ */

enum { OC = 7 };
struct mm {
    double x[N * C], w[OC * C], b[OC], R[N * OC], out[N * OC];
};
static double mm_ref(void *p)
{
    struct mm *c = p;
    double J = 0;
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double s = c->b[o];
            for (int k = 0; k < C; k++)
                s += c->x[r * C + k] * c->w[o * C + k];
            c->out[r * OC + o] = s;
            J += s * c->R[r * OC + o];
        }
    return J;
}

static void test_matmul(void)
{
    struct mm c;
    fill(c.x, N * C, 1.0);
    fill(c.w, OC * C, 1.0);
    fill(c.b, OC, 1.0);
    fill(c.R, N * OC, 1.0);
    mm_ref(&c);
    float *x = tof(c.x, N * C), *w = tof(c.w, OC * C), *b = tof(c.b, OC), *R = tof(c.R, N * OC);
    float out[N * OC], dx[N * C], dw[OC * C] = {0}, db[OC] = {0};
    gpt_matmul_forward(out, x, w, b, N, C, OC, 0.0f);
    CHECK(fwd_err(out, c.out, N * OC) < 1e-5);
    /* beta = 1 adds onto what is there (the residual connection) */
    float acc[N * OC];
    for (int i = 0; i < N * OC; i++)
        acc[i] = 1.0f;
    gpt_matmul_forward(acc, x, w, b, N, C, OC, 1.0f);
    CHECK_ABS(acc[3], out[3] + 1.0f, 1e-5);
    gpt_matmul_backward(dx, dw, db, R, x, w, N, C, OC);
    CHECK(fd_check(mm_ref, &c, c.x, N * C, dx) < 1e-5);
    CHECK(fd_check(mm_ref, &c, c.w, OC * C, dw) < 1e-5);
    CHECK(fd_check(mm_ref, &c, c.b, OC, db) < 1e-5);
    free(x), free(w), free(b), free(R);
}

/* ---- GELU -------------------------------------------------------------------------------- */

enum { NG = 200 };
struct ge {
    double x[NG], R[NG], out[NG];
};
static double ge_ref(void *p)
{
    struct ge *c = p;
    double J = 0;
    for (int i = 0; i < NG; i++) {
        double v = c->x[i];
        double y = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        c->out[i] = y;
        J += y * c->R[i];
    }
    return J;
}

static void test_gelu(void)
{
    struct ge c;
    fill(c.x, NG, 6.0);
    c.x[0] = 0.0, c.x[1] = -30.0, c.x[2] = 30.0, c.x[3] = 1e-4;
    fill(c.R, NG, 1.0);
    ge_ref(&c);
    float *x = tof(c.x, NG), *R = tof(c.R, NG), out[NG], dx[NG];
    gpt_gelu_forward(out, x, NG);
    double e = 0;
    for (int i = 0; i < NG; i++)
        e = fmax(e, fabs(out[i] - c.out[i]));
    CHECK(e < 2e-6 * 30); /* absolute, against values up to 30 */
    CHECK_ABS(out[1], 0.0, 1e-6);
    gpt_gelu_backward(dx, x, R, NG);
    CHECK(fd_check(ge_ref, &c, c.x, NG, dx) < 1e-5);
    free(x), free(R);
}

/* ---- fast exp ----------------------------------------------------------------------------- */

static void test_expf(void)
{
    double worst = 0;
    for (double x = -80; x < 80; x += 0.01237)
        worst = fmax(worst, fabs(gpt_expf((float)x) - exp((float)x)) / exp((float)x));
    CHECK(worst < 1e-6);
    CHECK(gpt_expf(-1000.0f) < 1e-37f);
    CHECK(isfinite(gpt_expf(1000.0f)));
}

/* ---- causal attention --------------------------------------------------------------------- */

enum { NB = 2 };
struct at {
    double qkv[NB * T * 3 * C], R[NB * T * C], out[NB * T * C];
};
static double at_ref(void *p)
{
    struct at *c = p;
    int hs = C / NH;
    double J = 0;
    for (int b = 0; b < NB; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = c->qkv + (b * T + t) * 3 * C + h * hs;
                double s[T], m = -1e300, z = 0;
                for (int u = 0; u <= t; u++) {
                    const double *k = c->qkv + (b * T + u) * 3 * C + C + h * hs;
                    s[u] = 0;
                    for (int i = 0; i < hs; i++)
                        s[u] += q[i] * k[i];
                    s[u] /= sqrt(hs);
                    m = fmax(m, s[u]);
                }
                for (int u = 0; u <= t; u++)
                    z += s[u] = exp(s[u] - m);
                for (int i = 0; i < hs; i++) {
                    double y = 0;
                    for (int u = 0; u <= t; u++)
                        y += s[u] / z * c->qkv[(b * T + u) * 3 * C + 2 * C + h * hs + i];
                    c->out[(b * T + t) * C + h * hs + i] = y;
                    J += y * c->R[(b * T + t) * C + h * hs + i];
                }
            }
    return J;
}

static void test_attention(void)
{
    struct at c;
    fill(c.qkv, NB * T * 3 * C, 1.5);
    fill(c.R, NB * T * C, 1.0);
    at_ref(&c);
    float *qkv = tof(c.qkv, NB * T * 3 * C), *R = tof(c.R, NB * T * C);
    float out[NB * T * C], att[NB * NH * T * T], dqkv[NB * T * 3 * C], scratch[T * T];
    gpt_attention_forward(out, att, qkv, NB, T, C, NH);
    CHECK(fwd_err(out, c.out, NB * T * C) < 1e-5);
    CHECK(att[1] == 0.0f && att[T] > 0.0f); /* masked above the diagonal */
    gpt_attention_backward(dqkv, scratch, R, att, qkv, NB, T, C, NH);
    CHECK(fd_check(at_ref, &c, c.qkv, NB * T * 3 * C, dqkv) < 1e-4);
    free(qkv), free(R);
}

/* ---- cross-entropy and embedding ----------------------------------------------------------- */

struct ce {
    double z[N * V];
    uint8_t y[N];
    double loss;
};
static double ce_ref(void *p)
{
    struct ce *c = p;
    double J = 0;
    for (int r = 0; r < N; r++) {
        double m = -1e300, s = 0;
        for (int j = 0; j < V; j++)
            m = fmax(m, c->z[r * V + j]);
        for (int j = 0; j < V; j++)
            s += exp(c->z[r * V + j] - m);
        J += log(s) + m - c->z[r * V + c->y[r]];
    }
    return c->loss = J / N;
}

static void test_crossentropy(void)
{
    struct ce c;
    fill(c.z, N * V, 4.0);
    for (int r = 0; r < N; r++)
        c.y[r] = (uint8_t)((r * 5 + 3) % V);
    ce_ref(&c);
    float *z = tof(c.z, N * V), probs[N * V], losses[N], dz[N * V];
    gpt_crossentropy_forward(probs, losses, z, c.y, N, V);
    double mean = 0;
    for (int r = 0; r < N; r++)
        mean += losses[r] / N;
    CHECK_REL(mean, c.loss, 1e-6);
    gpt_crossentropy_backward(dz, probs, c.y, 1.0f / N, N, V);
    CHECK(fd_check(ce_ref, &c, c.z, N * V, dz) < 1e-5);
    free(z);
}

struct en {
    double wte[V * C], wpe[T * C], R[2 * T * C];
    uint8_t tok[2 * T];
};
static double en_ref(void *p)
{
    struct en *c = p;
    double J = 0;
    for (int r = 0; r < 2 * T; r++)
        for (int k = 0; k < C; k++)
            J += (c->wte[c->tok[r] * C + k] + c->wpe[(r % T) * C + k]) * c->R[r * C + k];
    return J;
}

static void test_encoder(void)
{
    struct en c;
    fill(c.wte, V * C, 1.0);
    fill(c.wpe, T * C, 1.0);
    fill(c.R, 2 * T * C, 1.0);
    for (int r = 0; r < 2 * T; r++)
        c.tok[r] = (uint8_t)((r * r) % V); /* repeats, so the scatter must add */
    float *wte = tof(c.wte, V * C), *wpe = tof(c.wpe, T * C), *R = tof(c.R, 2 * T * C);
    float out[2 * T * C], dwte[V * C] = {0}, dwpe[T * C] = {0};
    gpt_encoder_forward(out, c.tok, wte, wpe, 2 * T, T, C);
    CHECK_ABS(out[(T + 1) * C + 3], wte[c.tok[T + 1] * C + 3] + wpe[1 * C + 3], 1e-7);
    gpt_encoder_backward(dwte, dwpe, R, c.tok, 2 * T, T, C);
    CHECK(fd_check(en_ref, &c, c.wte, V * C, dwte) < 1e-6);
    CHECK(fd_check(en_ref, &c, c.wpe, T * C, dwpe) < 1e-6);
    free(wte), free(wpe), free(R);
}

int main(void)
{
    test_expf();
    test_layernorm();
    test_matmul();
    test_gelu();
    test_attention();
    test_crossentropy();
    test_encoder();
    return check_summary("trainer.layers");
}
