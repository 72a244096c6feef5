/*
 * pool.c — the trainer's one thread pool: n-1 pthreads parked on a condition variable, woken
 * for each task, the caller acting as thread 0. A task is dispatched a handful of times per
 * training step (forward, backward, reductions), so a mutex/condvar hand-off is cheap enough.
 * Not a work-stealing scheduler: each task splits its work by thread id, which keeps results
 * bitwise reproducible for a given thread count. Depends on pthreads only.
 */
#include <pthread.h>
#include <stdlib.h>

#include "trainer/gpt_int.h"

struct gpt_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation;
    int pending, quit;
    gpt_task_fn fn;
    void *ctx;
};

struct worker_arg {
    gpt_pool *p;
    int tid;
};

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    gpt_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        gpt_task_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);

        fn(ctx, tid, p->n);

        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

st_status gpt_pool_create(int n_threads, gpt_pool **out)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return ST_EINVAL;
    gpt_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return ST_ENOMEM;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads)
            goto fail;
        for (int i = 1; i < n_threads; i++) {
            struct worker_arg *wa = malloc(sizeof(*wa));
            if (!wa)
                goto fail_started;
            wa->p = p;
            wa->tid = i;
            if (pthread_create(&p->threads[i - 1], NULL, worker, wa) != 0) {
                free(wa);
                goto fail_started;
            }
            continue;
        fail_started:
            p->n = i; /* the threads 1..i-1 are running: stop exactly those */
            gpt_pool_destroy(p);
            return ST_ENOMEM;
        }
    }
    *out = p;
    return ST_OK;
fail:
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
    return ST_ENOMEM;
}

void gpt_pool_destroy(gpt_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i - 1], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int gpt_pool_size(const gpt_pool *p)
{
    return p->n;
}

void gpt_pool_run(gpt_pool *p, gpt_task_fn fn, void *ctx)
{
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
