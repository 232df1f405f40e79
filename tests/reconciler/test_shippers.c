/* Log shippers' bytes through the real `wanledger reconcile` and PostgreSQL: every fixture in
 * tests/reconciler/fixtures/shippers (Fluent Bit's json, json_lines, json_stream and msgpack
 * formats in each json_date_format, Vector's JSON array, NDJSON and text codecs, compressed as
 * configured, the mixed batch) is posted with the headers that client sends, and the stored
 * transfers are compared with the fixture's rows (every field, exact integers), the quarantined
 * records with its rejects; each is posted again and must be all duplicates with nothing new in
 * the quarantine. The fixture format is described in fixtures/shippers/README.md. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <inttypes.h>
#include <msgpack.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

static struct fx F;
static int64_t T0; /* epoch seconds, two hours ago */

struct fixture {
    char name[256];
    char headers[1024];
    char compress[16];
    char ids[32];
    int msgpack, strip_nl, status;
    char expect[128];
    char rows[4096];
    char rejects[8][512];
    int n_rejects;
    char *body;
    size_t body_len;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    s[n] = 0;
    *len = (size_t)n;
    return s;
}

static void fmt_utc(int64_t secs, const char *fmt, char *out, size_t cap)
{
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, fmt, &tm);
}

/* The text with every @…@ placeholder replaced (fixtures/shippers/README.md). */
static char *expand(const char *in)
{
    size_t cap = strlen(in) * 2 + 256, n = 0;
    char *out = malloc(cap);
    int64_t t1 = T0 + 10;
    for (const char *p = in; *p;) {
        char val[64] = "";
        const char *end = NULL;
        if (*p == '@')
            end = strchr(p + 1, '@');
        if (end && end - p >= 24)
            end = NULL;
        if (end) {
            char name[24];
            snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
            long long add = 0;
            char *plus = strchr(name, '+');
            if (plus) {
                add = atoll(plus + 1);
                *plus = 0;
            }
            if (strcmp(name, "T0") == 0)
                snprintf(val, sizeof(val), "%" PRId64, T0);
            else if (strcmp(name, "T1") == 0)
                snprintf(val, sizeof(val), "%" PRId64, t1);
            else if (strcmp(name, "T1MS") == 0)
                snprintf(val, sizeof(val), "%" PRId64, t1 * 1000 + 123);
            else if (strcmp(name, "T1ISO") == 0)
                fmt_utc(t1, "%Y-%m-%dT%H:%M:%S", val, sizeof(val));
            else if (strcmp(name, "T1SQL") == 0)
                fmt_utc(t1, "%Y-%m-%d %H:%M:%S", val, sizeof(val));
            else if (strcmp(name, "T0US") == 0)
                snprintf(val, sizeof(val), "%lld", (long long)T0 * 1000000 + add);
            else if (strcmp(name, "T1US") == 0)
                snprintf(val, sizeof(val), "%lld", (long long)t1 * 1000000 + add);
            else
                end = NULL;
        }
        if (end) {
            size_t vl = strlen(val);
            memcpy(out + n, val, vl);
            n += vl;
            p = end + 1;
        } else {
            out[n++] = *p++;
        }
        assert_true(n + 64 < cap);
    }
    out[n] = 0;
    return out;
}

static void pack_json(msgpack_packer *pk, const cJSON *v)
{
    if (cJSON_IsObject(v)) {
        msgpack_pack_map(pk, (size_t)cJSON_GetArraySize(v));
        for (const cJSON *c = v->child; c; c = c->next) {
            msgpack_pack_str(pk, strlen(c->string));
            msgpack_pack_str_body(pk, c->string, strlen(c->string));
            pack_json(pk, c);
        }
    } else if (cJSON_IsString(v)) {
        msgpack_pack_str(pk, strlen(v->valuestring));
        msgpack_pack_str_body(pk, v->valuestring, strlen(v->valuestring));
    } else if (cJSON_IsNumber(v)) {
        /* the fixtures' integers are below 2^53: exact in cJSON's double */
        double d = v->valuedouble;
        if (d == (double)(uint64_t)d)
            msgpack_pack_uint64(pk, (uint64_t)d);
        else
            msgpack_pack_double(pk, d);
    } else if (cJSON_IsNull(v)) {
        msgpack_pack_nil(pk);
    } else {
        fail_msg("unsupported value in a msgpack fixture");
    }
}

