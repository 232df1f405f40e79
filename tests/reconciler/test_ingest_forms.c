/* Agent report versions 1 and 2 are two spellings of one report (docs/design.md, "Agent report
 * (`/v1/attributions`)"): 400 reports drawn from a seeded generator, each written both ways — the
 * owner's members in every flow (version 1, the form ingest read before version 2 and the other
 * tests check column by column), or once per process in procs[] with each flow naming it
 * (version 2) — must give the same ingest result, byte for byte: the COPY text of every row
 * (PostgreSQL only), the ClickHouse Native block (analytics.clickhouse), the flow_reports row's
 * parameters, the local sites, the days and the NAS rows' count. The owners draw every member
 * the reconciler keeps in each of its shapes (absent, null, empty, escapes, 4-byte UTF-8, the
 * 1,024-byte limit, the largest pid and uid) plus members it ignores (ppid, exe, cgroup); the
 * flows are socket (IPv4, IPv6, with and without role) and NFS (with and without port, client
 * address, export, ops). No server: ingest_parse only (reconciler/ingest.h). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chnative.h"
#include "config.h"
#include "ingest.h"
#include "nasin.h"
#include "timeutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

struct sb {
    char *p;
    size_t n, cap;
};

static struct sb sb_new(void)
{
    struct sb b = {.p = malloc(256), .cap = 256};
    assert_non_null(b.p);
    b.p[0] = 0;
    return b;
}

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = b->cap * 2 + (size_t)k + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
}

/* A name member in one of the shapes ingest accepts, or nothing ("" returned). */
static const char *name_value(char *buf, size_t cap)
{
    static const char *const shapes[] = {"null",
                                         "\"\"",
                                         "\"alice\"",
                                         "\"py\\tthon\\n3\"",
                                         "\"tr\\\\ain \\\"42\\\"\"",
                                         "\"\\u00e9t\\u00e9 \\ud83d\\ude80\"",
                                         "\"r\xc3\xa9sum\xc3\xa9\"",
                                         "\"wf-7\""};
    unsigned k = pick(10);
    if (k >= 8)
        return "";
    if (k == 7 && pick(4) == 0) { /* the longest name accepted: 1,024 bytes */
        buf[0] = '"';
        memset(buf + 1, 'n', 1024);
        snprintf(buf + 1025, cap - 1025, "\"");
        return buf;
    }
    return shapes[k];
}

/* One owner's members as JSON text ("" when it has none). */
static void owner_text(struct sb *o)
{
    static const char *const names[] = {"user",      "program", "workflow",      "container",
                                        "namespace", "pod",     "container_name"};
    char big[1100];
    const char *sep = "";
    switch (pick(4)) {
    case 0:
        break;
    case 1:
        sb_add(o, "%s\"pid\":null", sep), sep = ",";
        break;
    default:
        sb_add(o, "%s\"pid\":%u", sep, pick(3) ? pick(100000) : 2147483647u), sep = ",";
    }
    if (pick(3))
        sb_add(o, "%s\"uid\":%u", sep, pick(3) ? pick(70000) : 2147483647u), sep = ",";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = name_value(big, sizeof big);
        if (*v)
            sb_add(o, "%s\"%s\":%s", sep, names[i], v), sep = ",";
    }
    if (pick(2)) /* members ingest ignores */
        sb_add(o, "%s\"ppid\":%u,\"exe\":\"/usr/bin/x\",\"cgroup\":\"/user.slice\"", sep,
               pick(1000)),
            sep = ",";
}

/* One flow's own members (no owner). */
static void flow_text(struct sb *f)
{
    if (pick(4) == 0) {
        sb_add(f, "\"source\":\"nfs\",\"server\":\"%s\",\"op\":\"%s\",\"bytes\":%u",
               pick(2) ? "10.2.0.50:2049" : "[fd00:2::50]", pick(2) ? "read" : "write",
               pick(1u << 30));
        if (pick(2))
            sb_add(f, ",\"ops\":%u", pick(5000));
        if (pick(2))
            sb_add(f, ",\"local\":\"%s\"", pick(2) ? "10.1.0.7" : "[fd00:1::7]:700");
        if (pick(2))
            sb_add(f, ",\"export\":\"/data/%u\"", pick(9));
        return;
    }
    if (pick(3))
        sb_add(f,
               "\"source\":\"socket\",\"proto\":\"%s\",\"local\":\"10.1.%u.%u:%u\",\"remote\":"
               "\"10.2.%u.%u:%u\"",
               pick(2) ? "tcp" : "udp", pick(256), pick(256), 1 + pick(65535), pick(256), pick(256),
               1 + pick(65535));
    else
        sb_add(f,
               "\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"[fd00:1::%x]:%u\",\"remote\":"
               "\"[2001:db8::%x]:443\"",
               pick(65536), 1 + pick(65535), pick(65536));
    if (pick(2))
        sb_add(f, ",\"role\":\"%s\"", pick(2) ? "client" : "server");
    sb_add(f, ",\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_calls\":%u",
           rnd() % (UINT64_C(1) << 40), rnd() % (UINT64_C(1) << 40), pick(100));
}

