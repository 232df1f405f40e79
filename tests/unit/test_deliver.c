/* common/deliver.c against a real HTTP server (tests/e2e's wl-http-sink), with bodies whose sizes
 * the test chooses, so every expected count is known before the code runs:
 * - a 4096-byte spool bound and ten 1000-byte bodies while nobody listens: 4 kept, 6 dropped
 *   (6000 bytes); the first delivered body carries "spool_dropped": {"entries": 6, "bytes": 6000}
 *   and the others nothing; the 4 arrive in order;
 * - a body the server refuses with 400 is kept in SPOOL/rejected/ and the next one is sent;
 * - a spool that cannot be opened: bodies go directly from memory, in order;
 * - 404: bodies are held in order and all arrive once the server accepts. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "deliver.h"
#include "harness.h"

struct sink {
    char out[600], status[600];
    int port;
    pid_t pid;
};

static void sink_start(struct sink *s, const char *dir, int port, const char *reject)
{
    snprintf(s->out, sizeof(s->out), "%s/received.ndjson", dir);
    snprintf(s->status, sizeof(s->status), "%s/status", dir);
    s->port = port;
    char pa[64];
    snprintf(pa, sizeof(pa), "127.0.0.1:%d", port);
    char *argv[] = {WL_HTTP_SINK,    "--listen", pa,          "--out", s->out,
                    "--status-file", s->status,  "--seconds", "60",    reject ? "--reject" : NULL,
                    (char *)reject,  NULL};
    s->pid = th_spawn(argv, NULL);
    assert_true(s->pid > 0);
    assert_int_equal(th_wait_port(port, 5000), 0);
}

/* Accepted bodies in arrival order (caller frees each and the array). */
static int sink_bodies(const struct sink *s, char ***out)
{
    FILE *f = fopen(s->out, "r");
    int n = 0;
    *out = NULL;
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *r = cJSON_Parse(line);
        if (cJSON_GetObjectItem(r, "status")->valueint == 200) {
            *out = realloc(*out, (size_t)(n + 1) * sizeof(**out));
            (*out)[n++] = strdup(cJSON_GetObjectItem(r, "body")->valuestring);
        }
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    return n;
}

static void free_bodies(char **b, int n)
{
    for (int i = 0; i < n; i++)
        free(b[i]);
    free(b);
}

static int wait_bodies(const struct sink *s, int n, int timeout_ms)
{
    for (int w = 0; w <= timeout_ms; w += 50) {
        char **b;
        int got = sink_bodies(s, &b);
        free_bodies(b, got);
        if (got >= n)
            return got;
        usleep(50000);
    }
    return -1;
}

static struct deliver *open_deliver(const char *spool, int port, uint64_t bound)
{
    char url[128], err[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/counters", port);
    struct deliver_opts o = {
        .target = {.name = "test",
                   .url = url,
                   .compress = WL_COMPRESS_NONE,
                   .backoff_min_ms = 50,
                   .backoff_max_ms = 200},
        .spool_dir = spool,
        .spool_max_bytes = bound,
        .report_drops = true,
    };
    struct deliver *d = deliver_new(&o, err, sizeof(err));
    if (!d)
        fail_msg("deliver_new: %s", err);
    return d;
}

/* {"n":I,"pad":"xx..."} of exactly len bytes. */
static char *body_of(int i, size_t len)
{
    char *b = malloc(len + 1);
    int h = snprintf(b, len + 1, "{\"n\":%d,\"pad\":\"", i);
    memset(b + h, 'x', len - (size_t)h - 2);
    memcpy(b + len - 2, "\"}", 3);
    return b;
}

static int body_n(const char *body)
{
    cJSON *j = cJSON_Parse(body);
    assert_non_null(j);
    int n = cJSON_GetObjectItem(j, "n")->valueint;
    cJSON_Delete(j);
    return n;
}

static void test_bound_drops_reported_exactly(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("deliver-drops");
    char spool[600];
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    int port = th_free_port();
    struct deliver *d = open_deliver(spool, port, 4096);
    for (int i = 0; i < 10; i++) {
        char *b = body_of(i, 1000);
        assert_int_equal(deliver_submit(d, b, 1000), 0);
        free(b);
    }
    struct deliver_stats st;
    for (int w = 0; w < 100; w++) {
        deliver_get_stats(d, &st);
        if (st.spool_entries + st.dropped_entries == 10 && st.mem_entries == 0)
            break;
        usleep(50000);
    }
    assert_int_equal(st.spool_entries, 4);
    assert_int_equal(st.dropped_entries, 6);
    assert_int_equal(st.dropped_bytes, 6000);
    struct sink s;
    sink_start(&s, dir, port, NULL);
    assert_int_equal(wait_bodies(&s, 4, 10000), 4);
    deliver_close(d, 1000);
    th_stop(s.pid, 2000);
    char **b;
    int n = sink_bodies(&s, &b);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(body_n(b[i]), 6 + i);
        cJSON *j = cJSON_Parse(b[i]);
        const cJSON *sd = cJSON_GetObjectItem(j, "spool_dropped");
        if (i == 0) {
            assert_non_null(sd);
            assert_int_equal(cJSON_GetObjectItem(sd, "entries")->valueint, 6);
            assert_int_equal(cJSON_GetObjectItem(sd, "bytes")->valueint, 6000);
        } else {
            assert_null(sd);
        }
        cJSON_Delete(j);
    }
    free_bodies(b, n);
}

