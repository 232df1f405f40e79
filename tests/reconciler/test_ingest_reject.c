/* Bad requests to the real `wanledger reconcile`: each kind is answered with the right 4xx, a
 * JSON {"error","path"} naming where, and NOTHING written (every raw table and window_state are
 * counted before and after each request). The cases are data, one per file in
 * tests/reconciler/ingest_reject/ (format in its README.md), read by this one driver. Then the
 * good requests (the bodies of the first token cases, with the right token) prove that the
 * counting would have seen a write. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#ifndef REJECT_DIR
#error REJECT_DIR must name tests/reconciler/ingest_reject
#endif

static struct fx F;

static const char *const COUNTS =
    "SELECT (SELECT count(*) FROM flow_reports) || ',' || (SELECT count(*) FROM flow_records)"
    " || ',' || (SELECT count(*) FROM counter_samples) || ',' || (SELECT count(*) FROM transfers)"
    " || ',' || (SELECT count(*) FROM window_state)";

/* One case: "# NAME", then "# key: value" lines (request, token, header, status, error-at), then
 * the body (the rest of the file, its last newline dropped; none for a GET). Placeholders are
 * fx_expand's, times from base_us. */
struct bad {
    char name[256], method[16], path[256], token[128], headers[512], json_path[256];
    char *body; /* NULL: no body */
    int status;
};

static void read_case(const char *file, int64_t base_us, struct bad *c)
{
    memset(c, 0, sizeof(*c));
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    char line[1024];
    long body_at = 0;
    bool have_name = false;
    while (fgets(line, sizeof line, f) && line[0] == '#') {
        line[strcspn(line, "\n")] = '\0';
        body_at = ftell(f);
        if (strncmp(line, "##", 2) == 0) /* a comment */
            continue;
        if (!have_name) {
            th_strfmt(c->name, sizeof c->name, "%s", line + 2);
            have_name = true;
            continue;
        }
        char *v = strstr(line, ": ");
        if (!v)
            fail_msg("%s: \"%s\" is not \"# key: value\"", file, line);
        *v = '\0';
        v += 2;
        char *x = fx_expand(v, base_us);
        const char *k = line + 2;
        if (strcmp(k, "request") == 0) {
            if (sscanf(x, "%15s %255s", c->method, c->path) != 2)
                fail_msg("%s: request is \"METHOD PATH\"", file);
        } else if (strcmp(k, "token") == 0)
            snprintf(c->token, sizeof c->token, "%s", x);
        else if (strcmp(k, "header") == 0) {
            size_t hl = strlen(c->headers);
            snprintf(c->headers + hl, sizeof c->headers - hl, "%s\r\n", x);
        } else if (strcmp(k, "status") == 0)
            c->status = atoi(x);
        else if (strcmp(k, "error-at") == 0)
            snprintf(c->json_path, sizeof c->json_path, "%s", x);
        else
            fail_msg("%s: unknown key \"%s\"", file, k);
        free(x);
    }
    if (!c->name[0] || !c->method[0] || !c->status)
        fail_msg("%s: needs \"# NAME\", \"# request: \" and \"# status: \"", file);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    char *raw = calloc(1, (size_t)(end - body_at) + 1);
    assert_non_null(raw);
    fseek(f, body_at, SEEK_SET);
    assert_int_equal(fread(raw, 1, (size_t)(end - body_at), f), (size_t)(end - body_at));
    fclose(f);
    size_t rl = strlen(raw);
    if (rl && raw[rl - 1] == '\n')
        raw[rl - 1] = '\0';
    if (strcmp(c->method, "GET") != 0)
        c->body = fx_expand(raw, base_us);
    free(raw);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The case files of REJECT_DIR in name order (n of them). */
static size_t list_cases(char **files, size_t max)
{
    DIR *d = opendir(REJECT_DIR);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".case") == 0)
            files[n++] = fx_fmt("%s/%s", REJECT_DIR, e->d_name);
    }
    closedir(d);
    qsort(files, n, sizeof files[0], cmp_names);
    return n;
}

