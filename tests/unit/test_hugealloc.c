/* common/hugealloc.c: a block given back is handed out again to the next request it fits (not to
 * one under half its size; a fresh block has an eighth more room than asked), what it held is
 * kept by huge_realloc, the cache stays within its 32 blocks, every block handed out holds
 * 0xa5 in this (sanitizer) build, small requests and malloc'd pointers go through malloc, realloc
 * and free, and huge_live_blocks counts the blocks not given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hugealloc.h"

#define MB ((size_t)1 << 20)

/* What a fresh block of size bytes reserves: size + size/8, in whole 2 MiB pages. */
static size_t reserved(size_t size)
{
    size_t two = 2 * MB, want = size + size / 8;
    return (want + two - 1) / two * two;
}

static void assert_poisoned(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4093)
        if (p[i] != 0xa5)
            fail_msg("byte %zu is 0x%02x, not 0xa5", i, p[i]);
    assert_int_equal(p[n - 1], 0xa5);
}

static void test_reuse_and_fit(void **state)
{
    (void)state;
    size_t base = huge_cached_bytes(), live = huge_live_blocks();
    char *a = huge_alloc(40 * MB);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % (2 * MB), 0); /* huge-page aligned */
    assert_int_equal(huge_live_blocks(), live + 1);
    assert_poisoned((unsigned char *)a, 40 * MB);
    memset(a, 0x5a, 40 * MB);
    huge_free(a);
    assert_int_equal(huge_live_blocks(), live);
    assert_int_equal(reserved(40 * MB), 46 * MB);
    assert_int_equal(huge_cached_bytes(), base + 46 * MB);
    char *b = huge_alloc(30 * MB); /* fits, and is over half the block: the same block */
    assert_ptr_equal(a, b);
    assert_poisoned((unsigned char *)b, 30 * MB); /* what a left is not shown to b */
    assert_int_equal(huge_cached_bytes(), base);
    huge_free(b);
    char *c = huge_alloc(10 * MB); /* under half: a block of its own */
    assert_ptr_not_equal(c, a);
    char *d = huge_alloc(41 * MB); /* more than a asked for, within its eighth: the same block */
    assert_ptr_equal(d, a);
    char *e = huge_alloc(47 * MB); /* more than a holds: a new block */
    assert_ptr_not_equal(e, a);
    huge_free(c);
    huge_free(d);
    huge_free(e);
    assert_int_equal(huge_cached_bytes(), base + 12 * MB + 46 * MB + 54 * MB);
    assert_int_equal(huge_live_blocks(), live);
}

static void test_bounded(void **state)
{
    (void)state;
    char *p[34];
    for (int i = 0; i < 34; i++)
        assert_non_null(p[i] = huge_alloc((size_t)(55 + i) * MB)); /* none fits an older block */
    for (int i = 0; i < 34; i++)
        huge_free(p[i]);
    /* 32 blocks at most: the last 32 given back */
    size_t want = 0;
    for (int i = 2; i < 34; i++)
        want += reserved((size_t)(55 + i) * MB);
    assert_int_equal(huge_cached_bytes(), want);
}

static void test_realloc_keeps_content(void **state)
{
    (void)state;
    uint32_t *v = huge_alloc(16 * MB);
    for (size_t i = 0; i < 16 * MB / 4; i++)
        v[i] = (uint32_t)i * 2654435761u;
    uint32_t *w = huge_realloc(v, 16 * MB, 64 * MB);
    assert_non_null(w);
    for (size_t i = 0; i < 16 * MB / 4; i++)
        if (w[i] != (uint32_t)i * 2654435761u)
            fail_msg("word %zu changed", i);
    huge_free(w);
    /* a small array grows by realloc until it is large, then moves into a block */
    size_t live = huge_live_blocks();
    char *s = huge_realloc(NULL, 0, 1000);
    memset(s, 7, 1000);
    s = huge_realloc(s, 1000, 4 * MB);
    assert_int_equal(huge_live_blocks(), live);
    s = huge_realloc(s, 4 * MB, 32 * MB);
    assert_int_equal(huge_live_blocks(), live + 1);
    assert_int_equal((uintptr_t)s % (2 * MB), 0);
    for (size_t i = 0; i < 1000; i++)
        if (s[i] != 7)
            fail_msg("byte %zu changed", i);
    huge_free(s);
    assert_int_equal(huge_live_blocks(), live);
}

static void test_small_and_foreign(void **state)
{
    (void)state;
    size_t base = huge_cached_bytes(), live = huge_live_blocks();
    void *s = huge_alloc(100);
    assert_non_null(s);
    assert_int_equal(huge_live_blocks(), live);
    huge_free(s); /* malloc'd: freed, not kept */
    void *m = malloc(32 * MB);
    huge_free(m); /* not one of its blocks: freed */
    huge_free(NULL);
    assert_int_equal(huge_cached_bytes(), base);
}

static void test_above_and_filled(void **state)
{
    (void)state;
    size_t live = huge_live_blocks();
    size_t old = huge_set_above(1); /* as the scenario driver: every array a block */
    assert_int_equal(old, HUGEALLOC_ABOVE);
    unsigned char *s = huge_alloc_filled(100);
    assert_non_null(s);
    assert_int_equal((uintptr_t)s % (2 * MB), 0);
    assert_int_equal(huge_live_blocks(), live + 1);
    assert_poisoned(s, 100);
    huge_free(s);
    assert_int_equal(huge_set_above(0), 1);
    unsigned char *f = huge_alloc_filled(24 * MB); /* fresh, mapped at once: still 0xa5 */
    assert_poisoned(f, 24 * MB);
    huge_free(f);
    assert_int_equal(huge_live_blocks(), live);
    assert_int_equal(huge_set_above(0), HUGEALLOC_ABOVE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_fit),         cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_realloc_keeps_content), cmocka_unit_test(test_small_and_foreign),
        cmocka_unit_test(test_above_and_filled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
