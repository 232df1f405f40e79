/* The strict JSON reader (common/jsonv.c) and writer (common/jsonw.c), as tables: each input with
 * the value or the error message prefix and JSON path expected. No server, no database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/buffer.h>

#include "jsonv.h"
#include "jsonw.h"

struct bad_case {
    const char *in;
    int many;
    const char *msg; /* prefix */
    const char *path;
};

static void test_errors(void **state)
{
    (void)state;
    static char deep[200];
    memset(deep, '[', 65);
    deep[65] = 0;
    const struct bad_case cases[] = {
        {"", 0, "empty body", "$"},
        {"   \n", 0, "empty body", "$"},
        {"{\"a\":[1,{\"b\":tru}]}", 0, "unexpected character", "$.a[1].b"},
        {"{\"a\":[1,{\"b\":tr", 0, "truncated JSON: incomplete 'true'", "$.a[1].b"},
        {"{\"a\":1,}", 0, "expected a string key", "$"},
        {"{\"a\" 1}", 0, "expected ':'", "$.a"},
        {"[1 2]", 0, "expected ',' or ']'", "$"},
        {"{\"a\":{\"b\":1}", 0, "truncated JSON: unterminated object", "$"},
        {"{\"x\":\"abc", 0, "truncated JSON: unterminated string", "$.x"},
        {"01", 0, "unexpected data after the JSON value", "$"},
        {"-", 0, "invalid number", "$"},
        {"1.", 0, "invalid number: digits expected after '.'", "$"},
        {"1e+", 0, "invalid number: digits expected in the exponent", "$"},
        {"\"\\x\"", 0, "invalid escape \\x", "$"},
        {"\"\\u12G4\"", 0, "invalid \\u escape", "$"},
        {"\"\\udc00\"", 0, "invalid \\u escape: unpaired surrogate", "$"},
        {"\"\\ud800\\u0041\"", 0, "invalid \\u escape: unpaired surrogate", "$"},
        {"\"a\tb\"", 0, "control character U+0009", "$"},
        {"[\"\xC0\xAF\"]", 0, "invalid UTF-8", "$[0]"},         /* overlong '/' */
        {"[\"\xED\xA0\x80\"]", 0, "invalid UTF-8", "$[0]"},     /* UTF-16 surrogate */
        {"[\"\xF4\x90\x80\x80\"]", 0, "invalid UTF-8", "$[0]"}, /* above U+10FFFF */
        {"[\"\xE2\x82\"]", 0, "invalid UTF-8", "$[0]"},         /* cut short */
        {"\xC3\xA9", 0, "unexpected character", "$"},           /* UTF-8, but outside a string */
        {"\xFF", 0, "invalid UTF-8", "$"},
        {deep, 0, "nesting deeper than 64 levels", NULL},
        {"{} x", 1, "unexpected character 'x'", "$[1]"},
        {"\"a\\u0000b\"", 0, "U+0000 is not allowed", "$"},
        {"{\"a\\u0000\":1}", 0, "U+0000 is not allowed", "$"},
        {"{\"a\":1,\"a\":2}", 0, "duplicate key \"a\"", "$.a"},
        {"{\"a\":{\"b\":[{\"c\":1,\"d\":2,\"c\":3}]}}", 0, "duplicate key \"c\"", "$.a.b[0].c"},
        {"{\"x\":1}\n{\"k\":{\"y\":1,\"\\u0079\":2}}", 1, "duplicate key \"y\"", "$[1].k.y"},
        {"1e400", 0, "number 1e400 is out of the range", "$"},
        {"[-1e99999999999999999999]", 0, "number -1e99999999999999999999 is out", "$[0]"},
        {"{}\n{\"a\":[}", 1, "unexpected character '}'", "$[1].a[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jv *first;
        size_t n;
        struct jv_error e;
        struct jv_doc *d =
            jv_parse(cases[i].in, strlen(cases[i].in), cases[i].many, &first, &n, &e);
        fprintf(stderr, "case %zu: %s at %s\n", i, e.msg, e.path);
        assert_null(d);
        assert_null(first);
        assert_int_equal(strncmp(e.msg, cases[i].msg, strlen(cases[i].msg)), 0);
        if (cases[i].path)
            assert_string_equal(e.path, cases[i].path);
        /* in place: the same error, at the same offset */
        size_t len = strlen(cases[i].in);
        char *buf = malloc(len + 1);
        assert_non_null(buf);
        memcpy(buf, cases[i].in, len);
        struct jv_error e2;
        assert_null(jv_parse_inplace(buf, len, cases[i].many, &first, &n, &e2));
        assert_string_equal(e2.msg, e.msg);
        assert_string_equal(e2.path, e.path);
        assert_int_equal(e2.offset, e.offset);
        assert_int_equal(e2.semantic, e.semantic);
        free(buf);
    }
}

/* jv_parse_inplace reads the caller's buffer without a copy: the strings are decoded where they
 * are; escaped tells a string written with a backslash escape (whose bytes may need COPY
 * escaping) from one without (which holds no '\\', tab, newline or CR). */
static void test_inplace_and_escaped(void **state)
{
    (void)state;
    const char text[] =
        "{\"plain\": \"abc d/\xC3\xA9\", \"nl\": \"a\\nb\", \"bs\": \"x\\\\y\", "
        "\"u\": \"\\u00e9\", \"sl\": \"\\/\", \"e\": \"\", \"n\": 12345678901234567890}";
    size_t len = sizeof(text) - 1;
    char *buf = malloc(len + 1); /* buf[len] is written (the NUL the scans stop at) */
    assert_non_null(buf);
    memcpy(buf, text, len);
    struct jv *v;
    size_t n;
    struct jv_error e;
    struct jv_doc *d = jv_parse_inplace(buf, len, false, &v, &n, &e);
    assert_non_null(d);
    assert_int_equal(n, 1);
    const struct {
        const char *key, *s;
        bool escaped;
    } want[] = {{"plain", "abc d/\xC3\xA9", false},
                {"nl", "a\nb", true},
                {"bs", "x\\y", true},
                {"u", "\xC3\xA9", true},
                {"sl", "/", true},
                {"e", "", false}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct jv *m = jv_get(v, want[i].key);
        assert_non_null(m);
        assert_string_equal(m->s, want[i].s);
        assert_int_equal(m->escaped, want[i].escaped);
        assert_true(m->s >= buf && m->s < buf + len); /* in the caller's buffer */
        /* off/len: the value's text as sent (the copy made by the test) */
        assert_int_equal(text[m->off], '"');
        assert_int_equal(text[m->off + m->len - 1], '"');
    }
    const struct jv *num = jv_get(v, "n");
    assert_int_equal(num->u, UINT64_C(12345678901234567890));
    char t[32];
    assert_string_equal(jv_num_text(num, t, sizeof t), "12345678901234567890");
    assert_int_equal(num->len, 20);
    jv_doc_free(d);
    /* the document owns nothing of buf: it is the caller's to free after */
    free(buf);
}

/* Objects of 31 to 34 members, across the size where the check changes from member-by-member to
 * sorting: the first repeat in text order is named, whichever key it repeats and wherever the
 * repeated key was; an agent's flow record with every member it sends (agentlib/report.c) has no
 * repeat; a syntax error after a repeat in the same object is the error reported. */
static void test_duplicates_each_size(void **state)
{
    (void)state;
    for (int m = 31; m <= 34; m++) {
        for (int where = 0; where < m - 2; where += 5) {
            /* members k0..k(m-3), then k(where) again, then k1 again: the first repeat is the
             * member after k(m-3), its value at text offset off */
            char buf[2048];
            size_t n = (size_t)snprintf(buf, sizeof buf, "{");
            for (int i = 0; i < m - 2; i++)
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"k%d\":%d", i ? "," : "", i, i);
            size_t off = n + (size_t)snprintf(NULL, 0, ",\"k%d\":", where); /* its value */
            n += (size_t)snprintf(buf + n, sizeof buf - n, ",\"k%d\":7,\"k1\":8}", where);
            struct jv *first;
            size_t nv;
            struct jv_error e;
            char want[64], path[64];
            assert_null(jv_parse(buf, n, 0, &first, &nv, &e));
            snprintf(want, sizeof want, "duplicate key \"k%d\"", where);
            snprintf(path, sizeof path, "$.k%d", where);
            assert_string_equal(e.msg, want);
            assert_string_equal(e.path, path);
            assert_int_equal(e.offset, off);
            assert_true(e.semantic);
            /* cut before the closing brace: the syntax error, not the repeat */
            assert_null(jv_parse(buf, n - 1, 0, &first, &nv, &e));
            assert_string_equal(e.msg, "truncated JSON: unterminated object");
            assert_false(e.semantic);
        }
    }
    const char flow[] =
        "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.1:20000\","
        "\"remote\":\"10.2.0.1:5201\",\"role\":\"client\",\"tx_bytes\":1,\"rx_bytes\":2,"
        "\"tx_calls\":1,\"rx_calls\":1,\"pid\":4000,\"ppid\":1,\"uid\":1000,"
        "\"program\":\"python3\",\"user\":\"u1\",\"exe\":\"/usr/bin/python3.11\","
        "\"workflow\":\"wf1\",\"cgroup\":\"/user.slice\",\"container\":\"c\","
        "\"pod_uid\":\"p\",\"namespace\":\"ns\",\"pod\":\"pod\",\"container_name\":\"cn\","
        "\"unit\":\"u.scope\",\"slurm_job\":\"42\"}";
    struct jv *first;
    size_t nv;
    struct jv_error e;
    struct jv_doc *d = jv_parse(flow, sizeof flow - 1, 0, &first, &nv, &e);
    assert_non_null(d);
    assert_int_equal(first->n, 24);
    jv_doc_free(d);
}