/* Body lines "SECONDS.NANOSECONDS {record}" -> Fluent Bit events [[EventTime, {}], record]. */
static char *to_msgpack(const char *text, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    char *copy = strdup(text), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long sec = 0, ns = 0;
        int off = 0;
        assert_int_equal(sscanf(line, "%llu.%llu %n", &sec, &ns, &off), 2);
        cJSON *rec = cJSON_Parse(line + off);
        assert_non_null(rec);
        unsigned char et[8];
        for (int i = 0; i < 4; i++) {
            et[i] = (unsigned char)(sec >> (24 - 8 * i));
            et[4 + i] = (unsigned char)(ns >> (24 - 8 * i));
        }
        msgpack_pack_array(&pk, 2);
        msgpack_pack_array(&pk, 2);
        msgpack_pack_ext(&pk, 8, 0);
        msgpack_pack_ext_body(&pk, et, 8);
        msgpack_pack_map(&pk, 0);
        pack_json(&pk, rec);
        cJSON_Delete(rec);
    }
    free(copy);
    char *out = malloc(sb.size);
    memcpy(out, sb.data, sb.size);
    *len = sb.size;
    msgpack_sbuffer_destroy(&sb);
    return out;
}

static char *compress_with(const char *tool, const char *in, size_t len, size_t *out_len)
{
    char *src = fx_fmt("%s/shipper-in", F.dir), *dst = fx_fmt("%s/shipper-out", F.dir);
    FILE *f = fopen(src, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(in, 1, len, f), len);
    fclose(f);
    assert_int_equal(
        th_sh("%s -c %s > %s", strcmp(tool, "zstd") == 0 ? "zstd -q" : "gzip", src, dst), 0);
    char *out = slurp(dst, out_len);
    free(src);
    free(dst);
    return out;
}

static void load(const char *dir, const char *file, struct fixture *fx)
{
    memset(fx, 0, sizeof(*fx));
    th_strfmt(fx->name, sizeof(fx->name), "%s", file);
    char *path = fx_fmt("%s/%s", dir, file);
    size_t len;
    char *raw = slurp(path, &len);
    free(path);
    char *text = expand(raw);
    free(raw);
    char *body = strstr(text, "\nbody:\n");
    assert_non_null(body);
    *body = 0;
    body += 7;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#')
            continue;
        if (strncmp(l, "header: ", 8) == 0)
            snprintf(fx->headers + strlen(fx->headers), sizeof(fx->headers) - strlen(fx->headers),
                     "%s\r\n", l + 8);
        else if (strncmp(l, "compress: ", 10) == 0)
            snprintf(fx->compress, sizeof(fx->compress), "%s", l + 10);
        else if (strncmp(l, "ids: ", 5) == 0)
            snprintf(fx->ids, sizeof(fx->ids), "%s", l + 5);
        else if (strcmp(l, "msgpack: yes") == 0)
            fx->msgpack = 1;
        else if (strcmp(l, "strip-final-newline: yes") == 0)
            fx->strip_nl = 1;
        else if (strncmp(l, "status: ", 8) == 0)
            fx->status = atoi(l + 8);
        else if (strncmp(l, "expect: ", 8) == 0)
            snprintf(fx->expect, sizeof(fx->expect), "%s", l + 8);
        else if (strncmp(l, "row: ", 5) == 0)
            snprintf(fx->rows + strlen(fx->rows), sizeof(fx->rows) - strlen(fx->rows), "%s%s",
                     fx->rows[0] ? "\n" : "", l + 5);
        else if (strncmp(l, "reject: ", 8) == 0 && fx->n_rejects < 8)
            snprintf(fx->rejects[fx->n_rejects++], sizeof(fx->rejects[0]), "%s", l + 8);
        else
            fail_msg("%s: unknown directive \"%s\"", file, l);
    }
    size_t bl = strlen(body);
    if (fx->strip_nl && bl && body[bl - 1] == '\n')
        body[--bl] = 0;
    if (fx->msgpack) {
        fx->body = to_msgpack(body, &fx->body_len);
    } else {
        fx->body = malloc(bl + 1);
        memcpy(fx->body, body, bl + 1);
        fx->body_len = bl;
    }
    if (fx->compress[0]) {
        size_t zl;
        char *z = compress_with(fx->compress, fx->body, fx->body_len, &zl);
        fprintf(stderr, "%s: %s %zu -> %zu bytes\n", file, fx->compress, fx->body_len, zl);
        free(fx->body);
        fx->body = z;
        fx->body_len = zl;
        snprintf(fx->headers + strlen(fx->headers), sizeof(fx->headers) - strlen(fx->headers),
                 "Content-Encoding: %s\r\n", fx->compress);
    }
    free(text);
}

