/* common/copyesc.c: PostgreSQL COPY text-format escaping, byte by byte, and copyesc_u64 against
 * printf at every power of ten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "copyesc.h"

static void test_escapes(void **state)
{
    (void)state;
    const char in[] = "a\tb\nc\rd\\e\\N f\xC3\xA9";
    char out[COPYESC_MAX(sizeof(in))];
    size_t n = copyesc_text(out, in, sizeof(in) - 1);
    const char want[] = "a\\tb\\nc\\rd\\\\e\\\\N f\xC3\xA9";
    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(out, want, n);
    /* the worst case fills COPYESC_MAX exactly */
    char worst[COPYESC_MAX(4)];
    assert_int_equal(copyesc_text(worst, "\\\t\n\r", 4), 8);
    assert_memory_equal(worst, "\\\\\\t\\n\\r", 8);
    assert_int_equal(copyesc_text(worst, "", 0), 0);
}

static void check_u64(uint64_t v)
{
    char want[32], out[COPYESC_U64_MAX + 1];
    int wn = snprintf(want, sizeof want, "%" PRIu64, v);
    memset(out, '#', sizeof out);
    size_t n = copyesc_u64(out, v);
    assert_int_equal(n, (size_t)wn);
    assert_memory_equal(out, want, n);
    assert_int_equal(out[n], '#'); /* nothing written past the digits */
}

static void test_u64(void **state)
{
    (void)state;
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10) { /* 10^0 .. 10^19 and their neighbours */
        check_u64(p - 1);
        check_u64(p);
        check_u64(p + 1);
        check_u64(p * 5 + 7);
    }
    check_u64(0);
    check_u64(UINT64_MAX);
    check_u64(UINT64_MAX - 1);
    check_u64((uint64_t)INT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_escapes), cmocka_unit_test(test_u64)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
