/* A background thread that works in rounds and sleeps between them until a deadline or until it
 * is stopped (the leader thread, the reconcile loop): the stop flag, its mutex and condition
 * variable, start and stop in one place. */
#ifndef WL_TICKER_H
#define WL_TICKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ticker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC: a wall-clock step neither shortens nor stretches */
    bool stop;
};

/* Runs fn(arg) on a new thread; 0, or pthread_create's error (nothing is left to stop). */
int ticker_start(struct ticker *t, void *(*fn)(void *), void *arg);
/* On the thread: true once ticker_stop was called. */
bool ticker_stopping(struct ticker *t);
/* On the thread: waits ms milliseconds, or less when stopped; false when stopping. */
bool ticker_wait_ms(struct ticker *t, int64_t ms);
/* Asks the thread to stop, wakes it, joins it. */
void ticker_stop(struct ticker *t);

#endif
