/* Spooled delivery of flow-sample batches (see flow_send.h). */
#include "flow_send.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "httpc.h"
#include "log.h"
#include "spool.h"
#include "timeutil.h"

#define POST_TIMEOUT_MS 10000

struct flow_send {
    struct spool *sp;
    char *url, *token;
    pthread_t thr;
    bool started, stop;
    int64_t drain_until_ns; /* when stopping: keep posting until then */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct flow_send_stats st;
};

static bool keep_on_status(int status)
{
    return status >= 500 || status == 401 || status == 403 || status == 408 || status == 429;
}

/* Posts the oldest batch: 1 delivered or dropped (next one may go), 0 kept (retry later), -1
 * spool empty. Called with mu held; unlocks around the POST. */
static int post_one(struct flow_send *fs)
{
    char *body;
    size_t len;
    int r = spool_peek(fs->sp, &body, &len);
    if (r <= 0)
        return -1;
    pthread_mutex_unlock(&fs->mu);
    struct httpc_response resp = {0};
    char err[256];
    int rc = httpc_post(fs->url, fs->token, body, len, POST_TIMEOUT_MS, &resp, err, sizeof(err));
    free(body);
    pthread_mutex_lock(&fs->mu);
    if (rc < 0) {
        log_debug(NULL, "flows: post to %s: %s", fs->url, err);
        return 0;
    }
    int status = resp.status;
    if (status >= 200 && status < 300) {
        fs->st.posted++;
    } else if (keep_on_status(status)) {
        log_warn(NULL, "flows: %s answered %d; keeping the batch", fs->url, status);
        httpc_response_free(&resp);
        return 0;
    } else {
        fs->st.refused++;
        log_error(NULL, "flows: %s refused a batch (%d): %s; dropped", fs->url, status,
                  resp.body ? resp.body : "");
    }
    httpc_response_free(&resp);
    (void)spool_pop(fs->sp);
    return 1;
}

static void *run(void *arg)
{
    struct flow_send *fs = arg;
    int backoff_ms = 500;
    pthread_mutex_lock(&fs->mu);
    for (;;) {
        if (fs->stop && tm_mono_ns() >= fs->drain_until_ns)
            break;
        int r = post_one(fs);
        if (r == 1) {
            backoff_ms = 500;
            continue;
        }
        if (r < 0 && fs->stop)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int wait_ms = r < 0 ? 1000 : backoff_ms;
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&fs->cv, &fs->mu, &ts);
        if (r == 0 && backoff_ms < 30000)
            backoff_ms *= 2;
    }
    pthread_mutex_unlock(&fs->mu);
    return NULL;
}

struct flow_send *flow_send_new(const char *spool_dir, uint64_t max_bytes, const char *url,
                                const char *token, char *err, size_t errlen)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/flows", spool_dir);
    if (mkdir(spool_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "spool %s: %s", spool_dir, strerror(errno));
        return NULL;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "spool %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct flow_send *fs = calloc(1, sizeof(*fs));
    if (!fs) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    fs->sp = spool_open(dir, max_bytes, err, errlen);
    fs->url = strdup(url);
    fs->token = token ? strdup(token) : NULL;
    pthread_mutex_init(&fs->mu, NULL);
    pthread_cond_init(&fs->cv, NULL);
    if (!fs->sp || !fs->url || (token && !fs->token) ||
        pthread_create(&fs->thr, NULL, run, fs) != 0) {
        if (fs->sp && fs->url)
            snprintf(err, errlen, "cannot start the flow sender");
        spool_close(fs->sp);
        free(fs->url);
        free(fs->token);
        free(fs);
        return NULL;
    }
    fs->started = true;
    return fs;
}

int flow_send_push(struct flow_send *fs, const char *body, size_t len, char *err, size_t errlen)
{
    pthread_mutex_lock(&fs->mu);
    int rc = spool_push(fs->sp, body, len, err, errlen);
    pthread_cond_signal(&fs->cv);
    pthread_mutex_unlock(&fs->mu);
    return rc;
}

void flow_send_stats(struct flow_send *fs, struct flow_send_stats *out)
{
    pthread_mutex_lock(&fs->mu);
    *out = fs->st;
    out->spooled = spool_count(fs->sp);
    out->spool_dropped = spool_dropped(fs->sp);
    pthread_mutex_unlock(&fs->mu);
}

size_t flow_send_close(struct flow_send *fs, int drain_ms)
{
    if (!fs)
        return 0;
    pthread_mutex_lock(&fs->mu);
    fs->stop = true;
    fs->drain_until_ns = tm_mono_ns() + (int64_t)(drain_ms > 0 ? drain_ms : 0) * 1000000LL;
    pthread_cond_signal(&fs->cv);
    pthread_mutex_unlock(&fs->mu);
    if (fs->started)
        pthread_join(fs->thr, NULL);
    size_t left = spool_count(fs->sp);
    spool_close(fs->sp);
    pthread_cond_destroy(&fs->cv);
    pthread_mutex_destroy(&fs->mu);
    free(fs->url);
    free(fs->token);
    free(fs);
    return left;
}
