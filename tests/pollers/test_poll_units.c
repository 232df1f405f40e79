/* The pollers' pure parts, case by case: the JSON a batch is posted as (exact 64-bit counters,
 * escaped names) and gnmic event messages turned into samples (a table of messages and the
 * samples or the error each must give). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "gnmi_event.h"
#include "harness.h"
#include "poll_sample.h"
#include "snmp_clock.h"
#include "snmp_wrap.h"

static void test_batch_json_exact_and_escaped(void **state)
{
    (void)state;
    struct poll_sample s = {0};
    snprintf(s.device, sizeof(s.device), "r\"1\\x");
    snprintf(s.interface, sizeof(s.interface), "et-0/0/1\n");
    s.at_us = 1764446400250000LL; /* 2025-11-29T20:00:00.25Z */
    s.has_uptime = true;
    s.uptime_cs = 123456;
    s.in_octets = UINT64_MAX;
    s.out_octets = 9007199254740993ULL; /* 2^53 + 1: a double would say ...992 */
    s.counter_bits = 64;
    s.discontinuity_cs = 7;
    size_t len = 0;
    char *j = poll_batch_json("p\"1", &s, 1, &len);
    assert_non_null(j);
    assert_int_equal(len, strlen(j));
    assert_string_equal(
        j, "{\"version\":1,\"poller\":\"p\\\"1\",\"samples\":[{\"device\":\"r\\\"1\\\\x\","
           "\"interface\":\"et-0/0/1\\n\",\"at\":\"2025-11-29T20:00:00.250000Z\","
           "\"uptime_cs\":123456,\"in_octets\":18446744073709551615,\"out_octets\":"
           "9007199254740993,\"speed_bps\":0,\"counter_bits\":64,\"discontinuity_cs\":7}]}");
    free(j);
}

#define CNT "/interfaces/interface/state/counters/"
#define EV(ts, values)                                                                             \
    "{\"name\":\"s\",\"timestamp\":" ts ",\"tags\":{\"source\":\"r1:57400\","                      \
    "\"interface_name\":\"et1\"},\"values\":{" values "}}"

struct gcase {
    const char *what;
    const char *msg;
    int rc;                 /* GNMI_OK, GNMI_MALFORMED, GNMI_FORMAT_JSON */
    const char *err;        /* substring of the error when rc != 0 */
    size_t n;               /* samples produced, after a final flush */
    uint64_t in, out, pkts; /* of the last sample */
};

