/*
 * backend_slurm_rest.c — the slurmrestd route of the Slurm backend: Slurm 22.05's REST API,
 * v0.0.38 paths, over one reused libcurl handle; JSON built and read with jansson. Submit is
 * POST /slurm/v0.0.38/job/submit, the batched poll one GET /slurm/v0.0.38/jobs, cancel
 * DELETE /slurm/v0.0.38/job/<id>. Authentication: a JWT in X-SLURM-USER-TOKEN (read from an
 * environment variable or a file at each request, never logged, kept or stored), or a unix
 * socket with slurmrestd's local authentication. HTTP errors and Slurm's `errors` arrays become
 * messages; connection errors are retried a few times with timeouts. Needs curl_global_init
 * (st_global_init) first.
 */
#define _GNU_SOURCE
#include "runner/slurm_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API         "/slurm/v0.0.38"
#define TRIES       3
#define BODY_MAX    (256u << 20) /* a GET /jobs of a large cluster is big, not this big */
#define TOKEN_MAX   8192
#define MESSAGE_MAX 300

extern char **environ;

typedef struct rest {
    CURL *curl;
    char *body; /* the last response */
    size_t len, cap;
    int too_big;
    char base[1024]; /* "http://host:port" or "http://localhost" for a socket */
    char user[256];
} rest;

static size_t on_data(char *p, size_t size, size_t nmemb, void *data)
{
    rest *r = data;
    size_t n = size * nmemb;
    if (r->len + n + 1 > r->cap) {
        size_t nc = r->cap ? r->cap : 65536;
        while (nc < r->len + n + 1)
            nc *= 2;
        if (nc > BODY_MAX) {
            r->too_big = 1;
            return 0; /* curl stops with CURLE_WRITE_ERROR */
        }
        char *nb = realloc(r->body, nc);
        if (!nb)
            return 0;
        r->body = nb;
        r->cap = nc;
    }
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = '\0';
    return n;
}

static void rest_destroy(slurm *s)
{
    rest *r = s->route_state;
    if (!r)
        return;
    if (r->curl)
        curl_easy_cleanup(r->curl);
    free(r->body);
    free(r);
    s->route_state = NULL;
}

st_status slurm_rest_create(slurm *s, char *errmsg)
{
    const runner_slurm_config *sc = s->sc;
    rest *r = calloc(1, sizeof(*r));
    if (!r)
        return ST_ENOMEM;
    s->route_state = r;
    r->curl = curl_easy_init();
    if (!r->curl) {
        rest_destroy(s);
        return st_errf(errmsg, ST_EBACKEND, "slurmrestd: curl_easy_init failed");
    }
    snprintf(r->base, sizeof(r->base), "%s", sc->rest_url ? sc->rest_url : "http://localhost");
    if (sc->rest_user) {
        snprintf(r->user, sizeof(r->user), "%s", sc->rest_user);
    } else {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) == 0 && res)
            snprintf(r->user, sizeof(r->user), "%s", pw.pw_name);
        else
            snprintf(r->user, sizeof(r->user), "%ld", (long)geteuid());
    }
    return ST_OK;
}

/* The JWT, from the environment variable or the file, trimmed. Never put in a message. */
static st_status read_token(const runner_slurm_config *sc, char *tok, size_t cap, char *errmsg)
{
    tok[0] = '\0';
    if (sc->token_file) {
        FILE *f = fopen(sc->token_file, "r");
        if (!f)
            return st_errf(errmsg, ST_EBACKEND, "slurmrestd token file %s: %s", sc->token_file,
                           strerror(errno));
        size_t n = fread(tok, 1, cap - 1, f);
        fclose(f);
        tok[n] = '\0';
    } else if (sc->token_env) {
        const char *v = getenv(sc->token_env);
        snprintf(tok, cap, "%s", v ? v : "");
    }
    /* a file written by `scontrol token` may hold "SLURM_JWT=..." */
    if (!strncmp(tok, "SLURM_JWT=", 10))
        memmove(tok, tok + 10, strlen(tok + 10) + 1);
    size_t l = strlen(tok);
    while (l && (tok[l - 1] == '\n' || tok[l - 1] == '\r' || tok[l - 1] == ' '))
        tok[--l] = '\0';
    if (!l)
        return st_errf(errmsg, ST_EBACKEND,
                       sc->token_file ? "slurmrestd token file %s is empty"
                                      : "no slurmrestd token: the environment variable %s is "
                                        "unset or empty (scontrol token)",
                       sc->token_file ? sc->token_file : sc->token_env);
    for (size_t i = 0; i < l; i++)
        if ((unsigned char)tok[i] < 0x21 || tok[i] == 0x7f)
            return st_errf(errmsg, ST_EBACKEND,
                           "the slurmrestd token holds a control or "
                           "space character");
    return ST_OK;
}

