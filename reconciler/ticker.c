/* Round-and-sleep background threads (see ticker.h). */
#include "ticker.h"

#include <errno.h>
#include <time.h>

int ticker_start(struct ticker *t, void *(*fn)(void *), void *arg)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    t->stop = false;
    int rc = pthread_create(&t->thread, NULL, fn, arg);
    if (rc != 0) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
    }
    return rc;
}

bool ticker_stopping(struct ticker *t)
{
    pthread_mutex_lock(&t->mu);
    bool s = t->stop;
    pthread_mutex_unlock(&t->mu);
    return s;
}

bool ticker_wait_ms(struct ticker *t, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&t->mu);
    while (!t->stop)
        if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == ETIMEDOUT)
            break;
    bool s = t->stop;
    pthread_mutex_unlock(&t->mu);
    return !s;
}

void ticker_stop(struct ticker *t)
{
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}