/* A duplicate in a large object (the sorted path) is found, the first repeat in text order. */
static void test_duplicates_large(void **state)
{
    (void)state;
    char buf[8192];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"o\":{");
    for (int i = 0; i < 500; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s\"k%d\":%d", i ? "," : "", i, i);
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, ",\"k400\":1,\"k7\":2}}");
    struct jv *first;
    size_t nv;
    struct jv_error e;
    assert_null(jv_parse(buf, n, 0, &first, &nv, &e));
    assert_string_equal(e.msg, "duplicate key \"k400\"");
    assert_string_equal(e.path, "$.o.k400");
    assert_true(e.semantic);
    assert_int_equal(e.offset, (size_t)(strstr(buf, ",\"k400\":1,") - buf) + 8);
    /* no duplicate: accepted, and a syntax error is not semantic */
    *strstr(buf, ",\"k400\":1,") = 0;
    strcat(buf, "}}");
    struct jv_doc *d = jv_parse(buf, strlen(buf), 0, &first, &nv, &e);
    assert_non_null(d);
    assert_int_equal(jv_get(first, "o")->n, 500);
    jv_doc_free(d);
    /* a raw NUL byte in a string is a control character (400, not 422) */
    assert_null(jv_parse("[\"a\0b\"]", 6, 0, &first, &nv, &e));
    assert_string_equal(e.msg, "control character U+0000 in a string must be escaped");
    assert_string_equal(e.path, "$[0]");
    assert_false(e.semantic);
    assert_null(jv_parse("[1,", 3, 0, &first, &nv, &e));
    assert_false(e.semantic);
    assert_int_equal(e.offset, 3);
}

