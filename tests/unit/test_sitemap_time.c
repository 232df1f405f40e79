/* Site map longest-prefix matching and time/window arithmetic, with expectations by hand. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "sitemap.h"
#include "timeutil.h"

static void add(struct sitemap *sm, const char *prefix, int v)
{
    int fam, len;
    uint8_t a[16];
    assert_int_equal(sm_parse_prefix(prefix, &fam, a, &len), 0);
    assert_int_equal(sm_add(sm, fam, a, len, v), 0);
}

static void test_longest_prefix_v4(void **state)
{
    (void)state;
    struct sitemap *sm = sm_new();
    assert_int_equal(sm_lookup_str(sm, "10.1.2.3"), -1); /* empty map */
    add(sm, "10.0.0.0/8", 1);
    add(sm, "10.1.0.0/16", 2);
    add(sm, "10.1.2.0/24", 3);
    add(sm, "10.1.2.3/32", 4);
    assert_int_equal(sm_lookup_str(sm, "10.1.2.3"), 4);
    assert_int_equal(sm_lookup_str(sm, "10.1.2.4"), 3);
    assert_int_equal(sm_lookup_str(sm, "10.1.3.4"), 2);
    assert_int_equal(sm_lookup_str(sm, "10.2.0.1"), 1);
    assert_int_equal(sm_lookup_str(sm, "11.0.0.1"), -1);       /* unmapped */
    assert_int_equal(sm_lookup_str(sm, "not-an-ip"), -1);      /* unparsable */
    assert_int_equal(sm_lookup_str(sm, "::ffff:10.1.2.3"), 4); /* v4-mapped v6 */
    add(sm, "0.0.0.0/0", 9);
    assert_int_equal(sm_lookup_str(sm, "11.0.0.1"), 9); /* default route catches the rest */
    assert_int_equal(sm_lookup_str(sm, "255.255.255.255"), 9);
    assert_int_equal(sm_lookup_str(sm, "fd00::1"), -1); /* /0 v4 does not cover v6 */
    sm_free(sm);
}

static void test_longest_prefix_v6(void **state)
{
    (void)state;
    struct sitemap *sm = sm_new();
    add(sm, "fd00:1::/48", 1);
    add(sm, "fd00:1:0:5::/64", 2);
    add(sm, "fd00:1:0:5::9/128", 3);
    assert_int_equal(sm_lookup_str(sm, "fd00:1::1"), 1);
    assert_int_equal(sm_lookup_str(sm, "fd00:1:0:5::1"), 2);
    assert_int_equal(sm_lookup_str(sm, "fd00:1:0:5::9"), 3);
    assert_int_equal(sm_lookup_str(sm, "fd00:1:0:5::a"), 2);
    assert_int_equal(sm_lookup_str(sm, "fd00:2::1"), -1);
    assert_int_equal(sm_lookup_str(sm, "10.1.0.1"), -1);
    add(sm, "::/0", 7);
    assert_int_equal(sm_lookup_str(sm, "2001:db8::1"), 7);
    sm_free(sm);
}

static void test_prefix_parsing(void **state)
{
    (void)state;
    int fam, len;
    uint8_t a[16];
    assert_int_equal(sm_parse_prefix("10.1.0.0/16", &fam, a, &len), 0);
    assert_int_equal(fam, AF_INET);
    assert_int_equal(len, 16);
    assert_int_equal(sm_parse_prefix("10.1.2.3", &fam, a, &len), 0);
    assert_int_equal(len, 32);
    assert_int_equal(sm_parse_prefix("::1", &fam, a, &len), 0);
    assert_int_equal(len, 128);
    assert_int_equal(sm_parse_prefix("10.1.0.1/16", &fam, a, &len), -1); /* host bits */
    assert_int_equal(sm_parse_prefix("10.1.0.0/33", &fam, a, &len), -1);
    assert_int_equal(sm_parse_prefix("10.1.0.0/", &fam, a, &len), -1);
    assert_int_equal(sm_parse_prefix("10.1.0.0/1a", &fam, a, &len), -1);
    assert_int_equal(sm_parse_prefix("fd00::/129", &fam, a, &len), -1);
    assert_int_equal(sm_parse_prefix("", &fam, a, &len), -1);
    /* same prefix twice with another value is refused */
    struct sitemap *sm = sm_new();
    sm_parse_prefix("10.0.0.0/8", &fam, a, &len);
    assert_int_equal(sm_add(sm, fam, a, len, 1), 0);
    assert_int_equal(sm_add(sm, fam, a, len, 2), -1);
    assert_int_equal(sm_lookup_str(sm, "10.9.9.9"), 1);
    sm_free(sm);
}

