/*
 * expr.c — the cost expression of a sweep file ("6*{N}*{D}"), evaluated before launch so that
 * a run predicted above budget.max_cost_per_run is refused. A recursive-descent parser over
 * numbers, + - * / ^, unary minus, parentheses and {param} placeholders; nothing else (no
 * functions, no calls out), with a depth limit so hostile input cannot exhaust the stack.
 */
#include "runner/runner_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_DEPTH 64

typedef struct ep {
    const char *s, *p;
    size_t n;
    const char *const *names;
    const double *values;
    char *errmsg;
    int depth;
    st_status rc;
} ep;

static double err(ep *e, const char *what)
{
    if (!e->rc)
        e->rc = st_errf(e->errmsg, ST_EINVAL, "'%s' at column %zu: %s", e->s,
                        (size_t)(e->p - e->s) + 1, what);
    return NAN;
}

static void skip_ws(ep *e)
{
    while (*e->p == ' ' || *e->p == '\t')
        e->p++;
}

static double parse_sum(ep *e);

static double parse_primary(ep *e)
{
    skip_ws(e);
    if (e->rc)
        return NAN;
    if (++e->depth > EXPR_MAX_DEPTH)
        return err(e, "nested too deeply");
    double v;
    if (*e->p == '(') {
        e->p++;
        v = parse_sum(e);
        skip_ws(e);
        if (*e->p != ')')
            return err(e, "expected ')'");
        e->p++;
    } else if (*e->p == '{') {
        const char *end = strchr(e->p, '}');
        if (!end)
            return err(e, "'{' without '}'");
        size_t len = (size_t)(end - e->p - 1), i;
        for (i = 0; i < e->n; i++)
            if (strlen(e->names[i]) == len && !memcmp(e->names[i], e->p + 1, len))
                break;
        if (i == e->n)
            return err(e, "unknown parameter");
        v = e->values[i];
        e->p = end + 1;
    } else if ((*e->p >= '0' && *e->p <= '9') || *e->p == '.') {
        char *end;
        v = strtod(e->p, &end);
        if (end == e->p)
            return err(e, "bad number");
        /* strtod also reads "0x..", "inf" and "nan"; only decimal numbers are allowed */
        for (const char *q = e->p; q < end; q++)
            if (!strchr("0123456789.eE+-", *q))
                return err(e, "bad number");
        e->p = end;
    } else {
        return err(e, *e->p ? "unexpected character" : "unexpected end");
    }
    e->depth--;
    return v;
}

static double parse_unary(ep *e);

/* power is right-associative and binds tighter than unary minus: -2^2 = -4, 2^3^2 = 2^9 */
static double parse_power(ep *e)
{
    double b = parse_primary(e);
    skip_ws(e);
    if (*e->p == '^' || (e->p[0] == '*' && e->p[1] == '*')) {
        e->p += *e->p == '^' ? 1 : 2;
        if (++e->depth > EXPR_MAX_DEPTH)
            return err(e, "nested too deeply");
        double x = parse_unary(e);
        e->depth--;
        return pow(b, x);
    }
    return b;
}

static double parse_unary(ep *e)
{
    skip_ws(e);
    if (*e->p == '-' || *e->p == '+') {
        int neg = *e->p == '-';
        e->p++;
        if (++e->depth > EXPR_MAX_DEPTH)
            return err(e, "nested too deeply");
        double v = parse_unary(e);
        e->depth--;
        return neg ? -v : v;
    }
    return parse_power(e);
}

static double parse_product(ep *e)
{
    double v = parse_unary(e);
    for (;;) {
        skip_ws(e);
        if (e->p[0] == '*' && e->p[1] != '*') {
            e->p++;
            v *= parse_unary(e);
        } else if (*e->p == '/') {
            e->p++;
            v /= parse_unary(e);
        } else {
            return v;
        }
        if (e->rc)
            return NAN;
    }
}

static double parse_sum(ep *e)
{
    double v = parse_product(e);
    for (;;) {
        skip_ws(e);
        if (*e->p == '+') {
            e->p++;
            v += parse_product(e);
        } else if (*e->p == '-') {
            e->p++;
            v -= parse_product(e);
        } else {
            return v;
        }
        if (e->rc)
            return NAN;
    }
}

st_status runner_expr_eval(const char *expr, size_t n, const char *const *names,
                           const double *values, double *out, char *errmsg)
{
    char dummy[ST_ERRMSG_MAX];
    ep e = {expr, expr, n, names, values, errmsg ? errmsg : dummy, 0, ST_OK};
    double v = parse_sum(&e);
    skip_ws(&e);
    if (!e.rc && *e.p)
        err(&e, "unexpected character");
    if (e.rc)
        return e.rc;
    *out = v;
    if (!isfinite(v))
        return st_errf(e.errmsg, ST_ERANGE, "'%s' is not finite (%g)", expr, v);
    return ST_OK;
}
