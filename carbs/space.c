/*
 * space.c — parameter spaces: the map between a parameter's own units and the unbounded "basic"
 * space in which carbs/ models and samples (shared specs/carbs.md §2, CARBS' LinearSpace,
 * LogSpace, LogitSpace), integer rounding and the exclusive basic bounds.
 * Not here: sampling and the GP, which only ever see basic coordinates.
 */
#include <math.h>
#include <stdio.h>

#include "carbs/carbs_int.h"

void carbs_param_init(carbs_param *p, const char *name, carbs_space_kind space, double center)
{
    p->name = name;
    p->space = space;
    p->min = space == CARBS_SPACE_LINEAR ? -INFINITY : 0.0;
    p->max = space == CARBS_SPACE_LOGIT ? 1.0 : INFINITY;
    p->center = center;
    p->scale = NAN; /* auto: space_scale */
    p->base = 10.0;
    p->is_integer = 0;
    p->rounding = 1.0;
    p->n_choices = 0;
    p->active_if = NULL;
    p->active_mask = 0;
    if (space == CARBS_SPACE_CATEGORICAL)
        p->min = 0.0;
}

double space_scale(const carbs_param *p, int faithful)
{
    if (!isnan(p->scale))
        return p->scale;
    if (faithful || p->space != CARBS_SPACE_LINEAR || !isfinite(p->min) || !isfinite(p->max))
        return 1.0; /* CARBS' default */
    double s = (p->max - p->min) / CARBS_AUTO_SCALE_SPAN;
    if (p->is_integer && s < 2 * p->rounding) /* a step of the search moves an integer */
        s = 2 * p->rounding;
    return s > 0 && isfinite(s) ? s : 1.0;
}

/* The scale of a parameter as given (NaN: auto, recommended mode's rule). */
static double sc(const carbs_param *p)
{
    return isnan(p->scale) ? space_scale(p, 0) : p->scale;
}

/* Round half to even, as Python's round() and torch.round() do. */
static double round_even(double x)
{
    return nearbyint(x); /* default rounding mode FE_TONEAREST is ties-to-even */
}

double space_to_basic(const carbs_param *p, double v)
{
    switch (p->space) {
    case CARBS_SPACE_CATEGORICAL:
        return v; /* the choice index; the GPs one-hot encode it */
    case CARBS_SPACE_LINEAR:
        return v / sc(p);
    case CARBS_SPACE_LOG:
        if (v == 0.0)
            return -INFINITY;
        return log(v) / log(p->base) / sc(p);
    case CARBS_SPACE_LOGIT:
        if (v == 0.0)
            return -INFINITY;
        if (v == 1.0)
            return INFINITY;
        return log10(v / (1.0 - v)) / sc(p);
    }
    return NAN;
}

double space_from_basic(const carbs_param *p, double b)
{
    switch (p->space) {
    case CARBS_SPACE_CATEGORICAL:
        return b;
    case CARBS_SPACE_LINEAR:
        return b * sc(p);
    case CARBS_SPACE_LOG:
        return pow(p->base, b * sc(p));
    case CARBS_SPACE_LOGIT:
        return 1.0 / (pow(10.0, -b * sc(p)) + 1.0);
    }
    return NAN;
}

/* v_int = round(v / r) * r (half to even); logit spaces are never rounded (CARBS). */
static double round_value(const carbs_param *p, double v)
{
    if (p->space == CARBS_SPACE_CATEGORICAL)
        return round_even(v);
    if (!p->is_integer || p->space == CARBS_SPACE_LOGIT)
        return v;
    return round_even(v / p->rounding) * p->rounding;
}

double space_round_basic(const carbs_param *p, double b)
{
    if (p->space == CARBS_SPACE_CATEGORICAL)
        return round_even(b);
    if (!p->is_integer || p->space == CARBS_SPACE_LOGIT)
        return b;
    return space_to_basic(p, round_value(p, space_from_basic(p, b)));
}

double space_param_value(const carbs_param *p, double b)
{
    return round_value(p, space_from_basic(p, b));
}

