/* The on-disk spool keeps entries in order across reopen (a restart) and honours its byte bound
 * by dropping the oldest, counting them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "spool.h"

static void test_order_survives_reopen(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("spool");
    char err[256];
    struct spool *sp = spool_open(dir, 1 << 20, err, sizeof(err));
    assert_non_null(sp);
    for (int i = 0; i < 5; i++) {
        char body[32];
        int n = snprintf(body, sizeof(body), "{\"seq\":%d}", i);
        assert_int_equal(spool_push(sp, body, (size_t)n, err, sizeof(err)), 0);
    }
    char *b;
    size_t len;
    assert_int_equal(spool_peek(sp, &b, &len), 1);
    assert_string_equal(b, "{\"seq\":0}");
    free(b);
    assert_int_equal(spool_pop(sp), 0);
    spool_close(sp); /* a restart */
    sp = spool_open(dir, 1 << 20, err, sizeof(err));
    assert_int_equal(spool_count(sp), 4);
    assert_int_equal(spool_bytes(sp), 4 * 9);
    char body[32];
    int n = snprintf(body, sizeof(body), "{\"seq\":%d}", 5);
    assert_int_equal(spool_push(sp, body, (size_t)n, err, sizeof(err)), 0);
    for (int i = 1; i <= 5; i++) {
        assert_int_equal(spool_peek(sp, &b, &len), 1);
        char want[32];
        snprintf(want, sizeof(want), "{\"seq\":%d}", i);
        assert_string_equal(b, want);
        assert_int_equal(len, strlen(want));
        free(b);
        assert_int_equal(spool_pop(sp), 0);
    }
    assert_int_equal(spool_peek(sp, &b, &len), 0);
    spool_close(sp);
}

static void test_bound_drops_oldest(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("spool");
    char err[256];
    /* 10-byte entries, bound 35 bytes: at most 3 fit */
    struct spool *sp = spool_open(dir, 35, err, sizeof(err));
    assert_non_null(sp);
    for (int i = 0; i < 5; i++) {
        char body[16];
        snprintf(body, sizeof(body), "entry-%04d", i);
        assert_int_equal(spool_push(sp, body, 10, err, sizeof(err)), 0);
    }
    assert_int_equal(spool_count(sp), 3);
    assert_int_equal(spool_dropped(sp), 2);
    char *b;
    size_t len;
    assert_int_equal(spool_peek(sp, &b, &len), 1);
    assert_string_equal(b, "entry-0002");
    free(b);
    /* an entry larger than the bound is refused with a reason, and nothing is dropped for it */
    char big[64] = {0};
    memset(big, 'x', 40);
    assert_int_equal(spool_push(sp, big, 40, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "exceeds the bound"));
    assert_int_equal(spool_count(sp), 3);
    spool_close(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_survives_reopen),
        cmocka_unit_test(test_bound_drops_oldest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