static const struct gcase gcases[] = {
    {"split-events: one object, not an array",
     EV("1000", "\"" CNT "in-octets\":1,\"" CNT "out-octets\":2"), GNMI_OK, NULL, 1, 1, 2, 0},
    {"module-prefixed leaves, in-pkts preferred over the unicast sum",
     "[" EV("2000", "\"openconfig-interfaces:in-octets\":3,\"" CNT "out-octets\":4,\"" CNT
                    "in-pkts\":\"50\",\"" CNT "out-pkts\":5,\"" CNT "in-unicast-pkts\":1,\"" CNT
                    "out-unicast-pkts\":1") "]",
     GNMI_OK, NULL, 1, 3, 4, 50},
    {"SR Linux native names: *-packets, last-clear as a date-time",
     "[" EV("2000", "\"/srl_nokia-interfaces:interface/statistics/in-octets\":\"30\","
                    "\"/srl_nokia-interfaces:interface/statistics/out-octets\":\"40\","
                    "\"/srl_nokia-interfaces:interface/statistics/in-unicast-packets\":\"7\","
                    "\"/srl_nokia-interfaces:interface/statistics/in-multicast-packets\":\"2\","
                    "\"/srl_nokia-interfaces:interface/statistics/out-unicast-packets\":\"1\","
                    "\"/srl_nokia-interfaces:interface/statistics/last-clear\":"
                    "\"2025-11-29T19:00:00.123Z\"") "]",
     GNMI_OK, NULL, 1, 30, 40, 9},
    {"subinterface counters (tag subinterface_index) are not the interface's",
     "[{\"timestamp\":3000,\"tags\":{\"source\":\"r1\",\"interface_name\":\"et1\","
     "\"subinterface_index\":\"0\"},\"values\":{\"/interfaces/interface/subinterfaces/"
     "subinterface/state/counters/in-octets\":1,\"/interfaces/interface/subinterfaces/"
     "subinterface/state/counters/out-octets\":1}}]",
     GNMI_OK, NULL, 0, 0, 0, 0},
    {"subinterface counters (path only) are not the interface's",
     "[" EV("3000", "\"/interface/subinterface/statistics/in-octets\":1,"
                    "\"/interface/subinterface/statistics/out-octets\":1") "]",
     GNMI_OK, NULL, 0, 0, 0, 0},
    {"unknown interface: ignored, not an error",
     "[{\"timestamp\":3000,\"tags\":{\"source\":\"r1\",\"interface_name\":\"et9\"},\"values\":{"
     "\"" CNT "in-octets\":1}}]",
     GNMI_OK, NULL, 0, 0, 0, 0},
    {"an event without interface counters needs no interface_name",
     "[{\"timestamp\":3000,\"tags\":{\"source\":\"r1\"},\"values\":{\"/system/state/"
     "hostname\":\"r1\"}}]",
     GNMI_OK, NULL, 0, 0, 0, 0},
    {"gnmic's plain format: json is told apart",
     "{\"source\":\"r1:57400\",\"subscription-name\":\"s\",\"timestamp\":1,\"time\":"
     "\"1970-01-01T00:00:00.000000001Z\",\"updates\":[{\"Path\":\"interfaces/interface[name=et1]/"
     "state/counters/in-octets\",\"values\":{\"interfaces/interface/state/counters/in-octets\":"
     "1}}]}",
     GNMI_FORMAT_JSON, "format: json", 0, 0, 0, 0},
    {"negative counter", "[" EV("4000", "\"" CNT "in-octets\":-1") "]", GNMI_MALFORMED,
     "$[0].values[\"" CNT "in-octets\"]: expected a non-negative integer", 0, 0, 0, 0},
    {"fractional counter", "[" EV("4000", "\"" CNT "in-octets\":1.5") "]", GNMI_MALFORMED,
     "got 1.5", 0, 0, 0, 0},
    {"counter above 2^64", "[" EV("4000", "\"" CNT "in-octets\":\"18446744073709551616\"") "]",
     GNMI_MALFORMED, "non-negative integer", 0, 0, 0, 0},
    {"counter above 2^64 as a number",
     "[" EV("4000", "\"" CNT "in-octets\":18446744073709551616") "]", GNMI_MALFORMED,
     "non-negative integer", 0, 0, 0, 0},
    {"last-clear that is neither ns nor a date-time",
     "[" EV("4000", "\"" CNT "last-clear\":\"yesterday\"") "]", GNMI_MALFORMED,
     "RFC 3339 date-time", 0, 0, 0, 0},
    {"timestamp as a string (gnmic sends an int64)",
     "[{\"timestamp\":\"1\",\"tags\":{\"source\":\"r1\"}}]", GNMI_MALFORMED, "$[0].timestamp", 0, 0,
     0, 0},
    {"no source", "[{\"timestamp\":1,\"tags\":{\"interface_name\":\"et1\"}}]", GNMI_MALFORMED,
     "$[0].tags.source", 0, 0, 0, 0},
    {"tags not an object", "[{\"timestamp\":1,\"tags\":[]}]", GNMI_MALFORMED,
     "$[0].tags: expected an object", 0, 0, 0, 0},
    {"not JSON", "[{\"timestamp\":1,", GNMI_MALFORMED, "not valid JSON", 0, 0, 0, 0},
    {"an event that is not an object", "[1]", GNMI_MALFORMED, "$[0]: expected an event object", 0,
     0, 0, 0},
};

