/*
 * metrics.c — the metrics protocol, one JSON line at a time (docs/metrics-protocol.md).
 * runner_metrics_parse() turns a line into an event with its numeric fields; anything that is
 * not a protocol line is reported as ST_EFORMAT and counted by the caller, never fatal.
 * Python's json module writes NaN/Infinity/-Infinity, which JSON (and jansson) rejects, so those
 * bare tokens are quoted before parsing; the strings "NaN", "Infinity" and "-Infinity" are then
 * read as those numbers (as they would be from a trainer that quotes them). Depends on jansson.
 */
#include "runner/runner_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SENT_NAN  "NaN"
#define SENT_PINF "Infinity"
#define SENT_NINF "-Infinity"

/* The length of the valid UTF-8 sequence at p (p < end, *p >= 0x80), 0 if invalid (overlong
 * forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n = c >= 0xc2 && c <= 0xdf   ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    if (n == 0 || (size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

/* Copies `line` into `dst` (cap bytes) with the non-JSON number tokens of Python's json module
 * quoted and, inside strings, each byte that is not UTF-8 replaced by \ufffd. Returns the new
 * length, or 0 if it does not fit. */
static size_t rewrite_nonfinite(const char *line, size_t len, char *dst, size_t cap)
{
    size_t o = 0;
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep = NULL;
        size_t skip = 0;
        char ch = line[i];
        if (in_str) {
            if (ch == '\\' && i + 1 < len) {
                if (o + 2 >= cap)
                    return 0;
                dst[o++] = ch;
                dst[o++] = line[++i];
                continue;
            }
            if (ch == '"')
                in_str = 0;
            if ((unsigned char)ch >= 0x80) {
                const unsigned char *u = (const unsigned char *)line + i;
                size_t k = utf8_len(u, (const unsigned char *)line + len);
                if (o + (k ? k : 6) >= cap)
                    return 0;
                if (k) {
                    memcpy(dst + o, u, k);
                    o += k;
                    i += k - 1;
                } else {
                    memcpy(dst + o, "\\ufffd", 6);
                    o += 6;
                }
                continue;
            }
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == 'N' && len - i >= 3 && !memcmp(line + i, "NaN", 3)) {
            rep = "\"" SENT_NAN "\"", skip = 3;
        } else if (ch == 'I' && len - i >= 8 && !memcmp(line + i, "Infinity", 8)) {
            rep = "\"" SENT_PINF "\"", skip = 8;
        } else if (ch == '-' && len - i >= 9 && !memcmp(line + i, "-Infinity", 9)) {
            rep = "\"" SENT_NINF "\"", skip = 9;
        }
        if (rep) {
            size_t rl = strlen(rep);
            if (o + rl >= cap)
                return 0;
            memcpy(dst + o, rep, rl);
            o += rl;
            i += skip - 1;
            continue;
        }
        if (o + 1 >= cap)
            return 0;
        dst[o++] = ch;
    }
    dst[o] = '\0';
    return o;
}

/* A JSON value as a double: numbers, the non-finite sentinels, null as NaN. 0 if not numeric. */
static int json_as_double(const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    if (json_is_null(v)) {
        *out = NAN;
        return 1;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, SENT_NAN))
            *out = NAN;
        else if (!strcmp(s, SENT_PINF))
            *out = INFINITY;
        else if (!strcmp(s, SENT_NINF))
            *out = -INFINITY;
        else
            return 0;
        return 1;
    }
    return 0;
}

static runner_event event_kind(const char *s)
{
    if (!strcmp(s, "step"))
        return RUNNER_EVENT_STEP;
    if (!strcmp(s, "eval"))
        return RUNNER_EVENT_EVAL;
    if (!strcmp(s, "final"))
        return RUNNER_EVENT_FINAL;
    if (!strcmp(s, "diverged"))
        return RUNNER_EVENT_DIVERGED;
    return RUNNER_EVENT_OTHER;
}

/* The line as a JSON value (NULL: not JSON, too long, *oom set when out of memory). */
static json_t *load_line(const char *line, size_t len, int *oom)
{
    char stackbuf[4096];
    char *buf = stackbuf;
    *oom = 0;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    /* cheap rejection of the common non-protocol line (a log message) */
    size_t b = 0;
    while (b < len && (line[b] == ' ' || line[b] == '\t'))
        b++;
    if (b == len || line[b] != '{' || len > RUNNER_METRICS_LINE_MAX)
        return NULL;
    /* a byte that is not UTF-8 becomes the 6-byte \ufffd, the worst growth, plus the NUL */
    size_t cap = len * 6 + 16;
    if (cap > sizeof(stackbuf)) {
        buf = malloc(cap);
        if (!buf) {
            *oom = 1;
            return NULL;
        }
    }
    size_t n = rewrite_nonfinite(line, len, buf, cap);
    json_error_t jerr;
    json_t *root = n ? json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (buf != stackbuf)
        free(buf);
    return root;
}

int runner_metrics_has_field(const char *line, size_t len, const char *name)
{
    int oom;
    json_t *root = load_line(line, len, &oom);
    int has = json_is_object(root) && json_object_get(root, name) != NULL;
    json_decref(root);
    return has;
}

st_status runner_metrics_parse(const char *line, size_t len, runner_metrics_line *out)
{
    st_status rc = ST_EFORMAT;
    memset(out, 0, sizeof(*out));
    out->event = RUNNER_EVENT_NONE;
    out->step = -1;
    int oom;
    json_t *root = load_line(line, len, &oom);
    if (!root)
        return oom ? ST_ENOMEM : ST_EFORMAT;
    if (!json_is_object(root))
        goto free_root;
    json_t *ev = json_object_get(root, "event");
    if (!json_is_string(ev))
        goto free_root;
    out->event = event_kind(json_string_value(ev));

    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        double d;
        if (!strcmp(key, "event"))
            continue;
        if (!strcmp(key, "step")) {
            if (json_is_integer(val) && json_integer_value(val) >= 0)
                out->step = (int64_t)json_integer_value(val);
            else if (json_is_real(val) && json_real_value(val) >= 0 &&
                     json_real_value(val) < 9e18 &&
                     floor(json_real_value(val)) == json_real_value(val))
                out->step = (int64_t)json_real_value(val);
            continue;
        }
        if (!strcmp(key, "reason") && json_is_string(val)) {
            snprintf(out->reason, sizeof(out->reason), "%s", json_string_value(val));
            continue;
        }
        if (!json_as_double(val, &d))
            continue; /* strings, arrays and objects are allowed and ignored */
        if (out->n_metrics == RUNNER_METRICS_MAX || strlen(key) >= RUNNER_METRIC_NAME_MAX) {
            out->n_dropped++;
            continue;
        }
        runner_metric *m = &out->metrics[out->n_metrics++];
        memcpy(m->name, key, strlen(key) + 1);
        m->value = d;
    }
    rc = ST_OK;
free_root:
    json_decref(root);
    if (rc != ST_OK)
        out->event = RUNNER_EVENT_NONE;
    return rc;
}

int runner_metrics_get(const runner_metrics_line *l, const char *name, double *value)
{
    for (size_t i = 0; i < l->n_metrics; i++)
        if (!strcmp(l->metrics[i].name, name)) {
            if (value)
                *value = l->metrics[i].value;
            return 1;
        }
    return 0;
}