static const struct jv *one(const char *in, struct jv_doc **d)
{
    struct jv *first;
    size_t n;
    struct jv_error e;
    *d = jv_parse(in, strlen(in), 0, &first, &n, &e);
    if (!*d)
        fprintf(stderr, "%s: %s at %s\n", in, e.msg, e.path);
    assert_non_null(*d);
    assert_int_equal(n, 1);
    return first;
}

static void test_numbers(void **state)
{
    (void)state;
    struct jv_doc *d;
    const struct jv *v = one("18446744073709551615", &d); /* 2^64 - 1, exact */
    assert_true(v->type == JV_NUMBER && v->is_int && !v->neg && !v->overflow);
    assert_true(v->u == UINT64_MAX);
    jv_doc_free(d);
    v = one("18446744073709551616", &d); /* 2^64 */
    assert_true(v->is_int && v->overflow);
    jv_doc_free(d);
    v = one("9007199254740993", &d); /* 2^53 + 1: a double would round it */
    assert_true(v->u == 9007199254740993ULL);
    jv_doc_free(d);
    uint64_t u;
    int64_t i64;
    v = one("18446744073709551615", &d);
    assert_true(jv_u64(v, &u) && u == UINT64_MAX);
    assert_false(jv_i64(v, &i64));
    jv_doc_free(d);
    v = one("-9223372036854775808", &d); /* INT64_MIN, exact */
    assert_true(jv_i64(v, &i64) && i64 == INT64_MIN);
    assert_false(jv_u64(v, &u));
    jv_doc_free(d);
    v = one("-9223372036854775809", &d);
    assert_false(jv_i64(v, &i64));
    jv_doc_free(d);
    v = one("9223372036854775807", &d);
    assert_true(jv_i64(v, &i64) && i64 == INT64_MAX);
    jv_doc_free(d);
    v = one("18446744073709551616", &d);
    assert_false(jv_u64(v, &u));
    char txt[32];
    assert_string_equal(jv_num_text(v, txt, sizeof(txt)), "18446744073709551616");
    assert_null(jv_num_text(v, txt, 20)); /* 20 digits and the NUL do not fit in 20 */
    jv_doc_free(d);
    v = one("[ -1.50e+3 ]", &d);
    assert_string_equal(jv_num_text(v->child, txt, sizeof(txt)), "-1.50e+3");
    assert_int_equal(v->child->off, 2);
    assert_false(jv_u64(v->child, &u));
    assert_true(v->child->d == -1500.0);
    jv_doc_free(d);
    v = one("1e-400", &d); /* underflows to 0: a finite double, accepted */
    assert_true(v->d == 0.0);
    jv_doc_free(d);
    v = one("-0", &d);
    assert_true(v->is_int && v->neg && v->u == 0);
    jv_doc_free(d);
    v = one("1e3", &d);
    assert_true(!v->is_int && v->d == 1000.0);
    jv_doc_free(d);
    v = one(" 1764442380.25 ", &d);
    assert_true(!v->is_int && v->d == 1764442380.25);
    jv_doc_free(d);
}