/* "received=3 stored=2 duplicate=0 rejected=1" -> the JSON members the answer must hold. */
static void check_answer(const char *resp, const char *expect)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", expect);
    char *save = NULL;
    for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        assert_non_null(eq);
        *eq = 0;
        char *want = fx_fmt("\"%s\":%s,", kv, eq + 1);
        char *want_end = fx_fmt("\"%s\":%s}", kv, eq + 1);
        if (!strstr(resp, want) && !strstr(resp, want_end))
            fail_msg("answer %s lacks %s", resp, want);
        free(want);
        free(want_end);
    }
}

static const char *ROWS_SQL =
    "SELECT coalesce(string_agg(service || '|' || id || '|' || coalesce(requester, '') || '|' ||"
    " coalesce(workflow, '') || '|' || src || '|' || dst || '|' || bytes || '|' ||"
    " (extract(epoch FROM start_at) * 1000000)::bigint || '|' ||"
    " (extract(epoch FROM end_at) * 1000000)::bigint, E'\\n' ORDER BY id), '') FROM transfers"
    " WHERE id LIKE '%s%%'";

static void run_fixture(const struct fixture *fx)
{
    long long q0 = fx_num(&F, "SELECT count(*) FROM rejected_records");
    for (int pass = 0; pass < 2; pass++) {
        char *resp = NULL;
        int st = fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, fx->headers, fx->body,
                         fx->body_len, &resp);
        fprintf(stderr, "%s (%zu bytes%s) pass %d -> %d %s", fx->name, fx->body_len,
                fx->msgpack ? ", msgpack" : "", pass, st, resp ? resp : "\n");
        assert_int_equal(st, fx->status);
        if (fx->expect[0]) {
            if (pass == 0) {
                check_answer(resp, fx->expect);
            } else {
                /* the resend: every valid record a duplicate, the same rejects */
                int rec = 0, stored = 0, dup = 0, rej = 0;
                assert_int_equal(sscanf(fx->expect,
                                        "received=%d stored=%d duplicate=%d rejected=%d", &rec,
                                        &stored, &dup, &rej),
                                 4);
                char *again =
                    fx_fmt("received=%d stored=0 duplicate=%d rejected=%d", rec, stored + dup, rej);
                check_answer(resp, again);
                free(again);
            }
        }
        free(resp);
        char *q = fx_fmt(ROWS_SQL, fx->ids);
        const char *got = fx_row(&F, q);
        if (strcmp(got, fx->rows) != 0)
            fail_msg("%s: stored rows\n%s\nexpected\n%s", fx->name, got, fx->rows);
        free(q);
        long long q1 = fx_num(&F, "SELECT count(*) FROM rejected_records");
        assert_int_equal(q1 - q0, fx->n_rejects);
    }
    for (int i = 0; i < fx->n_rejects; i++) {
        int idx;
        char path[128], text[256];
        assert_int_equal(sscanf(fx->rejects[i], "%d|%127[^|]|%255[^\n]", &idx, path, text), 3);
        char *q = fx_fmt("SELECT count(*) FROM rejected_records WHERE endpoint = 'transfers' AND "
                         "record_index = %d AND path = '%s' AND position('%s' IN error) > 0 AND "
                         "raw LIKE '%%\"%s%%' AND peer = '127.0.0.1'",
                         idx, path, text, fx->ids);
        if (fx_num(&F, q) != 1)
            fail_msg("%s: no quarantined record %s; have %s", fx->name, fx->rejects[i],
                     fx_row(&F, "SELECT string_agg(record_index || '|' || path || '|' || error || "
                                "'|' || peer, ';') FROM rejected_records"));
        free(q);
    }
}