static void test_rfc3339(void **state)
{
    (void)state;
    int64_t us;
    /* 2026-11-29T18:53:00Z = 20786 days * 86400 + 18*3600 + 53*60 = 1795978380 */
    assert_int_equal(tm_parse_rfc3339("2026-11-29T18:53:00Z", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000);
    assert_int_equal(tm_parse_rfc3339("2026-11-29t18:53:00.25z", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000 + 250000);
    assert_int_equal(tm_parse_rfc3339("2026-11-29T19:53:00+01:00", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000);
    assert_int_equal(tm_parse_rfc3339("2026-11-29T13:23:00.000001-05:30", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000 + 1);
    assert_int_equal(tm_parse_rfc3339("2026-11-29 18:53:00.123456789Z", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000 + 123456); /* ns truncated */
    assert_int_equal(tm_parse_rfc3339("1970-01-01T00:00:00Z", &us), 0);
    assert_int_equal(us, 0);
    assert_int_equal(tm_parse_rfc3339("1969-12-31T23:59:59Z", &us), 0);
    assert_int_equal(us, -1000000);
    assert_int_equal(tm_parse_rfc3339("2024-02-29T00:00:00Z", &us), 0); /* leap year */
    assert_int_equal(us, 1709164800LL * 1000000);
    int64_t before = 42;
    us = before;
    assert_int_equal(tm_parse_rfc3339("2026-02-29T00:00:00Z", &us), -1); /* not a leap year */
    assert_int_equal(tm_parse_rfc3339("2026-11-29T18:53:00", &us), -1);  /* no offset */
    assert_int_equal(tm_parse_rfc3339("2026-11-29T24:00:00Z", &us), -1);
    assert_int_equal(tm_parse_rfc3339("2026-13-01T00:00:00Z", &us), -1);
    assert_int_equal(tm_parse_rfc3339("2026-11-29T18:53:00Zjunk", &us), -1);
    assert_int_equal(tm_parse_rfc3339("2026-11-29T18:53:00.Z", &us), -1);
    assert_int_equal(us, before); /* unchanged on error */
    char buf[TM_RFC3339_LEN];
    assert_string_equal(tm_format_rfc3339(1795978380LL * 1000000, buf), "2026-11-29T18:53:00Z");
    assert_string_equal(tm_format_rfc3339(1795978380LL * 1000000 + 250000, buf),
                        "2026-11-29T18:53:00.250000Z");
    assert_string_equal(tm_format_rfc3339(-1, buf), "1969-12-31T23:59:59.999999Z");
    /* round trip over a spread of instants */
    for (int64_t t = -86400LL * 1000000 * 400; t < 86400LL * 1000000 * 365 * 80;
         t += 86400LL * 1000000 * 37 + 123457) {
        int64_t back;
        assert_int_equal(tm_parse_rfc3339(tm_format_rfc3339(t, buf), &back), 0);
        assert_int_equal(back, t);
    }
}

static void test_epoch_and_windows(void **state)
{
    (void)state;
    int64_t us;
    assert_int_equal(tm_parse_epoch("1795978380.25", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000 + 250000);
    assert_int_equal(tm_parse_epoch("1795978380", &us), 0);
    assert_int_equal(us, 1795978380LL * 1000000);
    assert_int_equal(tm_parse_epoch("1e9", &us), -1);
    assert_int_equal(tm_parse_epoch("nan", &us), -1);
    assert_int_equal(tm_parse_epoch("12x", &us), -1);
    assert_int_equal(tm_from_epoch_double(1.5, &us), 0);
    assert_int_equal(us, 1500000);
    /* windows: 18:53:59.999999 is in the 18:53 minute; 18:54:00 starts the next */
    int64_t t = 1795978380LL * 1000000;
    assert_int_equal(tm_window_start(t + 59999999, 60), t);
    assert_int_equal(tm_window_start(t + 60000000, 60), t + 60000000);
    assert_true(tm_is_aligned(t, 60));
    assert_false(tm_is_aligned(t + 1, 60));
    assert_true(tm_is_aligned(t, 10));
    assert_false(tm_is_aligned(t, 3600)); /* 18:53 is not an hour boundary */
    /* midnight UTC is aligned for every divisor of a day */
    int64_t midnight = 1795910400LL * 1000000; /* 2026-11-29T00:00:00Z */
    char buf[TM_RFC3339_LEN];
    assert_string_equal(tm_format_rfc3339(midnight, buf), "2026-11-29T00:00:00Z");
    assert_int_equal(tm_window_start(midnight - 1, 86400), midnight - 86400LL * 1000000);
    assert_int_equal(tm_window_start(midnight, 300), midnight);
    /* before the epoch the window floor still goes down */
    assert_int_equal(tm_window_start(-1, 60), -60000000);
    int64_t d;
    assert_int_equal(tm_parse_duration("30d", &d), 0);
    assert_int_equal(d, 30LL * 86400 * 1000000);
    assert_int_equal(tm_parse_duration("12h", &d), 0);
    assert_int_equal(d, 12LL * 3600 * 1000000);
    assert_int_equal(tm_parse_duration("500ms", &d), 0);
    assert_int_equal(d, 500000);
    assert_int_equal(tm_parse_duration("3 days", &d), -1);
    assert_int_equal(tm_parse_duration("-1d", &d), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_longest_prefix_v4), cmocka_unit_test(test_longest_prefix_v6),
        cmocka_unit_test(test_prefix_parsing),    cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_epoch_and_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
