/*
 * test_runner_metrics.c — the metrics-protocol line parser and the cost-expression evaluator,
 * checked against hand-written lines (including what Python's json.dumps writes for NaN and
 * infinities) and closed-form arithmetic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
#include "tests/check.h"

static st_status parse(const char *s, runner_metrics_line *l)
{
    return runner_metrics_parse(s, strlen(s), l);
}

static void test_events(void)
{
    runner_metrics_line l;
    double v;
    CHECK_ST(parse("{\"event\":\"step\",\"step\":12,\"loss\":2.5,\"lr\":0.001}\n", &l), ST_OK);
    CHECK(l.event == RUNNER_EVENT_STEP);
    CHECK(l.step == 12);
    CHECK(l.n_metrics == 2);
    CHECK(runner_metrics_get(&l, "loss", &v) && v == 2.5);
    CHECK(runner_metrics_get(&l, "lr", &v) && v == 0.001);
    CHECK(!runner_metrics_get(&l, "step", NULL));

    CHECK_ST(parse("  {\"event\": \"eval\", \"step\": 100.0, \"val_loss\": 3}\r\n", &l), ST_OK);
    CHECK(l.event == RUNNER_EVENT_EVAL);
    CHECK(l.step == 100);
    CHECK(runner_metrics_get(&l, "val_loss", &v) && v == 3.0);

    CHECK_ST(parse("{\"event\":\"final\",\"val_loss\":1.25,\"flops\":6e15,\"params\":1.2e6,"
                   "\"tokens\":1e9,\"note\":\"ok\",\"hist\":[1,2],\"cfg\":{\"a\":1}}",
                   &l),
             ST_OK);
    CHECK(l.event == RUNNER_EVENT_FINAL);
    CHECK(l.step == -1);
    CHECK(l.n_metrics == 4); /* note, hist and cfg are not numbers: ignored */
    CHECK(runner_metrics_get(&l, "flops", &v) && v == 6e15);

    CHECK_ST(parse("{\"event\":\"diverged\",\"step\":7,\"reason\":\"loss is nan\"}", &l), ST_OK);
    CHECK(l.event == RUNNER_EVENT_DIVERGED);
    CHECK(!strcmp(l.reason, "loss is nan"));

    CHECK_ST(parse("{\"event\":\"checkpoint\",\"step\":3}", &l), ST_OK);
    CHECK(l.event == RUNNER_EVENT_OTHER);
}

/* Python: json.dumps({"event": "step", "loss": float("nan")}) == '{"event": "step", "loss": NaN}'
 */
static void test_nonfinite(void)
{
    runner_metrics_line l;
    double v;
    CHECK_ST(parse("{\"event\": \"step\", \"step\": 5, \"loss\": NaN, \"gn\": Infinity, "
                   "\"x\": -Infinity, \"y\": null, \"s\": \"NaN Infinity\"}",
                   &l),
             ST_OK);
    CHECK(runner_metrics_get(&l, "loss", &v) && isnan(v));
    CHECK(runner_metrics_get(&l, "gn", &v) && isinf(v) && v > 0);
    CHECK(runner_metrics_get(&l, "x", &v) && isinf(v) && v < 0);
    CHECK(runner_metrics_get(&l, "y", &v) && isnan(v));
    CHECK(!runner_metrics_get(&l, "s", NULL)); /* a string mentioning NaN stays a string */
    CHECK(l.n_metrics == 4);
    /* an escaped quote inside a string does not end it */
    CHECK_ST(parse("{\"event\":\"step\",\"m\":\"a\\\"NaN\",\"loss\":1}", &l), ST_OK);
    CHECK(l.n_metrics == 1);
}

static void test_garbage(void)
{
    runner_metrics_line l;
    const char *bad[] = {"",
                         "\n",
                         "epoch 1 loss 2.3",
                         "[1,2,3]",
                         "{\"step\":1,\"loss\":2}",              /* no event */
                         "{\"event\":3,\"loss\":2}",             /* event not a string */
                         "{\"event\":\"step\",\"loss\":2",       /* truncated */
                         "{\"event\":\"step\"} trailing",        /* trailing text */
                         "{\"event\":\"step\",\"a\":1,\"a\":2}", /* duplicate key */
                         "{\"event\":\"step\",\"loss\":NaNx}",
                         "{\"event\":\"step\",\"loss\":nan}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_ST(parse(bad[i], &l), ST_EFORMAT);
        CHECK(l.event == RUNNER_EVENT_NONE);
    }
    /* not NUL-terminated: the parser must stop at len */
    char buf[64];
    memset(buf, '{', sizeof(buf));
    CHECK_ST(runner_metrics_parse(buf, sizeof(buf), &l), ST_EFORMAT);
    /* longer than the limit */
    size_t n = RUNNER_METRICS_LINE_MAX + 10;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    memcpy(big, "{\"event\":\"step\"", 15);
    big[n - 1] = '}';
    big[n] = '\0';
    CHECK_ST(runner_metrics_parse(big, n, &l), ST_EFORMAT);
    free(big);
}

static void test_limits(void)
{
    runner_metrics_line l;
    char line[4096];
    size_t o = (size_t)snprintf(line, sizeof(line), "{\"event\":\"step\"");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(line + o, sizeof(line) - o, ",\"m%d\":%d", i, i);
    o += (size_t)snprintf(line + o, sizeof(line) - o,
                          ",\"a_very_long_metric_name_that_is_longer_than_sixty_four_"
                          "characters_total\":1}");
    CHECK_ST(runner_metrics_parse(line, o, &l), ST_OK);
    CHECK(l.n_metrics == RUNNER_METRICS_MAX);
    CHECK(l.n_dropped == 40 - RUNNER_METRICS_MAX + 1);
    /* a long line with NaN tokens (heap path of the rewrite) */
    o = (size_t)snprintf(line, sizeof(line), "{\"event\":\"step\",\"pad\":\"");
    memset(line + o, 'x', 1500);
    o += 1500;
    o += (size_t)snprintf(line + o, sizeof(line) - o, "\",\"loss\":NaN}");
    CHECK_ST(runner_metrics_parse(line, o, &l), ST_OK);
    double v;
    CHECK(runner_metrics_get(&l, "loss", &v) && isnan(v));
}