static void test_strings_and_structure(void **state)
{
    (void)state;
    struct jv_doc *d;
    const struct jv *v = one("{\"k\\u00e9y\":\"\\ud83d\\ude00 \\\"q\\\" \\/ \\n\",\"n\":null,"
                             "\"t\":true,\"a\":[1,[2],{}],\"e\":\"\"}",
                             &d);
    assert_int_equal(v->type, JV_OBJECT);
    assert_int_equal(v->n, 5);
    const struct jv *s = v->child;
    assert_string_equal(s->key, "k\xC3\xA9y");
    assert_string_equal(s->s, "\xF0\x9F\x98\x80 \"q\" / \n"); /* U+1F600 from a surrogate pair */
    assert_int_equal(s->n, 12);
    assert_int_equal(jv_get(v, "n")->type, JV_NULL);
    assert_int_equal(jv_get(v, "t")->type, JV_TRUE);
    const struct jv *a = jv_get(v, "a");
    assert_int_equal(a->n, 3);
    assert_int_equal(a->child->next->child->u, 2);
    assert_int_equal(jv_get(v, "e")->n, 0);
    assert_null(jv_get(v, "missing"));
    jv_doc_free(d);

    /* a stream: NDJSON with CRLF and no final newline, then concatenated objects */
    const char *in = "{\"i\":0}\r\n{\"i\":1}{\"i\":2}  [3]";
    struct jv *first;
    size_t n;
    struct jv_error e;
    d = jv_parse(in, strlen(in), 1, &first, &n, &e);
    assert_non_null(d);
    assert_int_equal(n, 4);
    assert_int_equal(first->next->next->child->u, 2);
    assert_int_equal(first->next->next->next->type, JV_ARRAY);
    jv_doc_free(d);
    d = jv_parse("", 0, 1, &first, &n, &e);
    assert_non_null(d);
    assert_int_equal(n, 0);
    jv_doc_free(d);
}

