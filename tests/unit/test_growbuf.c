/* common/growbuf.c: appends through gb_grow keep every byte and grow the capacity by doubling
 * (a few moves for many appends); gb_fresh gives exactly what is asked and keeps nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "growbuf.h"

static void test_grow_keeps_and_doubles(void **state)
{
    (void)state;
    char *p = NULL;
    size_t cap = 0, n = 0, growths = 0;
    /* 10,000 appends of 1..37 bytes: byte i of the buffer is (i * 7) & 0xff */
    for (int k = 0; k < 10000; k++) {
        size_t add = (size_t)(k % 37) + 1, before = cap;
        char *q = gb_grow(p, &cap, n + add, 100);
        assert_non_null(q);
        assert_true(cap >= n + add);
        if (cap != before) {
            growths++;
            /* from 100, then doubled: a power of two times 100 */
            size_t c = cap / 100;
            assert_int_equal(cap % 100, 0);
            assert_int_equal(c & (c - 1), 0);
        }
        p = q;
        for (size_t i = 0; i < add; i++, n++)
            p[n] = (char)((n * 7) & 0xff);
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal((unsigned char)p[i], (i * 7) & 0xff);
    /* 189,865 bytes (270 runs of 1..37, then 1..10) from 100 doubling: 100 .. 204,800 is 12
     * capacities */
    assert_int_equal(n, 189865);
    assert_int_equal(cap, 204800);
    assert_int_equal(growths, 12);
    /* large enough: the same buffer, nothing changed */
    assert_ptr_equal(gb_grow(p, &cap, 10, 100), p);
    assert_int_equal(cap, 204800);
    free(p);
}

static void test_grow_from_zero_first(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = gb_grow(NULL, &cap, 5, 0); /* no first: from 1, doubled to 8 */
    assert_non_null(p);
    assert_int_equal(cap, 8);
    memcpy(p, "abcde", 5);
    p = gb_grow(p, &cap, 9, 0);
    assert_non_null(p);
    assert_int_equal(cap, 16);
    assert_memory_equal(p, "abcde", 5);
    free(p);
}

static void test_fresh(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = gb_fresh(NULL, &cap, 1000);
    assert_non_null(p);
    assert_int_equal(cap, 1000); /* exactly what was asked */
    memset(p, 'x', 1000);
    assert_ptr_equal(gb_fresh(p, &cap, 999), p); /* fits: kept */
    assert_int_equal(cap, 1000);
    p = gb_fresh(p, &cap, 5000);
    assert_non_null(p);
    assert_int_equal(cap, 5000);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_keeps_and_doubles),
        cmocka_unit_test(test_grow_from_zero_first),
        cmocka_unit_test(test_fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