static struct cfg *one_link_cfg(void)
{
    struct cfg_errors errs;
    struct cfg *cfg = cfg_parse(
        "inline.json",
        "{\"sites\":[{\"name\":\"nyc\",\"prefixes\":[\"10.1.0.0/16\"]},{\"name\":\"chi\","
        "\"prefixes\":[\"10.2.0.0/16\"]}],\"devices\":[{\"name\":\"r1\",\"site\":\"nyc\","
        "\"gnmi\":{}}],\"links\":[{\"device\":\"r1\",\"interface\":\"et1\",\"site\":\"nyc\","
        "\"peer_site\":\"chi\",\"circuit\":\"c1\"}]}",
        &errs);
    assert_non_null(cfg);
    return cfg;
}

static void test_gnmi_cases(void **state)
{
    (void)state;
    struct cfg *cfg = one_link_cfg();
    for (size_t i = 0; i < sizeof(gcases) / sizeof(gcases[0]); i++) {
        const struct gcase *c = &gcases[i];
        struct gnmi_map *m = gnmi_map_new(cfg); /* fresh state per case */
        struct poll_batch out = {0};
        struct gnmi_stats st;
        char err[256] = "";
        int rc = (int)gnmi_map_message(m, c->msg, strlen(c->msg), 0, INT64_MAX, &out, &st, err,
                                       sizeof(err));
        gnmi_map_flush(m, 0, -1, &out, &st);
        if (rc != c->rc || (c->err && !strstr(err, c->err)) || out.n != c->n)
            fail_msg("case \"%s\": rc %d, err \"%s\", %zu samples", c->what, rc, err, out.n);
        if (c->n) {
            const struct poll_sample *s = &out.items[out.n - 1];
            if (s->in_octets != c->in || s->out_octets != c->out ||
                (c->pkts && s->in_pkts != c->pkts))
                fail_msg("case \"%s\": in %llu out %llu pkts %llu", c->what,
                         (unsigned long long)s->in_octets, (unsigned long long)s->out_octets,
                         (unsigned long long)s->in_pkts);
        }
        poll_batch_free(&out);
        gnmi_map_free(m);
    }
    cfg_free(cfg);
}

/* Split events: a later timestamp's first event must not produce a sample carrying the previous
 * timestamp's other counters (the stale row would win the reconciler's insert). */
static void test_gnmi_split_events_one_sample_per_timestamp(void **state)
{
    (void)state;
    struct cfg *cfg = one_link_cfg();
    struct gnmi_map *m = gnmi_map_new(cfg);
    struct poll_batch out = {0};
    struct gnmi_stats st;
    char err[256];
    const char *msgs[] = {
        EV("1000", "\"" CNT "in-octets\":100"),  EV("1000", "\"" CNT "out-octets\":200"),
        EV("1000", "\"" CNT "last-clear\":7e9"), EV("2000", "\"" CNT "in-octets\":150"),
        EV("2000", "\"" CNT "out-octets\":260"), EV("1000", "\"" CNT "in-octets\":1"), /* stale */
    };
    size_t after[] = {0, 0, 0, 1, 1, 1}; /* samples out after each message */
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(gnmi_map_message(m, msgs[i], strlen(msgs[i]), (int64_t)i * 1000, INT64_MAX,
                                          &out, &st, err, sizeof(err)),
                         GNMI_OK);
        assert_int_equal(out.n, after[i]);
    }
    assert_int_equal(st.stale, 1);
    /* not quiet long enough at 5.4 ms (last event at 4 ms, quiet 2 ms: due at 6 ms) */
    assert_int_equal(gnmi_map_next_due(m, 2000), 6000);
    assert_int_equal(gnmi_map_flush(m, 5400, 2000, &out, &st), 0);
    assert_int_equal(gnmi_map_flush(m, 6000, 2000, &out, &st), 1);
    assert_int_equal(out.n, 2);
    assert_int_equal(out.items[0].at_us, 1);
    assert_int_equal(out.items[0].in_octets, 100);
    assert_int_equal(out.items[0].out_octets, 200);
    assert_int_equal(out.items[0].discontinuity_cs, 700); /* 7e9 ns = 700 cs */
    assert_int_equal(out.items[1].at_us, 2);
    assert_int_equal(out.items[1].in_octets, 150);
    assert_int_equal(out.items[1].out_octets, 260);
    assert_int_equal(out.items[1].discontinuity_cs, 700); /* carried over */
    poll_batch_free(&out);
    gnmi_map_free(m);
    cfg_free(cfg);
}

