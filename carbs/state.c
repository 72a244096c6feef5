/*
 * state.c — carbs_export/carbs_import: the whole optimizer state as bytes ("CARBSST1" magic,
 * a format version, a byte-order mark, then options, parameters, search centre, counters,
 * observations and outstanding suggestions; version 2 adds cost_cap_quantile and the
 * cost-only observations, version 3 the categorical and conditional fields of each parameter,
 * version 4 the option gp_max_points; versions 1 to 3 are still read, with its default),
 * and the same through a file written atomically.
 * The RNG is not stored: it is reseeded from the seed and the suggestion counter each time.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carbs/carbs_int.h"

#define MAGIC   "CARBSST1"
#define VERSION 4u
#define BOM     0x01020304u

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *w, const void *src, size_t len)
{
    if (w->oom)
        return;
    if (w->n + len > w->cap) {
        size_t cap = w->cap ? w->cap : 1024;
        while (cap < w->n + len)
            cap *= 2;
        unsigned char *q = realloc(w->p, cap);
        if (!q) {
            w->oom = 1;
            return;
        }
        w->p = q;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, len);
    w->n += len;
}

static void put_u64(wbuf *w, uint64_t v)
{
    put(w, &v, sizeof(v));
}

static void put_f64(wbuf *w, double v)
{
    put(w, &v, sizeof(v));
}

static void put_opts(wbuf *w, const carbs_options *o)
{
    put_u64(w, (uint64_t)o->mode);
    put_u64(w, (uint64_t)o->maximize);
    put_u64(w, o->seed);
    put_u64(w, o->num_random_samples);
    put_u64(w, (uint64_t)(int64_t)o->failures_count_as_random);
    put_u64(w, (uint64_t)o->design);
    put_f64(w, o->search_radius);
    put_f64(w, o->exploration_bias);
    put_u64(w, o->candidates_per_dim);
    put_u64(w, o->resample_frequency);
    put_f64(w, o->max_suggestion_cost);
    put_f64(w, o->min_pareto_cost_fraction);
    put_u64(w, (uint64_t)o->pareto_conservative);
    put_u64(w, (uint64_t)o->ei_clamp);
    put_u64(w, (uint64_t)o->ei_always_max);
    put_u64(w, (uint64_t)o->fantasy);
    put_u64(w, o->max_outstanding_age);
    put_u64(w, (uint64_t)o->output_transform);
    put_u64(w, o->gp_restarts);
    put_u64(w, o->gp_max_fit_points);
    put_f64(w, o->cost_cap_quantile); /* version 2 */
    put_u64(w, o->gp_max_points);     /* version 4 */
}

st_status carbs_export(const carbs *c, void **buf, size_t *len)
{
    wbuf w = {0};
    uint32_t v = VERSION, bom = BOM;
    put(&w, MAGIC, 8);
    put(&w, &v, 4);
    put(&w, &bom, 4);
    put_opts(&w, &c->o);
    put_u64(&w, c->d);
    for (size_t i = 0; i < c->d; i++) {
        const carbs_param *p = &c->params[i];
        uint64_t nl = strlen(p->name);
        put_u64(&w, nl);
        put(&w, p->name, nl);
        put_u64(&w, (uint64_t)p->space);
        put_f64(&w, p->min);
        put_f64(&w, p->max);
        put_f64(&w, p->center);
        put_f64(&w, p->scale);
        put_f64(&w, p->base);
        put_u64(&w, (uint64_t)p->is_integer);
        put_f64(&w, p->rounding);
        uint64_t cl = p->active_if ? strlen(p->active_if) : 0; /* version 3 */
        put_u64(&w, (uint64_t)p->n_choices);
        put_u64(&w, p->active_mask);
        put_u64(&w, cl);
        put(&w, p->active_if ? p->active_if : "", cl);
    }
    put(&w, c->center_b, c->d * sizeof(double));
    put_u64(&w, c->next_id);
    put_u64(&w, c->n_suggest);
    put_u64(&w, c->resample_count);
    put_u64(&w, c->n_design);
    put_u64(&w, c->n_obs);
    for (size_t r = 0; r < c->n_obs; r++) {
        put(&w, c->obs_x + r * c->d, c->d * sizeof(double));
        put_f64(&w, c->obs_y[r]);
        put_f64(&w, c->obs_c[r]);
        put_u64(&w, (uint64_t)c->obs_fail[r]);
    }
    put_u64(&w, c->n_out);
    for (size_t k = 0; k < c->n_out; k++) {
        put_u64(&w, c->out_id[k]);
        put(&w, c->out_x + k * c->d, c->d * sizeof(double));
        put_u64(&w, c->out_born[k]);
    }
    put_u64(&w, c->n_cobs); /* version 2 */
    for (size_t k = 0; k < c->n_cobs; k++) {
        put(&w, c->cobs_x + k * c->d, c->d * sizeof(double));
        put_f64(&w, c->cobs_c[k]);
    }
    if (w.oom) {
        free(w.p);
        return ST_ENOMEM;
    }
    *buf = w.p;
    *len = w.n;
    return ST_OK;
}