static void test_rejected_kept_next_sent(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("deliver-reject");
    char spool[600], rej[700];
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(rej, sizeof(rej), "%s/rejected", spool);
    int port = th_free_port();
    struct sink s;
    sink_start(&s, dir, port, "poison");
    struct deliver *d = open_deliver(spool, port, 1 << 20);
    const char *bodies[] = {"{\"n\":1}", "{\"n\":2,\"x\":\"poison\"}", "{\"n\":3}"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(deliver_submit(d, bodies[i], strlen(bodies[i])), 0);
    assert_int_equal(wait_bodies(&s, 2, 10000), 2);
    struct deliver_stats st;
    deliver_get_stats(d, &st);
    deliver_close(d, 1000);
    th_stop(s.pid, 2000);
    assert_int_equal(st.rejected, 1);
    char **b;
    int n = sink_bodies(&s, &b);
    assert_int_equal(n, 2);
    assert_int_equal(body_n(b[0]), 1);
    assert_int_equal(body_n(b[1]), 3);
    free_bodies(b, n);
    DIR *dd = opendir(rej);
    assert_non_null(dd);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.')
            continue;
        files++;
        char p[1000];
        snprintf(p, sizeof(p), "%s/%s", rej, de->d_name);
        FILE *f = fopen(p, "r");
        char text[128] = "";
        assert_non_null(fgets(text, sizeof(text), f));
        fclose(f);
        assert_string_equal(text, bodies[1]);
    }
    closedir(dd);
    assert_int_equal(files, 1);
}

static void test_unopenable_spool_direct(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("deliver-direct");
    char file[600], spool[700];
    snprintf(file, sizeof(file), "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(spool, sizeof(spool), "%s/spool", file); /* under a regular file: ENOTDIR */
    int port = th_free_port();
    struct sink s;
    sink_start(&s, dir, port, NULL);
    struct deliver *d = open_deliver(spool, port, 1 << 20);
    for (int i = 1; i <= 5; i++) {
        char b[32];
        int l = snprintf(b, sizeof(b), "{\"n\":%d}", i);
        assert_int_equal(deliver_submit(d, b, (size_t)l), 0);
    }
    assert_int_equal(wait_bodies(&s, 5, 10000), 5);
    struct deliver_stats st;
    deliver_get_stats(d, &st);
    deliver_close(d, 1000);
    th_stop(s.pid, 2000);
    assert_false(st.spool_ok);
    assert_int_equal(st.direct_sends, 5);
    char **b;
    int n = sink_bodies(&s, &b);
    for (int i = 0; i < n; i++)
        assert_int_equal(body_n(b[i]), i + 1);
    assert_int_equal(n, 5);
    free_bodies(b, n);
}

static void test_404_held_in_order(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("deliver-held");
    char spool[600];
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    int port = th_free_port();
    struct sink s;
    sink_start(&s, dir, port, NULL);
    FILE *f = fopen(s.status, "w");
    fprintf(f, "404\n");
    fclose(f);
    struct deliver *d = open_deliver(spool, port, 1 << 20);
    for (int i = 1; i <= 3; i++) {
        char b[32];
        int l = snprintf(b, sizeof(b), "{\"n\":%d}", i);
        assert_int_equal(deliver_submit(d, b, (size_t)l), 0);
    }
    struct deliver_stats st;
    for (int w = 0; w < 100; w++) {
        deliver_get_stats(d, &st);
        if (st.c.sends[DELIVER_HOLD] >= 3)
            break;
        usleep(50000);
    }
    assert_true(st.c.sends[DELIVER_HOLD] >= 3);
    assert_int_equal(st.spool_entries, 3); /* kept, nothing dropped */
    assert_int_equal(st.dropped_entries, 0);
    unlink(s.status);
    assert_int_equal(wait_bodies(&s, 3, 10000), 3);
    deliver_close(d, 1000);
    th_stop(s.pid, 2000);
    char **b;
    int n = sink_bodies(&s, &b);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++)
        assert_int_equal(body_n(b[i]), i + 1);
    free_bodies(b, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_drops_reported_exactly),
        cmocka_unit_test(test_rejected_kept_next_sent),
        cmocka_unit_test(test_unopenable_spool_direct),
        cmocka_unit_test(test_404_held_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
