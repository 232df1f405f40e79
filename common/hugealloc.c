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
 * ~800 MB: 1.55 s of clear_page_erms in perf). recon_run's arrays (connections, their index,
 * the per-flow pre-pass, the owner rows: ~740 MB at 5 M flows, hindex.h) come from here too: with
 * them in fresh memory every window, recon_run of the fleet benchmark's 5 M window took 3.7 s a
 * round, with every block reused 1.4-1.5 s (bench_recon_run, rounds after the first); a 5 M
 * window takes 12 blocks of 8 MiB or more, load and recon_run together. Bounded:
 * HUGE_CACHE_SLOTS blocks, HUGE_CACHE_MAX bytes, a block not reused for HUGE_CACHE_IDLE_S seconds
 * is freed at the next call, and a block is not handed out for a request under half its size. A
 * fresh block is reserved an eighth larger than asked (address space only: pages are mapped as
 * they are touched), so the next window's array fits when it has up to 12 % more flows.
 *
 * The sanitizer build (the tests') fills every block handed out with 0xa5: a reader of memory it
 * did not write sees garbage in every test, not zeros from a fresh mapping. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hugealloc.h"

#define HUGE_PAGE         ((size_t)2 << 20)
#define HUGE_LIVE_SLOTS   256
#define HUGE_CACHE_SLOTS  32
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
static size_t cached_bytes, n_live;
static uint64_t n_given;
static atomic_size_t above = HUGEALLOC_ABOVE;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL): a hint only */
#endif

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
            n_live++;
            return true;
        }
    return false;
}

/* With mu held: the live slot holding p, or -1 (malloc'd, or not noted). */
static int live_slot(const void *p)
{
    for (int i = 0; i < HUGE_LIVE_SLOTS; i++)
        if (live[i].p == p)
            return i;
    return -1;
}

/* Pages of [p, p + size) mapped now (whole pages only). */
static void populate(void *p, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    if (size < ((size_t)1 << 20) || page <= 0)
        return;
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t hi = ((uintptr_t)p + size) & ~((uintptr_t)page - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

/* size bytes; *fresh: not taken from the cache (its pages not touched yet). */
static void *alloc_block(size_t size, bool *fresh)
{
    *fresh = true;
    if (size < above)
        return malloc(size ? size : 1);
    size_t want = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    pthread_mutex_lock(&mu);
    drop_idle(now_s());
    int best = -1;
    for (int i = 0; i < HUGE_CACHE_SLOTS; i++)
        if (cache[i].p && cache[i].len >= want && cache[i].len / 2 <= want &&
            (best < 0 || cache[i].len < cache[best].len))
            best = i;
    if (best >= 0 && note_live(cache[best].p, cache[best].len)) {
        void *p = cache[best].p;
        cached_bytes -= cache[best].len;
        cache[best] = (struct block){0};
        pthread_mutex_unlock(&mu);
        *fresh = false;
        return p;
    }
    pthread_mutex_unlock(&mu);
    size_t len = (size + size / 8 + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, len) != 0)
        return NULL;
    (void)madvise(p, len, MADV_HUGEPAGE); /* advice: EINVAL without THP changes nothing */
    pthread_mutex_lock(&mu);
    (void)note_live(p, len); /* not noted (all live slots taken): huge_free frees it */
    pthread_mutex_unlock(&mu);
    return p;
}

#if defined(__SANITIZE_ADDRESS__)
#define HUGE_POISON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUGE_POISON 1
#endif
#endif

static void *poisoned(void *p, size_t size)
{
#ifdef HUGE_POISON
    if (p)
        memset(p, 0xa5, size);
#else
    (void)size;
#endif
    return p;
}

void *huge_alloc(size_t size)
{
    bool fresh;
    return poisoned(alloc_block(size, &fresh), size);
}

void *huge_alloc_filled(size_t size)
{
    bool fresh;
    void *p = alloc_block(size, &fresh);
    if (p && fresh)
        populate(p, size);
    return poisoned(p, size);
}

void huge_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&mu);
    int64_t now = now_s();
    drop_idle(now);
    int k = live_slot(p);
    if (k < 0) { /* malloc'd (small) or not noted */
        pthread_mutex_unlock(&mu);
        free(p);
        return;
    }
    struct block b = live[k];
    live[k] = (struct block){0};
    n_live--;
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
    if (size < atomic_load(&above)) {
        pthread_mutex_lock(&mu);
        bool small = !p || live_slot(p) < 0;
        pthread_mutex_unlock(&mu);
        if (small)
            return realloc(p, size ? size : 1);
    }
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

size_t huge_live_blocks(void)
{
    pthread_mutex_lock(&mu);
    size_t n = n_live;
    pthread_mutex_unlock(&mu);
    return n;
}

size_t huge_set_above(size_t bytes)
{
    return atomic_exchange(&above, bytes ? bytes : HUGEALLOC_ABOVE);
}