static struct cfg *config(const char *more)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"window_seconds\": 60, \"database\": \"dbname=x\", "
             "\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/32\"]},"
             " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]%s}",
             more);
    struct cfg_errors errs = {0};
    struct cfg *c = cfg_parse("forms.json", text, &errs);
    if (!c)
        cfg_errors_print(NULL, "forms.json", &errs, stderr);
    assert_non_null(c);
    return c;
}

static void parse_ok(const struct cfg *cfg, const struct sb *body, int64_t now,
                     struct ingest_batch *b)
{
    struct ingest_error e;
    if (ingest_parse(cfg, INGEST_ATTRIBUTIONS, body->p, body->n, now, b, &e) < 0)
        fail_msg("ingest_parse refused %.300s: %s at %s", body->p, e.msg, e.path);
}

static void same_batch(const struct ingest_batch *a, const struct ingest_batch *b, int r)
{
    if (a->n_rows != b->n_rows || a->copy_len != b->copy_len ||
        (a->copy_len && memcmp(a->copy, b->copy, a->copy_len) != 0))
        fail_msg("report %d: rows differ (%zu/%zu rows, %zu/%zu bytes of COPY text)", r, a->n_rows,
                 b->n_rows, a->copy_len, b->copy_len);
    for (int p = 0; p < INGEST_REPORT_PARAMS; p++)
        if (!a->report[p] != !b->report[p] ||
            (a->report[p] && strcmp(a->report[p], b->report[p]) != 0))
            fail_msg("report %d: flow_reports parameter %d differs: %s / %s", r, p,
                     a->report[p] ? a->report[p] : "NULL", b->report[p] ? b->report[p] : "NULL");
    assert_string_equal(a->local_sites, b->local_sites);
    assert_int_equal(a->n_days, b->n_days);
    assert_int_equal(nasin_rows(a->nas), nasin_rows(b->nas));
    assert_int_equal(!a->native, !b->native);
    if (a->native) {
        /* chnative_size is a bound (its lengths' varuints at their widest); write says */
        size_t na = chnative_size(a->native), nb = chnative_size(b->native);
        assert_true(na > 0 && nb > 0);
        char *x = malloc(na), *y = malloc(nb);
        assert_non_null(x);
        assert_non_null(y);
        uint32_t ws = (uint32_t)(a->window_start_us / TM_USEC_PER_SEC);
        size_t wa = chnative_write(a->native, ws, x), wb = chnative_write(b->native, ws, y);
        assert_int_equal(wa, wb);
        if (memcmp(x, y, wa) != 0)
            fail_msg("report %d: the Native blocks differ", r);
        free(x);
        free(y);
    }
}

static void test_versions_agree(void **state)
{
    (void)state;
    struct cfg *pg = config(""), *ch = config(", \"analytics\": {\"clickhouse\": {\"url\": "
                                              "\"http://127.0.0.1:8123\", \"database\": \"wl\"}}");
    int64_t now = tm_now_us();
    char ws[TM_RFC3339_LEN];
    tm_format_rfc3339(tm_window_start(now, 60) - 120 * TM_USEC_PER_SEC, ws);
    size_t flows = 0, owners = 0, nfs = 0;
    for (int r = 0; r < 400; r++) {
        unsigned np = 1 + pick(6), nf = pick(41);
        struct sb own[6], v1 = sb_new(), v2 = sb_new();
        for (unsigned k = 0; k < np; k++) {
            own[k] = sb_new();
            owner_text(&own[k]);
        }
        const char *head = "\"host\":\"h\",\"agent_id\":\"a\",\"seq\":%d,\"window_start\":\"%s\"";
        sb_add(&v1, "{\"version\":1,");
        sb_add(&v1, head, r, ws);
        sb_add(&v1, ",\"flows\":[");
        sb_add(&v2, "{\"version\":2,");
        sb_add(&v2, head, r, ws);
        sb_add(&v2, ",\"procs\":[");
        for (unsigned k = 0; k < np; k++)
            sb_add(&v2, "%s{%s}", k ? "," : "", own[k].p);
        sb_add(&v2, "],\"flows\":[");
        for (unsigned i = 0; i < nf; i++) {
            struct sb f = sb_new();
            flow_text(&f);
            nfs += strstr(f.p, "\"nfs\"") != NULL;
            unsigned k = pick(np);
            sb_add(&v1, "%s{%s%s%s}", i ? "," : "", f.p, own[k].n ? "," : "", own[k].p);
            sb_add(&v2, "%s{%s,\"proc\":%u}", i ? "," : "", f.p, k);
            free(f.p);
        }
        sb_add(&v1, "]}");
        sb_add(&v2, "]}");
        flows += nf;
        owners += np;
        for (int m = 0; m < 2; m++) {
            struct ingest_batch a, b;
            parse_ok(m ? ch : pg, &v1, now, &a);
            parse_ok(m ? ch : pg, &v2, now, &b);
            same_batch(&a, &b, r);
            ingest_batch_free(&a);
            ingest_batch_free(&b);
        }
        for (unsigned k = 0; k < np; k++)
            free(own[k].p);
        free(v1.p);
        free(v2.p);
    }
    /* the draw reached what it is for */
    assert_true(flows > 6000 && nfs > 1000 && owners > 1000);
    cfg_free(pg);
    cfg_free(ch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_versions_agree)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