/* Slurm's error arrays: "errors": [{"error": ..., "description": ..., "error_number" or
 * "error_code": N, "source": ...}, ...]. Writes up to three of them into msg; returns the first
 * error number found, 0 if there are no errors, -1 for errors without a number. */
static int slurm_errors(json_t *root, char *msg, size_t cap)
{
    json_t *errs = json_object_get(root, "errors");
    size_t n_err = json_is_array(errs) ? json_array_size(errs) : 0;
    int num = n_err ? -1 : 0;
    size_t l = 0;
    msg[0] = '\0';
    for (size_t i = 0; i < n_err; i++) {
        json_t *e = json_array_get(errs, i);
        const char *err = json_string_value(json_object_get(e, "error"));
        const char *desc = json_string_value(json_object_get(e, "description"));
        const char *src = json_string_value(json_object_get(e, "source"));
        json_t *no = json_object_get(e, "error_number");
        if (!json_is_integer(no))
            no = json_object_get(e, "error_code");
        if (num == -1 && json_is_integer(no) && json_integer_value(no) > 0)
            num = (int)json_integer_value(no);
        if (i >= 3 || l + 1 >= cap)
            continue;
        l += (size_t)snprintf(msg + l, cap - l, "%s%s", i ? "; " : "",
                              err ? err : (desc ? desc : "error"));
        if (err && desc && strcmp(err, desc) && l + 1 < cap)
            l += (size_t)snprintf(msg + l, cap - l, ": %s", desc);
        if (src && l + 1 < cap)
            l += (size_t)snprintf(msg + l, cap - l, " [%s]", src);
    }
    if (n_err > 3 && l + 1 < cap)
        snprintf(msg + l, cap - l, "; %zu more", n_err - 3);
    return num;
}

/* Slurm's errno values that mean slurmctld could not be reached (slurm_errno.h: 1000-1099
 * communication errors, 1800-1899 slurmctld communication, 5004 socket timeout). */
