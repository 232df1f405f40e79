/* The log shippers' forms (reconciler/fluent.c) and the body decoder (body.c) as tables, no
 * server: the record-time rule at its boundaries (seconds below 1e11, ms below 1e14, µs below
 * 1e17, else ns; every json_date_format), numeric text, Fluent Bit's msgpack event forms
 * (EventTime, integer and float times, legacy [time, record], group markers, a record's own
 * date), Content-Type and Content-Encoding names. Expected values computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/buffer.h>
#include <msgpack.h>

#include "body.h"
#include "fluent.h"
#include "jsonv.h"

static int64_t time_of(const char *json, int *rc)
{
    struct jv *first;
    size_t n;
    struct jv_error e;
    struct jv_doc *d = jv_parse(json, strlen(json), false, &first, &n, &e);
    assert_non_null(d);
    const char *key;
    int64_t us = 0;
    *rc = fl_record_time(first, &key, &us);
    jv_doc_free(d);
    return us;
}

static void test_record_time(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int rc;
        int64_t us;
    } cases[] = {
        /* epoch (seconds) up to 1e11 - 1 (the year 5138) */
        {"{\"date\":1764442390}", 0, 1764442390000000LL},
        {"{\"date\":99999999999}", 0, 99999999999000000LL},
        /* epoch_ms from 1e11 (1973-03-03T09:46:40Z) */
        {"{\"date\":100000000000}", 0, 100000000000000LL},
        {"{\"date\":1764442390123}", 0, 1764442390123000LL},
        /* microseconds, nanoseconds */
        {"{\"date\":1764442390123456}", 0, 1764442390123456LL},
        {"{\"date\":1764442390123456789}", 0, 1764442390123456LL},
        /* double (Fluent Bit's default, %.16g), also as text */
        {"{\"date\":1764442390.123457}", 0, 1764442390123457LL},
        {"{\"date\":\"1764442390.5\"}", 0, 1764442390500000LL},
        {"{\"date\":\"1764442390123\"}", 0, 1764442390123000LL},
        /* iso8601 and java_sql_timestamp (UTC) */
        {"{\"date\":\"2025-11-29T18:53:10.123456Z\"}", 0, 1764442390123456LL},
        {"{\"date\":\"2025-11-29 18:53:10.123456\"}", 0, 1764442390123456LL},
        /* Vector's timestamp, @timestamp */
        {"{\"timestamp\":\"2025-11-29T18:53:10.123456789Z\"}", 0, 1764442390123456LL},
        {"{\"@timestamp\":1764442390}", 0, 1764442390000000LL},
        /* none, and not a time */
        {"{\"end\":1}", 1, 0},
        {"{\"date\":\"yesterday\"}", -1, 0},
        {"{\"date\":-5}", -1, 0},
        {"{\"date\":true}", -1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc;
        int64_t us = time_of(cases[i].json, &rc);
        fprintf(stderr, "%s -> %d %lld\n", cases[i].json, rc, (long long)us);
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0)
            assert_int_equal(us, cases[i].us);
    }
}

static void test_unsupported(void **state)
{
    (void)state;
    /* Fluent Bit format gelf (flb_msgpack_to_gelf: version 1.1, short_message, host) */
    const char *gelf = "{\"version\":\"1.1\",\"short_message\":\"transfer\",\"host\":\"dtn-1\","
                       "\"timestamp\":1764442390.5}";
    const char *otlp = "{\"resourceLogs\":[]}";
    const char *ok = "{\"service\":\"dupedog\",\"version\":\"1.1\",\"short_message\":\"x\"}";
    const char *in[3] = {gelf, otlp, ok};
    for (int k = 0; k < 3; k++) {
        struct jv *first;
        size_t n;
        struct jv_error e;
        struct jv_doc *d = jv_parse(in[k], strlen(in[k]), false, &first, &n, &e);
        assert_non_null(d);
        const char *why = fl_unsupported(first);
        if (k == 0)
            assert_non_null(strstr(why, "Fluent Bit format gelf"));
        else if (k == 1)
            assert_non_null(strstr(why, "OTLP JSON"));
        else
            assert_null(why);
        jv_doc_free(d);
    }
}

static void test_uint_text(void **state)
{
    (void)state;
    struct jv *first;
    size_t n;
    struct jv_error e;
    const char *in = "[\"18446744073709551615\",\"18446744073709551616\",\"-1\",\"1.5\",\"\","
                     "\"007\",42]";
    struct jv_doc *d = jv_parse(in, strlen(in), false, &first, &n, &e);
    assert_non_null(d);
    const struct jv *v = first->child;
    uint64_t u;
    assert_true(fl_uint(v, &u));
    assert_true(u == UINT64_MAX);
    assert_false(fl_uint(v = v->next, &u)); /* 2^64 */
    assert_false(fl_uint(v = v->next, &u));
    assert_false(fl_uint(v = v->next, &u));
    assert_false(fl_uint(v = v->next, &u));
    assert_true(fl_uint(v = v->next, &u));
    assert_int_equal(u, 7);
    assert_true(fl_uint(v = v->next, &u));
    assert_int_equal(u, 42);
    jv_doc_free(d);
}