/* The string scan at every length and alignment: pad spaces, a quote, k plain bytes, then one
 * thing the scan must stop at (or pass), "bb" and the closing quote, parsed in place from a
 * buffer of exactly len + 1 bytes (ASan: nothing past the input is read). k from 0 to 20 and pad
 * from 0 to 7 put every stop byte at every place of an 8-byte word and next to the input's end,
 * for any later scan that reads more than a byte at a time (one was tried on 2026-12-07: no
 * gain on the agents' short strings, not kept). */
static void test_string_scan_each_position(void **state)
{
    (void)state;
    const struct {
        const char *x;    /* after the k plain bytes */
        const char *want; /* decoded x, or NULL: an error at x */
        bool escaped;
        const char *err; /* message prefix of the error */
    } cases[] = {
        {"", "", false, NULL},
        {" ", " ", false, NULL},
        {"!", "!", false, NULL},
        {"#", "#", false, NULL},
        {"[]", "[]", false, NULL},
        {"~\x7F", "~\x7F", false, NULL},
        {"\xC3\xA9", "\xC3\xA9", false, NULL},
        {"\\n", "\n", true, NULL},
        {"\\\"", "\"", true, NULL},
        {"\\\\", "\\", true, NULL},
        {"\x01", NULL, false, "control character U+0001"},
        {"\x1F", NULL, false, "control character U+001F"},
        {"\x80", NULL, false, "invalid UTF-8 in a string"},
        {"\xFF", NULL, false, "invalid UTF-8 in a string"},
    };
    char text[64], want[64];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int pad = 0; pad < 8; pad++)
            for (int k = 0; k <= 20; k++)
                for (int closed = 0; closed < 2; closed++) {
                    int at = pad + 1 + k; /* where x starts */
                    int len = snprintf(text, sizeof text, "%*s\"%.*s%s%s", pad, "", k,
                                       "aaaaaaaaaaaaaaaaaaaaa", cases[c].x, closed ? "bb\"" : "");
                    char *buf = malloc((size_t)len + 1);
                    assert_non_null(buf);
                    memcpy(buf, text, (size_t)len);
                    struct jv *v;
                    size_t n;
                    struct jv_error e;
                    struct jv_doc *d = jv_parse_inplace(buf, (size_t)len, false, &v, &n, &e);
                    if (cases[c].want && closed) {
                        assert_non_null(d);
                        snprintf(want, sizeof want, "%.*s%sbb", k, "aaaaaaaaaaaaaaaaaaaaa",
                                 cases[c].want);
                        assert_int_equal(v->type, JV_STRING);
                        assert_string_equal(v->s, want);
                        assert_int_equal(v->n, strlen(want));
                        assert_int_equal(v->escaped, cases[c].escaped);
                        jv_doc_free(d);
                    } else if (cases[c].want) {
                        assert_null(d);
                        assert_string_equal(e.msg, "truncated JSON: unterminated string");
                    } else {
                        assert_null(d);
                        if (strncmp(e.msg, cases[c].err, strlen(cases[c].err)) != 0)
                            fail_msg("%s at k=%d pad=%d: got \"%s\"", cases[c].err, k, pad, e.msg);
                        assert_int_equal(e.offset, at);
                    }
                    free(buf);
                }
}

