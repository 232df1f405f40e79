/* huge_alloc (hugealloc.h). A window's flow array is 136 bytes x 5 M flows. Measured on a VM of
 * this project's kind (/tmp/touch: 900 MiB written once per 4 KiB page, 3 rounds): memory the
 * process had not touched before 1.77 s (7.7 us a page), the same memory again at once 0.31 s;
 * advised MADV_HUGEPAGE 1.42 s and 0.11 s. Memory freed goes back to the host within seconds
 * (2,000 MiB re-touched after a 20 s pause: 4.1 s again), so a window's arrays mostly pay the
 * first figure; huge pages take a fifth off it, two thirds off the second. With transparent huge
 * pages "madvise" (Debian's default) only advised ranges get them; under "never" the advice
 * changes nothing.
 *
 * Hence the cache: a block given back with huge_free is kept, still mapped, for the next
 * huge_alloc it fits (the next window's arrays are about the size of this one's), so only the
 * first window a process loads pays the first touch (a 5 M window's flows and their order,
 * ~800 MB: 1.55 s of clear_page_erms in perf). Bounded: HUGE_CACHE_SLOTS blocks, HUGE_CACHE_MAX
 * bytes, a block not reused for HUGE_CACHE_IDLE_S seconds is freed at the next call, and a
 * block is not handed out for a request under half its size. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hugealloc.h"

#define HUGE_PAGE         ((size_t)2 << 20)
#define HUGE_LIVE_SLOTS   64
#define HUGE_CACHE_SLOTS  4
#define HUGE_CACHE_MAX    ((size_t)4 << 30)
#define HUGE_CACHE_IDLE_S 300

struct block {
    void *p;
    size_t len;
    int64_t at;   /* when it was given back (cache) */
    uint64_t seq; /* the order it was given back in (cache) */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct block live[HUGE_LIVE_SLOTS], cache[HUGE_CACHE_SLOTS];
static size_t cached_bytes;
static uint64_t n_given;

static int64_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* With mu held: the cached blocks idle too long freed. */
static void drop_idle(int64_t now)
{
    for (int i = 0; i < HUGE_CACHE_SLOTS; i++)
        if (cache[i].p && now - cache[i].at > HUGE_CACHE_IDLE_S) {
            free(cache[i].p);
            cached_bytes -= cache[i].len;
            cache[i] = (struct block){0};
        }
}

/* With mu held: p (len bytes) recorded as a live block; false when the table is full. */
static bool note_live(void *p, size_t len)
{
    for (int i = 0; i < HUGE_LIVE_SLOTS; i++)
        if (!live[i].p) {
            live[i] = (struct block){p, len, 0, 0};
            return true;
        }
    return false;
}

void *huge_alloc(size_t size)
{
    if (size < HUGEALLOC_ABOVE)
        return malloc(size ? size : 1);
    size_t len = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    pthread_mutex_lock(&mu);
    drop_idle(now_s());
    int best = -1;
    for (int i = 0; i < HUGE_CACHE_SLOTS; i++)
        if (cache[i].p && cache[i].len >= len && cache[i].len / 2 <= len &&
            (best < 0 || cache[i].len < cache[best].len))
            best = i;
    if (best >= 0 && note_live(cache[best].p, cache[best].len)) {
        void *p = cache[best].p;
        cached_bytes -= cache[best].len;
        cache[best] = (struct block){0};
        pthread_mutex_unlock(&mu);
        return p;
    }
    pthread_mutex_unlock(&mu);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, len) != 0)
        return NULL;
    (void)madvise(p, len, MADV_HUGEPAGE); /* advice: EINVAL without THP changes nothing */
    pthread_mutex_lock(&mu);
    (void)note_live(p, len); /* not noted (64 live at once): huge_free frees it */
    pthread_mutex_unlock(&mu);
    return p;
}

void huge_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&mu);
    int64_t now = now_s();
    drop_idle(now);
    int k = -1;
    for (int i = 0; i < HUGE_LIVE_SLOTS && k < 0; i++)
        if (live[i].p == p)
            k = i;
    if (k < 0) { /* malloc'd (small) or not noted */
        pthread_mutex_unlock(&mu);
        free(p);
        return;
    }
    struct block b = live[k];
    live[k] = (struct block){0};
    /* room: the oldest cached blocks go first */
    for (;;) {
        int free_slot = -1, oldest = -1;
        for (int i = 0; i < HUGE_CACHE_SLOTS; i++) {
            if (!cache[i].p && free_slot < 0)
                free_slot = i;
            if (cache[i].p && (oldest < 0 || cache[i].seq < cache[oldest].seq))
                oldest = i;
        }
        if (free_slot >= 0 && cached_bytes + b.len <= HUGE_CACHE_MAX) {
            cache[free_slot] = (struct block){b.p, b.len, now, ++n_given};
            cached_bytes += b.len;
            break;
        }
        if (oldest < 0) { /* larger than the whole cache */
            free(b.p);
            break;
        }
        free(cache[oldest].p);
        cached_bytes -= cache[oldest].len;
        cache[oldest] = (struct block){0};
    }
    pthread_mutex_unlock(&mu);
}

void *huge_realloc(void *p, size_t old_size, size_t size)
{
    void *n = huge_alloc(size);
    if (!n)
        return NULL;
    if (p)
        memcpy(n, p, old_size < size ? old_size : size);
    huge_free(p);
    return n;
}

size_t huge_cached_bytes(void)
{
    pthread_mutex_lock(&mu);
    size_t n = cached_bytes;
    pthread_mutex_unlock(&mu);
    return n;
}