static int unreachable_code(int n)
{
    return (n >= 1000 && n < 1100) || (n >= 1800 && n < 1900) || n == 5004;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/*
 * One request: method ("GET", "POST", "DELETE"), path below the base, JSON body or NULL.
 * `idempotent` requests are retried on any transport error; a submit only when nothing can have
 * reached the server (no connection). *out: the parsed response (json_decref), NULL if empty.
 * ST_OK (HTTP 2xx and no Slurm errors), ST_EBACKEND, ST_ENETWORK, ST_ENOMEM; *slurm_err: the
 * first Slurm error number (0 none).
 */
static st_status request(slurm *s, const char *method, const char *path, const char *body,
                         int idempotent, json_t **out, int *slurm_err, char *errmsg)
{
    rest *r = s->route_state;
    const runner_slurm_config *sc = s->sc;
    char url[2048], tok[TOKEN_MAX] = "";
    *out = NULL;
    *slurm_err = 0;
    snprintf(url, sizeof(url), "%s%s", r->base, path);
    struct curl_slist *h = NULL, *t;
    st_status rc = ST_OK;
    if (sc->rest_url && (rc = read_token(sc, tok, sizeof(tok), errmsg)))
        return rc;
    char line[TOKEN_MAX + 64];
    t = curl_slist_append(h, "Accept: application/json");
    h = t ? t : h;
    if (body && t) {
        t = curl_slist_append(h, "Content-Type: application/json");
        h = t ? t : h;
    }
    if (sc->rest_url && t) {
        snprintf(line, sizeof(line), "X-SLURM-USER-NAME: %s", r->user);
        t = curl_slist_append(h, line);
        h = t ? t : h;
        snprintf(line, sizeof(line), "X-SLURM-USER-TOKEN: %s", tok);
        if (t)
            t = curl_slist_append(h, line);
        h = t ? t : h;
    }
    /* the token now lives only in curl's header list, freed (after wiping) below */
    explicit_bzero(tok, sizeof(tok));
    explicit_bzero(line, sizeof(line));
    if (!t) {
        curl_slist_free_all(h);
        return ST_ENOMEM;
    }

    CURL *c = r->curl;
    long timeout_ms = (long)(sc->command_timeout_seconds * 1000);
    long http = 0;
    CURLcode cc = CURLE_OK;
    char cerr[CURL_ERROR_SIZE];
    for (int attempt = 0; attempt < TRIES; attempt++) {
        if (attempt)
            sleep_s(0.25 * (1 << (attempt - 1)));
        curl_easy_reset(c);
        r->len = 0;
        r->too_big = 0;
        if (r->body)
            r->body[0] = '\0';
        cerr[0] = '\0';
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (body)
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        if (sc->rest_socket)
            curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sc->rest_socket);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        cc = curl_easy_perform(c);
        if (cc == CURLE_OK)
            break;
        int nothing_sent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                           cc == CURLE_COULDNT_RESOLVE_PROXY;
        int transient = nothing_sent || cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_RECV_ERROR ||
                        cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
                        cc == CURLE_PARTIAL_FILE;
        if (!transient || (!idempotent && !nothing_sent))
            break;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    for (struct curl_slist *p = h; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data));
    curl_slist_free_all(h);

    const char *where = sc->rest_socket ? sc->rest_socket : sc->rest_url;
    if (cc != CURLE_OK) {
        if (r->too_big)
            return st_errf(errmsg, ST_EBACKEND, "slurmrestd (%s): %s %s answered more than %u MiB",
                           where, method, path, BODY_MAX >> 20);
        int nothing_sent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                           cc == CURLE_COULDNT_RESOLVE_PROXY;
        /* a submit that may have reached the server is not "nothing submitted" */
        return st_errf(errmsg, idempotent || nothing_sent ? ST_ENETWORK : ST_EBACKEND,
                       "slurmrestd (%s) unreachable: %s %s: %s (%d tries)", where, method, path,
                       cerr[0] ? cerr : curl_easy_strerror(cc),
                       idempotent || nothing_sent ? TRIES : 1);
    }
    json_t *root = NULL;
    if (r->len) {
        json_error_t je;
        root = json_loadb(r->body, r->len, 0, &je);
    }
    char smsg[MESSAGE_MAX] = "";
    int n = root ? slurm_errors(root, smsg, sizeof(smsg)) : 0;
    *slurm_err = n;
    if (http == 401 || http == 403) {
        json_decref(root);
        return st_errf(errmsg, ST_EBACKEND,
                       "slurmrestd (%s) refused the credentials (HTTP %ld) for user '%s': check "
                       "backend.rest.user and the token (%s %s)%s%s",
                       where, http, r->user, sc->token_file ? "file" : "variable",
                       sc->token_file ? sc->token_file : (sc->token_env ? sc->token_env : "-"),
                       smsg[0] ? ": " : "", smsg);
    }
    if (n) {
        json_decref(root);
        /* 5005: slurmctld hung up on slurmrestd, which is how it answers a JWT it rejects */
        return st_errf(errmsg, unreachable_code(n) ? ST_ENETWORK : ST_EBACKEND,
                       "slurmrestd: %s %s: %s (HTTP %ld)%s", method, path, smsg, http,
                       n == 5005 && sc->rest_url
                           ? "; slurmctld closed the connection: is the token valid and not "
                             "expired?"
                           : "");
    }
    if (http < 200 || http >= 300 || (r->len && !root)) {
        char snippet[160];
        snprintf(snippet, sizeof(snippet), "%.150s", r->body ? r->body : "");
        for (char *p = snippet; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        json_decref(root);
        return st_errf(errmsg, http >= 500 ? ST_ENETWORK : ST_EBACKEND,
                       "slurmrestd: %s %s: HTTP %ld%s%s", method, path, http,
                       snippet[0] ? ": " : "", snippet);
    }
    *out = root;
    return ST_OK;
}

/* The job's environment: the controller's, without tokens and without Slurm's own variables
 * (a controller inside an allocation must not hand its job id to its jobs), as sbatch
 * --export=ALL would give it. */
static json_t *job_environment(const runner_slurm_config *sc)
{
    const char *drop[4];
    slurm_secret_vars(sc, drop);
    json_t *env = json_object();
    if (!env)
        return NULL;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e || !strncmp(*e, "SLURM", 5))
            continue;
        int secret = 0;
        for (const char *const *d = drop; *d && !secret; d++)
            secret = strlen(*d) == (size_t)(eq - *e) && !strncmp(*e, *d, (size_t)(eq - *e));
        if (secret)
            continue;
        char key[256];
        if ((size_t)(eq - *e) >= sizeof(key))
            continue;
        memcpy(key, *e, (size_t)(eq - *e));
        key[eq - *e] = '\0';
        json_object_set_new(env, key, json_string(eq + 1));
    }
    if (json_object_size(env) == 0) /* slurmrestd requires a non-empty environment */
        json_object_set_new(env, "PATH", json_string("/usr/bin:/bin"));
    return env;
}