static void test_writer(void **state)
{
    (void)state;
    struct evbuffer *b = evbuffer_new();
    jw_str(b, "caf\xC3\xA9 \"x\"\\\n\x01 cut\xE2\x82");
    jw_str(b, NULL);
    jw_error(b, "bad", "$.a[1]");
    size_t n = evbuffer_get_length(b);
    char *s = calloc(1, n + 1);
    evbuffer_remove(b, s, n);
    assert_string_equal(s, "\"caf\xC3\xA9 \\\"x\\\"\\\\\\n\\u0001 cut\\ufffd\\ufffd\"null"
                           "{\"error\":\"bad\",\"path\":\"$.a[1]\"}\n");
    free(s);
    evbuffer_free(b);
}

static char *drain(struct evbuffer *b)
{
    char *s = jw_take(b, NULL);
    assert_non_null(s);
    return s;
}

static void test_builder(void **state)
{
    (void)state;
    struct evbuffer *b = evbuffer_new();
    struct jw w;
    jw_init(&w, b);
    jw_begin_object(&w);
    jw_kv_u64(&w, "max", UINT64_MAX);
    jw_kv_u64(&w, "p53", 9007199254740993ULL);
    jw_kv_i64(&w, "min", INT64_MIN);
    jw_kv_double(&w, "tau", 0.1);
    jw_kv_double(&w, "third", 1.0 / 3);
    jw_kv_double(&w, "inf", 1.0 / 0.0);
    jw_kv_str(&w, "s", "a\"\xFF");
    jw_key(&w, "a");
    jw_begin_array(&w);
    jw_u64(&w, 1);
    jw_null(&w);
    jw_bool(&w, true);
    jw_begin_object(&w);
    jw_end(&w);
    jw_raw(&w, "1.50", 4);
    jw_end(&w);
    jw_key(&w, "n");
    jw_string(&w, NULL);
    jw_end(&w);
    assert_int_equal(jw_finish(&w), 0);
    char *s = drain(b);
    assert_string_equal(s, "{\"max\":18446744073709551615,\"p53\":9007199254740993,"
                           "\"min\":-9223372036854775808,\"tau\":0.1,"
                           "\"third\":0.33333333333333331,\"inf\":null,\"s\":\"a\\\"\\ufffd\","
                           "\"a\":[1,null,true,{},1.50],\"n\":null}");
    /* what was written reads back exactly */
    struct jv *first;
    size_t n;
    struct jv_error e;
    struct jv_doc *d = jv_parse(s, strlen(s), 0, &first, &n, &e);
    assert_non_null(d);
    uint64_t u;
    int64_t i;
    assert_true(jv_u64(jv_get(first, "max"), &u) && u == UINT64_MAX);
    assert_true(jv_i64(jv_get(first, "min"), &i) && i == INT64_MIN);
    assert_true(jv_get(first, "third")->d == 1.0 / 3);
    jv_doc_free(d);
    free(s);
    /* misuse is reported, not written silently */
    jw_init(&w, b);
    jw_begin_array(&w);
    jw_key(&w, "k"); /* a key inside an array */
    assert_int_equal(jw_finish(&w), -1);
    jw_init(&w, b);
    jw_begin_object(&w);
    assert_int_equal(jw_finish(&w), -1); /* not closed */
    jw_init(&w, b);
    for (int k = 0; k < JW_MAX_DEPTH + 1; k++)
        jw_begin_array(&w);
    assert_int_equal(jw_finish(&w), -1);
    evbuffer_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_strings_and_structure),
        cmocka_unit_test(test_writer),
        cmocka_unit_test(test_builder),
        cmocka_unit_test(test_duplicates_large),
        cmocka_unit_test(test_duplicates_each_size),
        cmocka_unit_test(test_inplace_and_escaped),
        cmocka_unit_test(test_string_scan_each_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
