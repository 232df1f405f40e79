/* common/copyesc.c: PostgreSQL COPY text-format escaping, byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_escapes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