/* The body of the case file whose name starts with prefix (malloc'd). */
static char *case_body(char **files, size_t n, const char *prefix, int64_t base_us)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(strrchr(files[i], '/') + 1, prefix, strlen(prefix)) == 0) {
            struct bad c;
            read_case(files[i], base_us, &c);
            return c.body;
        }
    fail_msg("no case %s in %s", prefix, REJECT_DIR);
    return NULL;
}

static void test_rejects(void **state)
{
    (void)state;
    int64_t w = fx_window_ago(3, 60);
    char *files[256];
    size_t n = list_cases(files, 256);
    assert_true(n >= 50);
    char before[256];
    snprintf(before, sizeof(before), "%s", fx_row(&F, COUNTS));
    assert_string_equal(before, "0,0,0,0,0");
    for (size_t i = 0; i < n; i++) {
        struct bad c;
        read_case(files[i], w, &c);
        char *resp = NULL;
        int st =
            fx_http(&F, c.method, c.path, c.token[0] ? c.token : NULL,
                    c.headers[0] ? c.headers : NULL, c.body, c.body ? strlen(c.body) : 0, &resp);
        fprintf(stderr, "case %s %-40s -> %d %s", strrchr(files[i], '/') + 1, c.name, st,
                resp ? resp : "\n");
        assert_int_equal(st, c.status);
        if (c.json_path[0]) {
            char want[300];
            snprintf(want, sizeof(want), "\"path\":\"%s\"", c.json_path);
            assert_non_null(strstr(resp, "\"error\":\""));
            assert_non_null(strstr(resp, want));
        }
        assert_string_equal(fx_row(&F, COUNTS), before);
        free(resp);
        free(c.body);
    }

    /* the same counts do move for good requests: the bodies refused for their token alone */
    char *good_r = case_body(files, n, "01-", w);
    char *good_c = case_body(files, n, "04-", w);
    char *good_t = case_body(files, n, "05-", w);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, good_r, strlen(good_r), NULL),
        200);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, good_c, strlen(good_c), NULL),
        200);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/transfers", FX_TOKEN_SERVICE, NULL, good_t, strlen(good_t), NULL),
        200);
    /* 1 report with 2 flows, 1 sample, 1 transfer. Windows marked dirty: the report's (w); the
     * sample at w+7 s has no stored neighbour, so no interval ends or starts at it: only its own
     * window w; the 10 s transfer an hour earlier one more. {w, w - 1 h} = 2 rows. */
    assert_string_equal(fx_row(&F, COUNTS), "1,2,1,1,2");
    assert_true(fx_num(&F, "SELECT count(*) FROM window_state WHERE dirty") >= 1);
    /* a second sample of the interface at w+127 s closes the interval (w+7, w+127]: it touches
     * windows w, w+60 and w+120 -> two new rows (w+60, w+120), nothing beyond */
    char *next_c =
        fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":[{\"device\":\"nyc-border-1\","
               "\"interface\":\"et-0/0/1\",\"at\":\"%s\",\"in_octets\":1000,"
               "\"out_octets\":2000}]}",
               fx_ts(w + 127 * TM_USEC_PER_SEC));
    assert_int_equal(
        fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, next_c, strlen(next_c), NULL),
        200);
    assert_string_equal(fx_row(&F, COUNTS), "1,2,2,1,4");
    char *marked = fx_fmt("SELECT count(*) FROM window_state WHERE window_start IN ('%s', '%s')",
                          fx_ts(w + 60 * TM_USEC_PER_SEC), fx_ts(w + 120 * TM_USEC_PER_SEC));
    assert_int_equal(fx_num(&F, marked), 2);
    free(marked);
    free(next_c);
    free(good_r);
    free(good_c);
    free(good_t);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
}

int main(void)
{
    /* tick once an hour: the reconcile loop must not touch window_state during the test */
    fx_setup(&F, "recon-reject",
             " \"tick_seconds\": 3600, \"limits\": {\"max_body_bytes\": 4096},");
    fx_start(&F);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rejects)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