static st_status rest_submit(slurm *s, const char *script, const char *job_name,
                             const runner_job_spec *spec, char *job_id, size_t cap, char *errmsg)
{
    const runner_slurm_config *sc = s->sc;
    char out[4200];
    snprintf(out, sizeof(out), "%s/slurm-%%j.out", spec->dir);
    json_t *job = json_object(), *root = json_object(), *env = job_environment(sc);
    if (!job || !root || !env) {
        json_decref(job);
        json_decref(root);
        json_decref(env);
        return ST_ENOMEM;
    }
    json_object_set_new(job, "name", json_string(job_name));
    json_object_set_new(job, "current_working_directory", json_string(spec->dir));
    json_object_set_new(job, "standard_output", json_string(out));
    json_object_set_new(job, "standard_error", json_string(out));
    json_object_set_new(job, "requeue", json_false());
    json_object_set_new(job, "environment", env);
    if (sc->partition)
        json_object_set_new(job, "partition", json_string(sc->partition));
    if (sc->account)
        json_object_set_new(job, "account", json_string(sc->account));
    if (sc->qos)
        json_object_set_new(job, "qos", json_string(sc->qos));
    if (sc->time_limit_minutes)
        json_object_set_new(job, "time_limit", json_integer(sc->time_limit_minutes));
    if (sc->gres)
        json_object_set_new(job, "gres", json_string(sc->gres));
    if (sc->cpus_per_task)
        json_object_set_new(job, "cpus_per_task", json_integer(sc->cpus_per_task));
    /* sbatch's --exclude (the quarantined nodes): v0.0.38 names it exclude_nodes ("exclude"
     * is refused as an unknown key; tests/slurm/slurm_backend.c) */
    if (spec->exclude && *spec->exclude)
        json_object_set_new(job, "exclude_nodes", json_string(spec->exclude));
    json_object_set_new(root, "script", json_string(script));
    json_object_set_new(root, "job", job);
    char *body = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!body)
        return ST_ENOMEM;
    json_t *resp = NULL;
    int se;
    st_status rc = request(s, "POST", API "/job/submit", body, 0, &resp, &se, errmsg);
    free(body);
    if (rc)
        return rc;
    json_t *id = json_object_get(resp, "job_id");
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        rc = st_errf(errmsg, ST_EBACKEND, "slurmrestd: the submit answer holds no job_id");
    else
        snprintf(job_id, cap, "%lld", (long long)json_integer_value(id));
    json_decref(resp);
    return rc;
}

