/* common/hugealloc.c: a block given back is handed out again to the next request it fits (not to
 * one under half its size), what it held is kept by huge_realloc, and the cache stays within its
 * four blocks; small requests and malloc'd pointers go through malloc/free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hugealloc.h"

#define MB ((size_t)1 << 20)

static void test_reuse_and_fit(void **state)
{
    (void)state;
    size_t base = huge_cached_bytes();
    char *a = huge_alloc(40 * MB);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % (2 * MB), 0); /* huge-page aligned */
    memset(a, 0x5a, 40 * MB);
    huge_free(a);
    assert_int_equal(huge_cached_bytes(), base + 40 * MB);
    char *b = huge_alloc(30 * MB); /* fits, and is over half the block: the same block */
    assert_ptr_equal(a, b);
    assert_int_equal((unsigned char)b[30 * MB - 1], 0x5a); /* uninitialised: as left */
    assert_int_equal(huge_cached_bytes(), base);
    huge_free(b);
    char *c = huge_alloc(10 * MB); /* under half: a block of its own */
    assert_ptr_not_equal(c, a);
    char *d = huge_alloc(41 * MB); /* larger than the kept one: a new block */
    assert_ptr_not_equal(d, a);
    huge_free(c);
    huge_free(d);
    assert_int_equal(huge_cached_bytes(), base + 40 * MB + 10 * MB + 42 * MB);
}

static void test_bounded(void **state)
{
    (void)state;
    char *p[6];
    for (int i = 0; i < 6; i++)
        assert_non_null(p[i] = huge_alloc((size_t)(10 + i) * MB));
    for (int i = 0; i < 6; i++)
        huge_free(p[i]);
    /* four blocks at most, the last four given back: 12, 13, 14, 15 MiB rounded up to 2 MiB */
    assert_int_equal(huge_cached_bytes(), (12 + 14 + 14 + 16) * MB);
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
}

static void test_small_and_foreign(void **state)
{
    (void)state;
    size_t base = huge_cached_bytes();
    void *s = huge_alloc(100);
    assert_non_null(s);
    huge_free(s); /* malloc'd: freed, not kept */
    void *m = malloc(32 * MB);
    huge_free(m); /* not one of its blocks: freed */
    huge_free(NULL);
    assert_int_equal(huge_cached_bytes(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_fit),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_realloc_keeps_content),
        cmocka_unit_test(test_small_and_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
