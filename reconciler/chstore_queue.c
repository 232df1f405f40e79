/* The in-process hand-off of outbox blocks to the flusher (see chstore_queue.h). */
#include "chstore_queue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static struct chq_block *head, *tail;
static size_t n_blocks, n_rows, n_bytes;
static bool enabled, kicked;
static atomic_ullong overflow, shipped;

static void cv_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
}

void chq_hold(struct chq_held *h, int64_t id, size_t rows, struct chblock *blk)
{
    struct chq_block *b = calloc(1, sizeof *b);
    if (!b) {
        chblock_free(blk);
        return;
    }
    b->id = id;
    b->rows = rows;
    b->blk = *blk;
    memset(blk, 0, sizeof *blk);
    if (h->b)
        h->last->next = b;
    else
        h->b = b;
    h->last = b;
}

static void free_one(struct chq_block *b)
{
    chblock_free(&b->blk);
    free(b);
}

void chq_free_list(struct chq_block *list)
{
    while (list) {
        struct chq_block *next = list->next;
        free_one(list);
        list = next;
    }
}

void chq_release(struct chq_held *h, bool committed)
{
    struct chq_block *list = h->b;
    h->b = h->last = NULL;
    if (!list)
        return;
    if (!committed) {
        chq_free_list(list);
        return;
    }
    pthread_once(&cv_once, cv_init);
    struct chq_block *left = NULL; /* not queued: the flusher reads them from ch_outbox */
    pthread_mutex_lock(&mu);
    while (list) {
        struct chq_block *b = list;
        list = b->next;
        b->next = NULL;
        bool room = n_blocks < CHQ_MAX_BLOCKS && n_bytes + b->blk.len <= CHQ_MAX_BYTES;
        if (enabled && room) {
            b->at_ns = tm_mono_ns();
            if (tail)
                tail->next = b;
            else
                head = b;
            tail = b;
            n_blocks++;
            n_rows += b->rows;
            n_bytes += b->blk.len;
        } else {
            if (enabled)
                atomic_fetch_add(&overflow, 1);
            b->next = left;
            left = b;
        }
    }
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    chq_free_list(left);
}

void chq_enable(bool on)
{
    pthread_once(&cv_once, cv_init);
    pthread_mutex_lock(&mu);
    enabled = on;
    kicked = false;
    struct chq_block *l = on ? NULL : head;
    if (!on) {
        head = tail = NULL;
        n_blocks = n_rows = n_bytes = 0;
    }
    pthread_mutex_unlock(&mu);
    chq_free_list(l);
}

struct chq_block *chq_take(size_t max_rows)
{
    pthread_mutex_lock(&mu);
    struct chq_block *first = head, *last = NULL;
    size_t rows = 0;
    for (struct chq_block *b = head; b && (!last || rows + b->rows <= max_rows); b = b->next) {
        rows += b->rows;
        n_blocks--;
        n_rows -= b->rows;
        n_bytes -= b->blk.len;
        last = b;
    }
    if (last) {
        head = last->next;
        if (!head)
            tail = NULL;
        last->next = NULL;
    }
    pthread_mutex_unlock(&mu);
    return last ? first : NULL;
}

void chq_putback(struct chq_block *list)
{
    if (!list)
        return;
    struct chq_block *last = list;
    size_t blocks = 0, rows = 0, bytes = 0;
    for (struct chq_block *b = list; b; b = b->next) {
        blocks++;
        rows += b->rows;
        bytes += b->blk.len;
        last = b;
    }
    pthread_mutex_lock(&mu);
    if (!enabled) {
        pthread_mutex_unlock(&mu);
        chq_free_list(list);
        return;
    }
    last->next = head;
    head = list;
    if (!tail)
        tail = last;
    n_blocks += blocks;
    n_rows += rows;
    n_bytes += bytes;
    pthread_mutex_unlock(&mu);
}

void chq_state(struct chq_state *s)
{
    pthread_mutex_lock(&mu);
    s->blocks = n_blocks;
    s->rows = n_rows;
    s->bytes = n_bytes;
    s->first_ns = head ? head->at_ns : 0;
    s->last_ns = tail ? tail->at_ns : 0;
    pthread_mutex_unlock(&mu);
}

char *chq_ids(void)
{
    pthread_mutex_lock(&mu);
    size_t cap = n_blocks * 21 + 3, n = 0;
    char *s = malloc(cap);
    if (s) {
        s[n++] = '{';
        for (struct chq_block *b = head; b; b = b->next)
            n += (size_t)snprintf(s + n, cap - n, "%s%lld", n > 1 ? "," : "", (long long)b->id);
        s[n++] = '}';
        s[n] = 0;
    }
    pthread_mutex_unlock(&mu);
    return s;
}

void chq_wait(int64_t until_ns, size_t wake_rows)
{
    pthread_once(&cv_once, cv_init);
    struct timespec ts = {(time_t)(until_ns / 1000000000), (long)(until_ns % 1000000000)};
    pthread_mutex_lock(&mu);
    while (!kicked && n_rows < wake_rows && tm_mono_ns() < until_ns &&
           pthread_cond_timedwait(&cv, &mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&mu);
}

void chq_kick(void)
{
    pthread_once(&cv_once, cv_init);
    pthread_mutex_lock(&mu);
    kicked = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void chq_note_shipped(size_t blocks)
{
    atomic_fetch_add(&shipped, blocks);
}

void chq_metrics(struct evbuffer *out)
{
    struct chq_state s;
    chq_state(&s);
    evbuffer_add_printf(
        out,
        "# HELP wanledger_clickhouse_queue_blocks Committed outbox blocks held in memory for the "
        "flusher (each is also in ch_outbox until ClickHouse confirms it).\n"
        "# TYPE wanledger_clickhouse_queue_blocks gauge\n"
        "wanledger_clickhouse_queue_blocks %zu\n"
        "# HELP wanledger_clickhouse_queue_rows Flow records in those blocks.\n"
        "# TYPE wanledger_clickhouse_queue_rows gauge\n"
        "wanledger_clickhouse_queue_rows %zu\n"
        "# HELP wanledger_clickhouse_queue_bytes Bytes of those blocks (compressed).\n"
        "# TYPE wanledger_clickhouse_queue_bytes gauge\n"
        "wanledger_clickhouse_queue_bytes %zu\n"
        "# HELP wanledger_clickhouse_queue_overflow_total Blocks not held in memory because the "
        "queue was full (the flusher reads them back from ch_outbox).\n"
        "# TYPE wanledger_clickhouse_queue_overflow_total counter\n"
        "wanledger_clickhouse_queue_overflow_total %llu\n"
        "# HELP wanledger_clickhouse_queue_shipped_total Blocks shipped from memory (not read "
        "back from ch_outbox).\n"
        "# TYPE wanledger_clickhouse_queue_shipped_total counter\n"
        "wanledger_clickhouse_queue_shipped_total %llu\n",
        s.blocks, s.rows, s.bytes, (unsigned long long)atomic_load(&overflow),
        (unsigned long long)atomic_load(&shipped));
}