/* The device clock: bounds on the boot time B from send - (U+1) cs <= B <= recv - U cs,
 * intersected response after response (widened by 200 ppm of the uptime between them). */
static void test_snmp_clock_late_answer(void **state)
{
    (void)state;
    struct snmp_clock c = {0};
    /* first response: B in [1,000,000 - 1,010,000, 1,002,000 - 1,000,000] = [-10,000, 2,000];
     * at = -4,000 + 1,000,000 + 5,000 (half a cs) = 1,001,000, the midpoint */
    assert_int_equal(snmp_clock_at(&c, 1000000, 1002000, 100), 1001000);
    /* B in [-10,000, 400] (slack 100 cs x 10,000 / 5,000 = 200 us on the old [-10,000, 2,000]);
     * at = -4,800 + 2,000,000 + 5,000 = 2,000,200 */
    assert_int_equal(snmp_clock_at(&c, 2000000, 2000400, 200), 2000200);
    /* the answer comes 1.5 s late: B stays in [-10,000, 600]: at = -4,700 + 3,000,000 + 5,000
     * = 3,000,300 (the midpoint would say 3,750,000, the arrival 4,500,000) */
    assert_int_equal(snmp_clock_at(&c, 3000000, 4500000, 300), 3000300);
    assert_int_equal(c.resets, 0);
    /* uptime went down (restart): bounds start again, the midpoint 5,000,250 */
    assert_int_equal(snmp_clock_at(&c, 5000000, 5000500, 50), 5000250);
    assert_int_equal(c.resets, 1);
}

/* 2^32 bytes x 8 = 34,359,738,368 bits: 34.36 s at 1 Gbit/s, 343.6 s at 100 Mbit/s. */
static void test_snmp_wrap_check(void **state)
{
    (void)state;
    char m[400];
    assert_int_equal(snmp_wrap_check(1000000000ULL, 30, m, sizeof(m)), 0); /* 30.3 < 34.36 */
    assert_int_equal(snmp_wrap_check(1000000000ULL, 34, m, sizeof(m)), 0); /* 34.34 < 34.36 */
    assert_int_equal(snmp_wrap_check(1000000000ULL, 35, m, sizeof(m)), 1);
    /* the longest interval that does: 34.36 / 1.01 = 34.02 -> 34 s */
    assert_non_null(strstr(m, "poll every 34 s or less"));
    assert_int_equal(snmp_wrap_check(100000000ULL, 300, m, sizeof(m)), 0); /* 303 < 343.6 */
    assert_int_equal(snmp_wrap_check(0, 10, m, sizeof(m)), 1);
    assert_non_null(strstr(m, "no ifSpeed"));
    assert_int_equal(snmp_wrap_check(4294967295ULL, 1, m, sizeof(m)), 1);
    assert_non_null(strstr(m, "saturated"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_json_exact_and_escaped),
        cmocka_unit_test(test_gnmi_cases),
        cmocka_unit_test(test_gnmi_split_events_one_sample_per_timestamp),
        cmocka_unit_test(test_snmp_clock_late_answer),
        cmocka_unit_test(test_snmp_wrap_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