static void test_expr(void)
{
    const char *names[] = {"N", "D", "lr"};
    double vals[] = {1.5e6, 2e9, 3e-4};
    double v;
    char em[ST_ERRMSG_MAX];
    CHECK_ST(runner_expr_eval("6*{N}*{D}", 3, names, vals, &v, em), ST_OK);
    CHECK_REL(v, 6 * 1.5e6 * 2e9, 1e-15);
    CHECK_ST(runner_expr_eval(" 2 ^ 3 ^ 2 ", 3, names, vals, &v, em), ST_OK);
    CHECK_REL(v, 512, 0);
    CHECK_ST(runner_expr_eval("-2^2 + (1 - 3) * 4 / 2", 3, names, vals, &v, em), ST_OK);
    CHECK_REL(v, -8, 0);
    CHECK_ST(runner_expr_eval("{N}**0.5 - -1", 3, names, vals, &v, em), ST_OK);
    CHECK_REL(v, sqrt(1.5e6) + 1, 1e-15);
    CHECK_ST(runner_expr_eval("1.5e3*.5", 3, names, vals, &v, em), ST_OK);
    CHECK_REL(v, 750, 0);
    CHECK_ST(runner_expr_eval("6*{M}", 3, names, vals, &v, em), ST_EINVAL);
    CHECK(strstr(em, "unknown parameter") != NULL);
    CHECK_ST(runner_expr_eval("6*(1+2", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("6 7", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("0x10", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("inf", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("system(1)", 3, names, vals, &v, em), ST_EINVAL);
    CHECK_ST(runner_expr_eval("1/0", 3, names, vals, &v, em), ST_ERANGE);
    char deep[400];
    memset(deep, '(', 200);
    strcpy(deep + 200, "1");
    CHECK_ST(runner_expr_eval(deep, 3, names, vals, &v, em), ST_EINVAL);
    memset(deep, '-', 300);
    strcpy(deep + 300, "1");
    CHECK_ST(runner_expr_eval(deep, 3, names, vals, &v, em), ST_EINVAL);
}

/* Bytes that are not UTF-8 inside strings cost nothing but themselves: the numeric fields of
 * the line are kept (constructed lines, each kind of bad sequence); outside strings they are
 * still garbage; valid multi-byte UTF-8 is kept byte for byte. */
static void test_utf8(void)
{
    const char *bad[] = {
        "\xff",             /* never valid */
        "\xc0\xaf",         /* overlong '/' */
        "\xe0\x80\xaf",     /* overlong, 3 bytes */
        "\xed\xa0\x80",     /* a surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\xc3",             /* truncated, at the end of the string */
        "caf\xe9",          /* Latin-1 */
        "\x80\x80",         /* continuation bytes alone */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line),
                 "{\"event\": \"final\", \"note\": \"%s\", \"val_loss\": 1.5, \"flops\": 7}",
                 bad[i]);
        runner_metrics_line l;
        double v = 0, c = 0;
        CHECK_ST(parse(line, &l), ST_OK);
        CHECK(l.event == RUNNER_EVENT_FINAL);
        CHECK(runner_metrics_get(&l, "val_loss", &v) && v == 1.5);
        CHECK(runner_metrics_get(&l, "flops", &c) && c == 7);
        CHECK(runner_metrics_has_field(line, strlen(line), "note"));
        /* in a key too */
        snprintf(line, sizeof(line), "{\"event\": \"eval\", \"k%s\": 1, \"val_loss\": 2}", bad[i]);
        CHECK_ST(parse(line, &l), ST_OK);
        CHECK(runner_metrics_get(&l, "val_loss", &v) && v == 2);
    }
    runner_metrics_line l;
    /* valid UTF-8 (2, 3 and 4 bytes) is valid; a bad byte outside a string is still garbage */
    CHECK_ST(parse("{\"event\": \"step\", \"note\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", "
                   "\"loss\": 3}",
                   &l),
             ST_OK);
    CHECK_ST(parse("{\"event\": \"step\", \"loss\": 3}\xff", &l), ST_EFORMAT);
    /* NaN and negative values are numbers like any other: kept for the caller to judge */
    CHECK_ST(parse("{\"event\": \"final\", \"cost\": NaN, \"tokens\": -5, \"val_loss\": 1}", &l),
             ST_OK);
    double v = 0;
    CHECK(runner_metrics_get(&l, "val_loss", &v) && v == 1);
    CHECK(runner_metrics_get(&l, "cost", &v) && isnan(v));
    CHECK(runner_metrics_get(&l, "tokens", &v) && v == -5);
    /* a field there and not a number: not a metric, but there */
    const char *s = "{\"event\": \"final\", \"val_loss\": \"low\"}";
    CHECK_ST(parse(s, &l), ST_OK);
    CHECK(!runner_metrics_get(&l, "val_loss", NULL));
    CHECK(runner_metrics_has_field(s, strlen(s), "val_loss"));
    CHECK(!runner_metrics_has_field(s, strlen(s), "flops"));
    CHECK(!runner_metrics_has_field("not json", 8, "val_loss"));
}

int main(void)
{
    test_events();
    test_utf8();
    test_nonfinite();
    test_garbage();
    test_limits();
    test_expr();
    return check_summary("runner.metrics");
}