typedef struct rbuf {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rbuf;

static void get(rbuf *r, void *dst, size_t len)
{
    if (r->bad || len > r->n - r->at) {
        r->bad = 1;
        memset(dst, 0, len);
        return;
    }
    memcpy(dst, r->p + r->at, len);
    r->at += len;
}

static uint64_t get_u64(rbuf *r)
{
    uint64_t v;
    get(r, &v, sizeof(v));
    return v;
}

static double get_f64(rbuf *r)
{
    double v;
    get(r, &v, sizeof(v));
    return v;
}

static void get_opts(rbuf *r, carbs_options *o, uint32_t version)
{
    *o = carbs_options_default(); /* fields a version 1 state lacks */
    o->mode = (carbs_mode)get_u64(r);
    o->maximize = (int)get_u64(r);
    o->seed = get_u64(r);
    o->num_random_samples = get_u64(r);
    o->failures_count_as_random = (int)(int64_t)get_u64(r);
    o->design = (carbs_design)get_u64(r);
    o->search_radius = get_f64(r);
    o->exploration_bias = get_f64(r);
    o->candidates_per_dim = get_u64(r);
    o->resample_frequency = get_u64(r);
    o->max_suggestion_cost = get_f64(r);
    o->min_pareto_cost_fraction = get_f64(r);
    o->pareto_conservative = (int)get_u64(r);
    o->ei_clamp = (int)get_u64(r);
    o->ei_always_max = (int)get_u64(r);
    o->fantasy = (carbs_fantasy)get_u64(r);
    o->max_outstanding_age = get_u64(r);
    o->output_transform = (carbs_transform)get_u64(r);
    o->gp_restarts = get_u64(r);
    o->gp_max_fit_points = get_u64(r);
    if (version >= 2)
        o->cost_cap_quantile = get_f64(r);
    if (version >= 4)
        o->gp_max_points = get_u64(r);
}

/* Version 2: the cost-only observations. */
static st_status import_cost_obs(rbuf *r, carbs *c, double *x, char *msg)
{
    size_t d = c->d;
    uint64_t n = get_u64(r);
    if (r->bad || n > (r->n - r->at) / (8 * (d + 1)))
        return st_errf(msg, ST_EFORMAT, "optimizer state is truncated or corrupt (cost obs)");
    for (uint64_t k = 0; k < n; k++) {
        get(r, x, d * sizeof(double));
        double cost = get_f64(r);
        if (r->bad)
            break;
        if (carbs_observe_cost(c, 0, x, cost) != ST_OK)
            return st_errf(msg, ST_EFORMAT, "optimizer state: cost observation %llu: %s",
                           (unsigned long long)k, carbs_errmsg(c));
    }
    return ST_OK;
}

/* The magic, version and byte order; the version into *v. */
static st_status import_header(rbuf *r, uint32_t *v, char *msg)
{
    char magic[8];
    uint32_t bom;
    get(r, magic, 8);
    get(r, v, 4);
    get(r, &bom, 4);
    if (r->bad || memcmp(magic, MAGIC, 8))
        return st_errf(msg, ST_EFORMAT, "not a scaletune optimizer state (bad magic)");
    if (bom != BOM)
        return st_errf(msg, ST_EFORMAT,
                       "optimizer state was written on a machine of the other "
                       "byte order");
    if (*v < 1 || *v > VERSION)
        return st_errf(msg, ST_EFORMAT,
                       "optimizer state version %u; this build reads versions 1 to %u", *v,
                       VERSION);
    return ST_OK;
}

/* A length-prefixed string of at most 4096 bytes into a fresh *out, its length into *len;
 * r->bad when it does not fit. ST_ENOMEM, else ST_OK. */
static st_status get_str(rbuf *r, char **out, uint64_t *len)
{
    *len = get_u64(r);
    if (r->bad || *len > r->n - r->at || *len > 4096) {
        r->bad = 1;
        return ST_OK;
    }
    *out = calloc(*len + 1, 1);
    if (!*out)
        return ST_ENOMEM;
    get(r, *out, *len);
    return ST_OK;
}

/* The d parameters of a version v state into params; their strings into names (names, then
 * active_if). */
static st_status import_params(rbuf *r, uint32_t v, size_t d, carbs_param *params, char **names,
                               char *msg)
{
    for (size_t i = 0; i < d && !r->bad; i++) {
        uint64_t nl, cl;
        if (get_str(r, &names[i], &nl) != ST_OK)
            return st_errf(msg, ST_ENOMEM, "out of memory");
        if (r->bad)
            break;
        params[i].name = names[i];
        params[i].space = (carbs_space_kind)get_u64(r);
        params[i].min = get_f64(r);
        params[i].max = get_f64(r);
        params[i].center = get_f64(r);
        params[i].scale = get_f64(r);
        params[i].base = get_f64(r);
        params[i].is_integer = (int)get_u64(r);
        params[i].rounding = get_f64(r);
        if (v >= 3) {
            params[i].n_choices = (size_t)get_u64(r);
            params[i].active_mask = get_u64(r);
            if (get_str(r, &names[d + i], &cl) != ST_OK)
                return st_errf(msg, ST_ENOMEM, "out of memory");
            if (r->bad)
                break;
            params[i].active_if = cl ? names[d + i] : NULL;
        }
    }
    if (r->bad)
        return st_errf(msg, ST_EFORMAT, "optimizer state is truncated or corrupt (parameters)");
    return ST_OK;
}

/* The search centre (inside its bounds), the counters and the observations, into c. */
static st_status import_observations(rbuf *r, carbs *c, double *x, char *msg)
{
    size_t d = c->d;
    get(r, c->center_b, d * sizeof(double));
    for (size_t i = 0; i < d && !r->bad; i++)
        if (!(c->center_b[i] > c->lo_b[i] && c->center_b[i] < c->hi_b[i]))
            return st_errf(msg, ST_EFORMAT,
                           "optimizer state: search centre of '%s' is outside its "
                           "bounds",
                           c->params[i].name);
    c->next_id = get_u64(r);
    c->n_suggest = get_u64(r);
    c->resample_count = get_u64(r);
    c->n_design = get_u64(r);
    uint64_t n_obs = get_u64(r);
    if (r->bad || n_obs > (r->n - r->at) / (8 * (d + 3)))
        return st_errf(msg, ST_EFORMAT, "optimizer state is truncated or corrupt (observations)");
    for (uint64_t k = 0; k < n_obs; k++) {
        get(r, x, d * sizeof(double));
        double y = get_f64(r), cost = get_f64(r);
        int failed = (int)get_u64(r);
        if (r->bad)
            break;
        if (carbs_priv_observe(c, 0, x, y, cost, failed) != ST_OK) /* as saved, unchecked */
            return st_errf(msg, ST_EFORMAT, "optimizer state: observation %llu: %s",
                           (unsigned long long)k, carbs_errmsg(c));
    }
    return ST_OK;
}

/* The outstanding suggestions, with their ages (carbs_add_outstanding counts them again: the
 * caller restores the counters). */
static st_status import_outstanding(rbuf *r, carbs *c, double *x, char *msg)
{
    size_t d = c->d;
    uint64_t n_out = get_u64(r);
    if (r->bad || n_out > (r->n - r->at) / (8 * (d + 2)))
        return st_errf(msg, ST_EFORMAT, "optimizer state is truncated or corrupt (suggestions)");
    for (uint64_t k = 0; k < n_out; k++) {
        uint64_t id = get_u64(r);
        get(r, x, d * sizeof(double));
        uint64_t born = get_u64(r);
        if (r->bad)
            break;
        if (carbs_add_outstanding(c, id, x) != ST_OK)
            return st_errf(msg, ST_EFORMAT, "optimizer state: suggestion %llu: %s",
                           (unsigned long long)id, carbs_errmsg(c));
        c->out_born[c->n_out - 1] = (size_t)born;
    }
    return ST_OK;
}

st_status carbs_import(const void *buf, size_t len, carbs **out, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *msg = errmsg ? errmsg : scratch;
    msg[0] = 0;
    *out = NULL;
    rbuf r = {buf, len, 0, 0};
    uint32_t v;
    st_status s = import_header(&r, &v, msg);
    if (s != ST_OK)
        return s;
    carbs_options o;
    get_opts(&r, &o, v);
    uint64_t d = get_u64(&r);
    if (r.bad || d > (len - r.at) / 16) /* d = 0: an empty space (carbs_create) */
        return st_errf(msg, ST_EFORMAT, "optimizer state is truncated or corrupt (dimension)");
    carbs_param *params = calloc(d ? d : 1, sizeof(*params));
    char **names = calloc(d ? 2 * d : 1, sizeof(*names)); /* names, then active_if */
    double *x = malloc((d ? d : 1) * sizeof(double));
    carbs *c = NULL;
    if (!params || !names || !x)
        s = st_errf(msg, ST_ENOMEM, "out of memory");
    if (s == ST_OK)
        s = import_params(&r, v, d, params, names, msg);
    if (s == ST_OK && (s = carbs_create(params, d, &o, &c, msg)) == ST_EINVAL)
        s = ST_EFORMAT;
    if (s == ST_OK)
        s = import_observations(&r, c, x, msg);
    uint64_t next_id = 0, n_suggest = 0, n_design = 0; /* as saved */
    if (s == ST_OK) {
        next_id = c->next_id;
        n_suggest = c->n_suggest;
        n_design = c->n_design;
        s = import_outstanding(&r, c, x, msg);
    }
    if (s == ST_OK && v >= 2)
        s = import_cost_obs(&r, c, x, msg);
    if (s == ST_OK && (r.bad || r.at != len))
        s = st_errf(msg, ST_EFORMAT, "optimizer state is truncated or has trailing bytes");
    if (s == ST_OK) {
        c->next_id = next_id > c->next_id ? next_id : c->next_id;
        c->n_suggest = n_suggest;
        c->n_design = n_design;
    }
    for (size_t i = 0; names && i < 2 * d; i++)
        free(names[i]);
    free(names);
    free(params);
    free(x);
    if (s != ST_OK) {
        carbs_destroy(c);
        return s;
    }
    *out = c;
    return ST_OK;
}

st_status carbs_save_file(const carbs *c, const char *path, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *msg = errmsg ? errmsg : scratch;
    msg[0] = 0;
    void *buf;
    size_t len;
    if (carbs_export(c, &buf, &len) != ST_OK)
        return st_errf(msg, ST_ENOMEM, "out of memory");
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        free(buf);
        return st_errf(msg, ST_ENOMEM, "out of memory");
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    st_status s = ST_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        s = st_errf(msg, errno == ENOSPC ? ST_ENOSPC : ST_EIO, "%s: %s", tmp, strerror(errno));
    } else {
        size_t wr = fwrite(buf, 1, len, f);
        int e1 = wr != len ? errno : 0;
        int e2 = fflush(f) ? errno : 0;
        if (fclose(f) && !e1 && !e2)
            e2 = errno;
        if (wr != len || e1 || e2) {
            int e = e1 ? e1 : e2;
            s = st_errf(msg, e == ENOSPC ? ST_ENOSPC : ST_EIO, "%s: %s", tmp,
                        strerror(e ? e : EIO));
            remove(tmp);
        } else if (rename(tmp, path)) {
            s = st_errf(msg, ST_EIO, "%s: %s", path, strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    free(buf);
    return s;
}

st_status carbs_load_file(const char *path, carbs **out, char *errmsg)
{
    char scratch[ST_ERRMSG_MAX];
    char *msg = errmsg ? errmsg : scratch;
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return st_errf(msg, ST_EIO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        unsigned char *q = realloc(buf, cap * 2);
        if (!q) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = q;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return st_errf(msg, ST_ENOMEM, "out of memory");
    if (err) {
        free(buf);
        return st_errf(msg, ST_EIO, "%s: read error", path);
    }
    char inner[ST_ERRMSG_MAX];
    st_status s = carbs_import(buf, n, out, inner);
    free(buf);
    if (s != ST_OK)
        st_errf(msg, s, "%s: %s", path, inner);
    return s;
}
