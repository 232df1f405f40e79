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
    int rc;                 /* 0 or -1 */
    const char *err;        /* substring of the error when rc == -1 */
    size_t n;               /* samples produced */
    uint64_t in, out, pkts; /* of the last sample */
};

static const struct gcase gcases[] = {
    {"split-events: one object, not an array",
     EV("1000", "\"" CNT "in-octets\":1,\"" CNT "out-octets\":2"), 0, NULL, 1, 1, 2, 0},
    {"module-prefixed leaves, in-pkts preferred over the unicast sum",
     "[" EV("2000", "\"openconfig-interfaces:in-octets\":3,\"" CNT "out-octets\":4,\"" CNT
                    "in-pkts\":\"50\",\"" CNT "out-pkts\":5,\"" CNT "in-unicast-pkts\":1,\"" CNT
                    "out-unicast-pkts\":1") "]",
     0, NULL, 1, 3, 4, 50},
    {"unknown interface: ignored, not an error",
     "[{\"timestamp\":3000,\"tags\":{\"source\":\"r1\",\"interface_name\":\"et9\"},\"values\":{"
     "\"" CNT "in-octets\":1}}]",
     0, NULL, 0, 0, 0, 0},
    {"an event without interface counters needs no interface_name",
     "[{\"timestamp\":3000,\"tags\":{\"source\":\"r1\"},\"values\":{\"/system/state/"
     "hostname\":\"r1\"}}]",
     0, NULL, 0, 0, 0, 0},
    {"negative counter", "[" EV("4000", "\"" CNT "in-octets\":-1") "]", -1,
     "$[0].values[\"" CNT "in-octets\"]: expected a non-negative integer", 0, 0, 0, 0},
    {"fractional counter", "[" EV("4000", "\"" CNT "in-octets\":1.5") "]", -1, "got 1.5", 0, 0, 0,
     0},
    {"counter above 2^64", "[" EV("4000", "\"" CNT "in-octets\":\"18446744073709551616\"") "]", -1,
     "non-negative integer", 0, 0, 0, 0},
    {"no source", "[{\"timestamp\":1,\"tags\":{\"interface_name\":\"et1\"}}]", -1,
     "$[0].tags.source", 0, 0, 0, 0},
    {"tags not an object", "[{\"timestamp\":1,\"tags\":[]}]", -1, "$[0].tags: expected an object",
     0, 0, 0, 0},
    {"not JSON", "[{\"timestamp\":1,", -1, "$: not valid JSON", 0, 0, 0, 0},
    {"an event that is not an object", "[1]", -1, "$[0]: expected an event object", 0, 0, 0, 0},
};

static void test_gnmi_cases(void **state)
{
    (void)state;
    struct cfg_errors errs;
    struct cfg *cfg = cfg_parse(
        "inline.json",
        "{\"sites\":[{\"name\":\"nyc\",\"prefixes\":[\"10.1.0.0/16\"]},{\"name\":\"chi\","
        "\"prefixes\":[\"10.2.0.0/16\"]}],\"devices\":[{\"name\":\"r1\",\"site\":\"nyc\","
        "\"gnmi\":{}}],\"links\":[{\"device\":\"r1\",\"interface\":\"et1\",\"site\":\"nyc\","
        "\"peer_site\":\"chi\",\"circuit\":\"c1\"}]}",
        &errs);
    assert_non_null(cfg);
    for (size_t i = 0; i < sizeof(gcases) / sizeof(gcases[0]); i++) {
        const struct gcase *c = &gcases[i];
        struct gnmi_map *m = gnmi_map_new(cfg); /* fresh state per case */
        struct poll_batch out = {0};
        struct gnmi_stats st;
        char err[256] = "";
        int rc =
            gnmi_map_message(m, c->msg, strlen(c->msg), INT64_MAX, &out, &st, err, sizeof(err));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_json_exact_and_escaped),
        cmocka_unit_test(test_gnmi_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
