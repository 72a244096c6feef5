/*
 * st.h — what every scaletune module shares: the status type, its messages, process-wide
 * set-up of our dependencies, a per-handle random number generator and the allocator hooks.
 * Kept small on purpose: no logging framework, no globals of our own. Depends on GSL.
 *
 * Thread-safety: st_strerror() is safe from any thread. st_global_init() must be called once
 * by main() before any other thread starts (curl's rule); everything else is per-handle.
 */
#ifndef ST_H
#define ST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Status codes. ST_OK is 0, errors are positive. APPEND ONLY: a value never changes meaning and
 * is never renumbered (files and the Python binding store these numbers).
 */
typedef enum st_status {
    ST_OK = 0,
    ST_EINVAL = 1,       /* an argument or an input value is invalid */
    ST_ENOMEM = 2,       /* an allocation failed */
    ST_EIO = 3,          /* reading or writing a file failed */
    ST_ENUMERIC = 4,     /* a numerical method failed (not positive definite, no convergence) */
    ST_ENOTFOUND = 5,    /* a named thing (parameter, suggestion id, sweep, column) is unknown */
    ST_ESTATE = 6,       /* the call is not valid in the handle's current state */
    ST_EFORMAT = 7,      /* a file or record is malformed (bad magic, version, syntax) */
    ST_ERANGE = 8,       /* a value is outside its allowed range */
    ST_EUNSUPPORTED = 9, /* the feature is not available in this build or on this machine */
    ST_EDB = 10,         /* the SQLite store reported an error */
    ST_EBACKEND = 11,    /* a run backend (process, Slurm) reported an error */
    ST_ETIMEOUT = 12,    /* an operation ran out of time */
    ST_EBUSY = 13,       /* a resource is owned by someone else (sweep lease) */
    ST_ENOSPC = 14,      /* no space left on the device */
    ST_EINTERNAL = 15,   /* an internal invariant failed: a bug, please report it */
    ST_EEMPTY = 16,      /* not enough data for the request (no observations, no runs) */
    ST_ENETWORK = 17,    /* a network request failed (slurmrestd) */
} st_status;

/* Static English description of a status; never NULL ("unknown status" for foreign values). */
const char *st_strerror(st_status s);

/*
 * Process-wide set-up of our dependencies: turns GSL's abort-on-error handler off (library code
 * checks every GSL return value instead) and runs curl_global_init(CURL_GLOBAL_ALL) when the
 * library was built with libcurl. Call once from main() before any thread starts. Idempotent
 * within a process is NOT guaranteed; pair with st_global_cleanup().
 * Returns ST_OK, or ST_EINTERNAL if curl could not be initialised.
 */
st_status st_global_init(void);
void st_global_cleanup(void);

/* Library version, "MAJOR.MINOR.PATCH". */
const char *st_version(void);
#define ST_VERSION_MAJOR 0
#define ST_VERSION_MINOR 1
#define ST_VERSION_PATCH 0

/* Frees memory that the library handed over (functions named *_dup or *_export). NULL is fine. */
void st_free(void *p);

/* ---- per-handle RNG (GSL's mt19937 underneath) ------------------------------------------ */

typedef struct st_rng st_rng;

/* Creates an RNG seeded with `seed`. Returns ST_OK or ST_ENOMEM. */
st_status st_rng_create(uint64_t seed, st_rng **out);
void st_rng_destroy(st_rng *r);
/* Restarts the generator from `seed`, as st_rng_create would. */
void st_rng_reseed(st_rng *r, uint64_t seed);
/* SplitMix64 finaliser: a well-mixed 64-bit hash, for deriving seeds from counters. */
uint64_t st_mix64(uint64_t x);
/* Uniform in [0, 1). */
double st_rng_uniform(st_rng *r);
/* Uniform in (0, 1): never exactly 0, safe for log(). */
double st_rng_uniform_pos(st_rng *r);
/* Standard normal N(0, 1). */
double st_rng_gaussian(st_rng *r);
/* Uniform integer in [0, n); n > 0. */
size_t st_rng_uniform_int(st_rng *r, size_t n);
/* Raw 32-bit draw (for seeding child generators). */
uint32_t st_rng_u32(st_rng *r);
/* Serialised state: size in bytes, copy out, restore (ST_EFORMAT on a size mismatch). */
size_t st_rng_state_size(const st_rng *r);
void st_rng_state_get(const st_rng *r, void *buf);
st_status st_rng_state_set(st_rng *r, const void *buf, size_t size);

/* ---- error message buffer used inside handles -------------------------------------------- */

#define ST_ERRMSG_MAX 512
/* Formats a message into buf (ST_ERRMSG_MAX bytes) and returns `s` (for `return st_fail(...)`). */
st_status st_errf(char *buf, st_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* ST_H */
