/* common/utf8.c: every edge of RFC 3629 (first and last code point of each length, overlongs,
 * surrogates, beyond U+10FFFF, stray and missing continuation bytes), and the repair rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

struct seq_case {
    const char *in;
    size_t len;  /* bytes of in */
    size_t want; /* utf8_seq_len */
    uint32_t cp; /* when want */
};

static void test_edges(void **state)
{
    (void)state;
    const struct seq_case cases[] = {
        {"\x00", 1, 1, 0x0},
        {"\x7F", 1, 1, 0x7F},
        {"\xC2\x80", 2, 2, 0x80},
        {"\xDF\xBF", 2, 2, 0x7FF},
        {"\xE0\xA0\x80", 3, 3, 0x800},
        {"\xED\x9F\xBF", 3, 3, 0xD7FF},
        {"\xEE\x80\x80", 3, 3, 0xE000},
        {"\xEF\xBF\xBF", 3, 3, 0xFFFF},
        {"\xF0\x90\x80\x80", 4, 4, 0x10000},
        {"\xF4\x8F\xBF\xBF", 4, 4, 0x10FFFF},
        /* overlongs: '/' in 2, 3 and 4 bytes, U+07FF in 3, U+FFFF in 4 */
        {"\xC0\xAF", 2, 0, 0},
        {"\xC1\xBF", 2, 0, 0},
        {"\xE0\x80\xAF", 3, 0, 0},
        {"\xE0\x9F\xBF", 3, 0, 0},
        {"\xF0\x80\x80\xAF", 4, 0, 0},
        {"\xF0\x8F\xBF\xBF", 4, 0, 0},
        /* surrogates */
        {"\xED\xA0\x80", 3, 0, 0},
        {"\xED\xBF\xBF", 3, 0, 0},
        /* beyond U+10FFFF, and lead bytes that never occur */
        {"\xF4\x90\x80\x80", 4, 0, 0},
        {"\xF5\x80\x80\x80", 4, 0, 0},
        {"\xFE", 1, 0, 0},
        {"\xFF", 1, 0, 0},
        /* a stray continuation byte, a missing one, a cut sequence */
        {"\x80", 1, 0, 0},
        {"\xBF", 1, 0, 0},
        {"\xC3\x28", 2, 0, 0},
        {"\xE2\x82\x28", 3, 0, 0},
        {"\xE2\x82", 2, 0, 0},
        {"\xF0\x9F\x98", 3, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t cp = 0xFFFFFFFF;
        size_t n = utf8_seq_len((const unsigned char *)cases[i].in, cases[i].len, &cp);
        assert_int_equal(n, cases[i].want);
        if (n)
            assert_int_equal(cp, cases[i].cp);
        size_t bad = 99;
        assert_int_equal(utf8_valid(cases[i].in, cases[i].len, &bad), n == cases[i].len);
        if (n != cases[i].len)
            assert_int_equal(bad, 0);
        if (n) { /* utf8_put writes the same bytes back */
            char out[4];
            assert_int_equal(utf8_put(out, cp), n);
            assert_memory_equal(out, cases[i].in, n);
        }
    }
    /* the length limit is honoured: a valid sequence cut by avail */
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xC3\xA9", 1, NULL), 0);
    assert_int_equal(utf8_seq_len((const unsigned char *)"", 0, NULL), 0);
    size_t bad = 0;
    assert_false(utf8_valid("caf\xC3\xA9 \xE2\x82", 8, &bad));
    assert_int_equal(bad, 6);
    assert_true(utf8_valid("", 0, NULL));
}

static void test_sanitize(void **state)
{
    (void)state;
    char out[64];
    /* one U+FFFD per byte that does not start a well-formed sequence */
    const char in[] = "a\xC3\xA9\x80\xE2\x82z\xED\xA0\x80";
    size_t n = utf8_sanitize(in, sizeof(in) - 1, out, sizeof(out));
    const char want[] = "a\xC3\xA9" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT
                        "z" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT;
    assert_int_equal(n, sizeof(want) - 1);
    assert_string_equal(out, want);
    assert_true(utf8_valid(out, n, NULL));
    /* a cut never splits a character: 4 bytes of room hold "a" and not half of "é" + NUL */
    n = utf8_sanitize("a\xC3\xA9\xC3\xA9", 5, out, 5);
    assert_int_equal(n, 3);
    assert_string_equal(out, "a\xC3\xA9");
    n = utf8_sanitize("\xFF", 1, out, 3); /* U+FFFD needs 3 + NUL */
    assert_int_equal(n, 0);
    assert_string_equal(out, "");
    assert_int_equal(UTF8_SANITIZE_LEN(3), 10);
}

/* utf8_prefix: "Zürich-日本" is Z ü(2 bytes) r i c h - 日(3) 本(3): 9 characters, 14 bytes. */
static void test_prefix(void **state)
{
    (void)state;
    const char *s = "Z\xC3\xBCrich-\xE6\x97\xA5\xE6\x9C\xAC";
    size_t n = 0;
    assert_int_equal(utf8_prefix(s, SIZE_MAX, SIZE_MAX, &n), 14);
    assert_int_equal(n, 9);
    assert_int_equal(utf8_prefix(s, 2, SIZE_MAX, &n), 3); /* "Zü" */
    assert_int_equal(n, 2);
    assert_int_equal(utf8_prefix(s, 8, SIZE_MAX, &n), 11); /* up to and with 日 */
    assert_int_equal(n, 8);
    /* a byte bound is checked before each character: one that starts below it is kept whole */
    assert_int_equal(utf8_prefix(s, SIZE_MAX, 8, &n), 8);
    assert_int_equal(n, 7);
    assert_int_equal(utf8_prefix(s, SIZE_MAX, 9, &n), 11);
    assert_int_equal(n, 8);
    assert_int_equal(utf8_prefix("", 5, 5, &n), 0);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