static void test_fixtures(void **state)
{
    (void)state;
    char *dir = fx_fmt("%s/tests/reconciler/fixtures/shippers", getenv("WL_SOURCE_DIR"));
    DIR *d = opendir(dir);
    assert_non_null(d);
    char names[64][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;)
        if (strstr(e->d_name, ".txt"))
            snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
    closedir(d);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        struct fixture fx;
        load(dir, names[i], &fx);
        run_fixture(&fx);
        free(fx.body);
    }
    /* the mixed batch's quarantined record: its raw text is the record as sent */
    char *want = fx_fmt("{\"date\":%" PRId64 ".0,\"service\":\"dupedog\",\"id\":\"fmx-2\","
                        "\"requester\":\"jo\",\"src\":\"nyc\",\"dst\":\"chi\",\"bytes\":-5,"
                        "\"start\":%" PRId64 "}",
                        T0 + 10, T0);
    assert_string_equal(fx_row(&F, "SELECT raw FROM rejected_records WHERE raw LIKE '%fmx-2%'"),
                        want);
    free(want);
    free(dir);
}

/* What cannot be read keeps its 4xx, and says why. */
static void test_refusals(void **state)
{
    (void)state;
    char *resp = NULL;
    /* a text body that is not JSON lines (Vector's text codec on a plain log) */
    const char *plain = "transfer x-1 from nyc to chi 100 bytes\n";
    assert_int_equal(fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE,
                             "Content-Type: text/plain\r\n", plain, strlen(plain), &resp),
                     400);
    assert_non_null(strstr(resp, "\"path\":\"$[0]\""));
    free(resp);
    /* msgpack that is not Fluent Bit events, and msgpack on another endpoint */
    const char junk[] = {(char)0x93, 1, 2, 3};
    assert_int_equal(fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE,
                             "Content-Type: application/msgpack\r\n", junk, sizeof(junk), &resp),
                     400);
    assert_non_null(strstr(resp, "msgpack event 0"));
    free(resp);
    assert_int_equal(fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER,
                             "Content-Type: application/msgpack\r\n", junk, sizeof(junk), &resp),
                     415);
    assert_non_null(strstr(resp, "msgpack is accepted on /v1/transfers only"));
    free(resp);
    /* a record whose "log" line is broken JSON is quarantined, the batch stored */
    char *b = fx_fmt("{\"date\":%" PRId64 ",\"log\":\"{\\\"service\\\":\\\"dupedog\\\",\"}\n"
                     "{\"service\":\"dupedog\",\"id\":\"rf-1\",\"src\":\"nyc\",\"dst\":\"chi\","
                     "\"bytes\":1,\"start\":%" PRId64 ",\"end\":%" PRId64 "}\n",
                     T0, T0, T0 + 1);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, b, strlen(b), &resp), 200);
    assert_non_null(strstr(resp, "\"rejected\":1"));
    assert_non_null(strstr(resp, "\"path\":\"$[0].log\""));
    free(resp);
    free(b);
    /* the quarantine cannot be written (its table renamed away): the batch is answered 503 with
     * Retry-After, so the shipper resends it; the resend, once it can, quarantines the bad record
     * and counts the good one a duplicate (it was committed before) */
    PGresult *r = PQexec(F.db, "ALTER TABLE rejected_records RENAME TO rejected_records_away");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    b = fx_fmt("{\"service\":\"dupedog\",\"id\":\"ra-1\",\"src\":\"nyc\",\"dst\":\"chi\","
               "\"bytes\":1,\"start\":%" PRId64 ",\"end\":%" PRId64 "}\n"
               "{\"service\":\"dupedog\",\"id\":\"ra-2\",\"src\":\"mars\",\"dst\":\"chi\","
               "\"bytes\":1,\"start\":%" PRId64 ",\"end\":%" PRId64 "}\n",
               T0, T0 + 1, T0, T0 + 1);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, b, strlen(b), &resp), 503);
    fprintf(stderr, "%s\n%s", fx_last_headers(), resp);
    assert_non_null(strstr(fx_last_headers(), "\r\nRetry-After: 5"));
    free(resp);
    r = PQexec(F.db, "ALTER TABLE rejected_records_away RENAME TO rejected_records");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, b, strlen(b), &resp), 200);
    assert_non_null(strstr(resp, "\"received\":2,\"stored\":0,\"duplicate\":1,\"rejected\":1"));
    free(resp);
    free(b);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM transfers WHERE id LIKE 'ra-%'"), 1);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM rejected_records WHERE raw LIKE '%ra-2%'"),
                     1);
    /* the quarantine is visible in /metrics (the mixed batch's record counted at each of its two
     * posts, kept once; the broken log line; ra-2 counted once: the 503 counted nothing) */
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &resp), 200);
    assert_non_null(
        strstr(resp, "wanledger_ingest_rows_rejected_total{endpoint=\"transfers\"} 4\n"));
    assert_non_null(strstr(resp, "wanledger_rejected_records 3\n"));
    /* and the whole exposition passes Prometheus' linter */
    th_require(system("command -v promtool >/dev/null") == 0,
               "promtool is needed (package prometheus, scripts/install-deps.sh)");
    FILE *pr = popen("promtool check metrics", "w");
    assert_non_null(pr);
    fputs(resp, pr);
    assert_int_equal(pclose(pr), 0);
    free(resp);
    /* `wanledger rejects` and /rejects list both, with reason, path and record */
    char *out = NULL;
    assert_int_equal(fx_run(&F, "rejects --full", &out), 0);
    fprintf(stderr, "%s", out);
    assert_non_null(strstr(out, "$[1].bytes expected a non-negative integer, got a negative"));
    assert_non_null(strstr(out, "\"id\":\"fmx-2\""));
    assert_non_null(strstr(out, "$[0].log the JSON line in \"log\" does not parse"));
    assert_non_null(strstr(out, "3 of 3 rejected records"));
    free(out);
    assert_int_equal(fx_http(&F, "GET", "/rejects", FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "<td><code>$[1].bytes</code></td>"));
    assert_non_null(strstr(resp, "&quot;id&quot;:&quot;fmx-2&quot;"));
    free(resp);
    assert_int_equal(fx_http(&F, "GET", "/rejects", FX_TOKEN_AGENT, NULL, NULL, 0, NULL), 403);
}

int main(void)
{
    th_require(system("command -v gzip >/dev/null && command -v zstd >/dev/null") == 0,
               "gzip and zstd are needed (scripts/install-deps.sh)");
    T0 = tm_now_us() / TM_USEC_PER_SEC - 7200;
    fx_setup(&F, "recon-shippers", " \"tick_seconds\": 3600,");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fixtures),
                                       cmocka_unit_test(test_refusals)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