void space_bounds_basic(const carbs_param *p, double *lo, double *hi)
{
    if (p->space == CARBS_SPACE_CATEGORICAL) { /* every index rounds inside */
        *lo = -0.5;
        *hi = (double)p->n_choices - 0.5;
        return;
    }
    double pad = p->is_integer ? 0.1 : 0.0;
    double mn = p->min - pad, mx = p->max + pad;
    /* A padded log/logit bound below 0 (or a logit bound above 1) has no basic image: keep the
     * natural bound, whose basic image is -inf / +inf. */
    if (p->space != CARBS_SPACE_LINEAR && mn < 0.0)
        mn = 0.0;
    if (p->space == CARBS_SPACE_LOGIT && mx > 1.0)
        mx = 1.0;
    *lo = isinf(mn) ? -INFINITY : space_to_basic(p, mn);
    *hi = isinf(mx) ? INFINITY : space_to_basic(p, mx);
}

static st_status validate_categorical(const carbs_param *p, char *msg)
{
    const char *n = p->name;
    if (p->n_choices < 2 || p->n_choices > CARBS_CHOICES_MAX)
        return st_errf(msg, ST_EINVAL, "parameter '%s': %zu choices (2 to %d)", n, p->n_choices,
                       CARBS_CHOICES_MAX);
    if (!(p->center >= 0 && p->center <= (double)(p->n_choices - 1)) ||
        p->center != floor(p->center))
        return st_errf(msg, ST_EINVAL, "parameter '%s': centre %g is not a choice index 0 .. %zu",
                       n, p->center, p->n_choices - 1);
    return ST_OK;
}

st_status space_validate(const carbs_param *p, char *msg)
{
    const char *n = p->name;
    if (!n || !*n)
        return st_errf(msg, ST_EINVAL, "parameter has no name");
    if (p->space != CARBS_SPACE_LINEAR && p->space != CARBS_SPACE_LOG &&
        p->space != CARBS_SPACE_LOGIT && p->space != CARBS_SPACE_CATEGORICAL)
        return st_errf(msg, ST_EINVAL, "parameter '%s': unknown space %d", n, (int)p->space);
    if (p->active_if && (!*p->active_if || !p->active_mask))
        return st_errf(msg, ST_EINVAL,
                       "parameter '%s': active_if needs a parameter name and a non-zero "
                       "active_mask",
                       n);
    if (p->space == CARBS_SPACE_CATEGORICAL)
        return validate_categorical(p, msg);
    if (isnan(p->min) || isnan(p->max))
        return st_errf(msg, ST_EINVAL, "parameter '%s': min or max is NaN", n);
    if (!(p->min < p->max))
        return st_errf(msg, ST_EINVAL, "parameter '%s': min %g is not below max %g", n, p->min,
                       p->max);
    if (!(sc(p) > 0) || !isfinite(sc(p)))
        return st_errf(msg, ST_EINVAL, "parameter '%s': scale %g must be positive and finite", n,
                       p->scale);
    if (p->space == CARBS_SPACE_LOG && (!(p->base > 1.0) || !isfinite(p->base)))
        return st_errf(msg, ST_EINVAL, "parameter '%s': log base %g must be > 1", n, p->base);
    if (p->is_integer && (!(p->rounding > 0) || !isfinite(p->rounding)))
        return st_errf(msg, ST_EINVAL, "parameter '%s': rounding %g must be positive", n,
                       p->rounding);
    if (p->space == CARBS_SPACE_LOG && p->min < 0)
        return st_errf(msg, ST_EINVAL, "parameter '%s': log space needs min >= 0 (got %g)", n,
                       p->min);
    if (p->space == CARBS_SPACE_LOGIT && (p->min < 0 || p->max > 1))
        return st_errf(msg, ST_EINVAL, "parameter '%s': logit space needs 0 <= min < max <= 1", n);
    if (!isfinite(p->center))
        return st_errf(msg, ST_EINVAL, "parameter '%s': centre %g is not finite", n, p->center);
    double lo, hi, b = space_to_basic(p, p->center);
    space_bounds_basic(p, &lo, &hi);
    if (!(b > lo && b < hi))
        return st_errf(msg, ST_EINVAL, "parameter '%s': centre %g is outside (%g, %g)", n,
                       p->center, p->min, p->max);
    if (p->is_integer && p->space == CARBS_SPACE_LOG && round_value(p, p->center) == 0.0)
        return st_errf(msg, ST_EINVAL,
                       "parameter '%s': integer log space centre %g rounds to 0 (use min >= %g)", n,
                       p->center, p->rounding);
    return ST_OK;
}
