/*
 * rng.c — the per-handle random number generator: GSL's mt19937, owned by one handle, never
 * shared and never global. Its state can be copied out and back so optimizers that are saved
 * and loaded continue with the same draws.
 */
#include "common/st.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

struct st_rng {
    gsl_rng *g;
};

st_status st_rng_create(uint64_t seed, st_rng **out)
{
    *out = NULL;
    st_rng *r = malloc(sizeof(*r));
    if (!r)
        return ST_ENOMEM;
    r->g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r->g) {
        free(r);
        return ST_ENOMEM;
    }
    /* mt19937 takes an unsigned long seed; fold the high half in so 64-bit seeds differ. */
    gsl_rng_set(r->g, (unsigned long)(seed ^ (seed >> 32)));
    *out = r;
    return ST_OK;
}

void st_rng_reseed(st_rng *r, uint64_t seed)
{
    gsl_rng_set(r->g, (unsigned long)(seed ^ (seed >> 32)));
}

/* Steele, Lea and Flood, "Fast splittable pseudorandom number generators" (2014). */
uint64_t st_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void st_rng_destroy(st_rng *r)
{
    if (!r)
        return;
    gsl_rng_free(r->g);
    free(r);
}

double st_rng_uniform(st_rng *r)
{
    return gsl_rng_uniform(r->g);
}

double st_rng_uniform_pos(st_rng *r)
{
    return gsl_rng_uniform_pos(r->g);
}

double st_rng_gaussian(st_rng *r)
{
    return gsl_ran_gaussian_ziggurat(r->g, 1.0);
}

size_t st_rng_uniform_int(st_rng *r, size_t n)
{
    return (size_t)gsl_rng_uniform_int(r->g, (unsigned long)n);
}

uint32_t st_rng_u32(st_rng *r)
{
    return (uint32_t)gsl_rng_get(r->g);
}

size_t st_rng_state_size(const st_rng *r)
{
    return gsl_rng_size(r->g);
}

void st_rng_state_get(const st_rng *r, void *buf)
{
    memcpy(buf, gsl_rng_state(r->g), gsl_rng_size(r->g));
}

st_status st_rng_state_set(st_rng *r, const void *buf, size_t size)
{
    if (size != gsl_rng_size(r->g))
        return ST_EFORMAT;
    memcpy(gsl_rng_state(r->g), buf, size);
    return ST_OK;
}