static char *convert(msgpack_sbuffer *sb, long *n, char *msg)
{
    struct evbuffer *out = evbuffer_new();
    *n = fl_msgpack_to_json(sb->data, sb->size, out, msg, 200);
    size_t len = evbuffer_get_length(out);
    char *s = malloc(len + 1);
    evbuffer_remove(out, s, len);
    s[len] = 0;
    evbuffer_free(out);
    return s;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void test_msgpack_events(void **state)
{
    (void)state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    /* 1. [[EventTime 1764442390.000000005, {}], {"id":"a","bytes":18446744073709551615}] */
    const unsigned char et[8] = {0x69, 0x2b, 0x41, 0x16, 0, 0, 0, 5};
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_ext(&pk, 8, 0);
    msgpack_pack_ext_body(&pk, et, 8);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_map(&pk, 2);
    pack_str(&pk, "id");
    pack_str(&pk, "a");
    pack_str(&pk, "bytes");
    msgpack_pack_uint64(&pk, UINT64_MAX);
    /* 2. group start marker: skipped */
    const unsigned char gs[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_ext(&pk, 8, 0);
    msgpack_pack_ext_body(&pk, gs, 8);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_map(&pk, 0);
    /* 3. legacy [integer time, record] with its own date and a nested value */
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint64(&pk, 1764442391);
    msgpack_pack_map(&pk, 3);
    pack_str(&pk, "date");
    pack_str(&pk, "2025-11-29T18:53:11Z");
    pack_str(&pk, "n");
    msgpack_pack_int64(&pk, -3);
    pack_str(&pk, "tags");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_true(&pk);
    msgpack_pack_nil(&pk);
    /* 4. float time, empty record */
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1764442392.25);
    msgpack_pack_map(&pk, 0);
    long n;
    char msg[200];
    char *js = convert(&sb, &n, msg);
    fprintf(stderr, "%ld: %s\n", n, js);
    assert_int_equal(n, 3);
    assert_string_equal(js, "[{\"date\":1764442390.000000005,\"id\":\"a\","
                            "\"bytes\":18446744073709551615},"
                            "{\"date\":\"2025-11-29T18:53:11Z\",\"n\":-3,\"tags\":[true,null]},"
                            "{\"date\":1764442392.25}]");
    free(js);
    /* truncated, and not an event */
    sb.size -= 3;
    js = convert(&sb, &n, msg);
    assert_int_equal(n, -1);
    assert_non_null(strstr(msg, "msgpack event 3 is truncated"));
    free(js);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_int(&pk, 3);
    js = convert(&sb, &n, msg);
    assert_int_equal(n, -1);
    assert_non_null(strstr(msg, "msgpack event 0: expected [[time, metadata], record]"));
    free(js);
    /* a container declaring 2^31 elements in 6 bytes (msgpack-c would size 48 GiB from it), a
     * map of 2^32-1 entries inside an event, 16 nested fixarrays of 15: refused before decoding */
    static const unsigned char bombs[][8] = {{0xdd, 0x7f, 0xff, 0xff, 0xff, 1},
                                             {0x92, 0x01, 0xdf, 0xff, 0xff, 0xff, 0xff, 0x01}};
    for (int k = 0; k < 2; k++) {
        msgpack_sbuffer_clear(&sb);
        msgpack_sbuffer_write(&sb, (const char *)bombs[k], k == 0 ? 6 : 8);
        js = convert(&sb, &n, msg);
        assert_int_equal(n, -1);
        assert_non_null(strstr(msg, "declares more elements than the body holds"));
        free(js);
    }
    msgpack_sbuffer_clear(&sb);
    for (int k = 0; k < 16; k++)
        msgpack_pack_array(&pk, 15);
    js = convert(&sb, &n, msg);
    assert_int_equal(n, -1);
    assert_non_null(strstr(msg, "declares more elements than the body holds"));
    free(js);
    msgpack_sbuffer_destroy(&sb);
}

static void test_names(void **state)
{
    (void)state;
    bool mp;
    char msg[200];
    assert_int_equal(fl_content_type(true, "application/msgpack", &mp, msg, sizeof(msg)), 0);
    assert_true(mp);
    assert_int_equal(
        fl_content_type(true, "Application/X-MsgPack; charset=binary", &mp, msg, sizeof(msg)), 0);
    assert_true(mp);
    assert_int_equal(fl_content_type(true, "application/x-ndjson", &mp, msg, sizeof(msg)), 0);
    assert_false(mp);
    assert_int_equal(fl_content_type(false, "application/msgpack", &mp, msg, sizeof(msg)), -1);
    enum body_coding c;
    struct body_error e;
    static const struct {
        const char *h;
        int rc;
        enum body_coding c;
    } codings[] = {{NULL, 0, BODY_IDENTITY},
                   {"identity", 0, BODY_IDENTITY},
                   {"GZip", 0, BODY_GZIP},
                   {"x-gzip", 0, BODY_GZIP},
                   {"deflate", 0, BODY_DEFLATE},
                   {"zstd", 0, BODY_ZSTD},
                   {"identity, zstd", 0, BODY_ZSTD},
                   {"br", -1, 0},
                   {"snappy", -1, 0},
                   {"gzip, gzip", -1, 0}};
    for (size_t i = 0; i < sizeof(codings) / sizeof(codings[0]); i++) {
        int rc = body_coding_of(codings[i].h, &c, &e);
        assert_int_equal(rc, codings[i].rc);
        if (rc == 0)
            assert_int_equal(c, codings[i].c);
        else
            assert_int_equal(e.status, 415);
    }
    /* identity within and over the bound */
    char *out;
    size_t len;
    assert_int_equal(body_decode(BODY_IDENTITY, "abcd", 4, 4, &out, &len, &e), 0);
    assert_string_equal(out, "abcd");
    free(out);
    assert_int_equal(body_decode(BODY_IDENTITY, "abcd", 4, 3, &out, &len, &e), -1);
    assert_int_equal(e.status, 413);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_time), cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_uint_text), cmocka_unit_test(test_msgpack_events),
        cmocka_unit_test(test_names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