/* GET /jobs: every job slurmctld knows, one request. */
static st_status get_jobs(slurm *s, json_t **resp, char *errmsg)
{
    int se;
    st_status rc = request(s, "GET", API "/jobs", NULL, 1, resp, &se, errmsg);
    if (!rc && !json_is_array(json_object_get(*resp, "jobs"))) {
        json_decref(*resp);
        *resp = NULL;
        rc = st_errf(errmsg, ST_EBACKEND, "slurmrestd: GET " API "/jobs: no 'jobs' array");
    }
    return rc;
}

static st_status rest_query(slurm *s, const char *const *ids, size_t n, slurm_info *info,
                            char *errmsg)
{
    for (size_t i = 0; i < n; i++)
        memset(&info[i], 0, sizeof(info[i]));
    json_t *resp = NULL;
    st_status rc = get_jobs(s, &resp, errmsg);
    if (rc)
        return rc;
    json_t *jobs = json_object_get(resp, "jobs"), *j;
    size_t k;
    json_array_foreach(jobs, k, j)
    {
        json_t *id = json_object_get(j, "job_id");
        if (!json_is_integer(id))
            continue;
        char sid[32];
        snprintf(sid, sizeof(sid), "%lld", (long long)json_integer_value(id));
        for (size_t i = 0; i < n; i++) {
            if (strcmp(ids[i], sid))
                continue;
            const char *st = json_string_value(json_object_get(j, "job_state"));
            const char *re = json_string_value(json_object_get(j, "state_reason"));
            json_t *ec = json_object_get(j, "exit_code");
            info[i].known = 1;
            snprintf(info[i].state, sizeof(info[i].state), "%s", st ? st : "UNKNOWN");
            snprintf(info[i].reason, sizeof(info[i].reason), "%s", re ? re : "");
            if (json_is_integer(ec)) {
                info[i].has_exit = 1;
                info[i].exit_status = (int)json_integer_value(ec);
            }
        }
    }
    json_decref(resp);
    return ST_OK;
}

static st_status rest_cancel(slurm *s, const char *id, int force, char *errmsg)
{
    /* the default signal makes slurmctld end the job as scancel does: SIGTERM, KillWait,
     * SIGKILL; force sends SIGKILL to the job's processes at once */
    char path[128];
    snprintf(path, sizeof(path), API "/job/%s%s", id, force ? "?signal=SIGKILL" : "");
    json_t *resp = NULL;
    int se;
    st_status rc = request(s, "DELETE", path, NULL, 1, &resp, &se, errmsg);
    json_decref(resp);
    /* ESLURM_INVALID_JOB_ID, ESLURM_ALREADY_DONE: gone already */
    if (rc == ST_EBACKEND && (se == 2017 || se == 2021))
        rc = ST_OK;
    return rc;
}

static st_status rest_find(slurm *s, const char *job_name, char *job_id, size_t cap, char *errmsg)
{
    json_t *resp = NULL;
    st_status rc = get_jobs(s, &resp, errmsg);
    if (rc)
        return rc;
    json_t *jobs = json_object_get(resp, "jobs"), *j;
    size_t k;
    rc = ST_ENOTFOUND;
    json_array_foreach(jobs, k, j)
    {
        const char *name = json_string_value(json_object_get(j, "name"));
        json_t *id = json_object_get(j, "job_id");
        if (name && json_is_integer(id) && !strcmp(name, job_name)) {
            snprintf(job_id, cap, "%lld", (long long)json_integer_value(id));
            rc = ST_OK;
            break;
        }
    }
    json_decref(resp);
    return rc;
}

const slurm_route slurm_route_rest = {
    rest_submit, rest_query, NULL, rest_cancel, rest_find, rest_destroy,
};
