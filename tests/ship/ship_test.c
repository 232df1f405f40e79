/* `wanledger ship` against a real HTTP receiver (wl-http-sink): what reaches /v1/transfers, with
 * which token, in how many posts; that a restart resends nothing and loses nothing; that failed
 * posts are retried and never skipped; that partial lines wait, rotated and truncated logs are
 * followed. Expected record ids are written by the test itself, so every figure below is known
 * before the program runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "th_tls.h"

#define SERVICE_TOKEN "service-token-ship-test-0001"

static char dir[512];
static char cfg_path[600], sink_out[600], status_file[600];
static int sink_port;
static pid_t sink_pid;

static void write_file(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0600); /* the tokens file is a secret */
}

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* Runs `wanledger --config CFG ship ARGS` and returns its exit code. */
static int ship(const char *args)
{
    return th_sh("cd '%s' && '%s' --config '%s' ship %s >>'%s/ship.log' 2>&1", dir,
                 th_bin("wanledger"), cfg_path, args, dir);
}

struct received {
    int posts_ok, posts_failed;
    int n_ids;
    char ids[256][32];
    int bad_auth, bad_path;
};

/* Reads what the sink recorded: accepted posts and the ids of the records in them. */
static void read_sink(struct received *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(sink_out, "r");
    if (!f)
        return;
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        cJSON *req = cJSON_Parse(line);
        assert_non_null(req);
        int status = cJSON_GetObjectItem(req, "status")->valueint;
        if (strcmp(cJSON_GetObjectItem(req, "authorization")->valuestring,
                   "Bearer " SERVICE_TOKEN) != 0)
            r->bad_auth++;
        if (strcmp(cJSON_GetObjectItem(req, "path")->valuestring, "/v1/transfers") != 0)
            r->bad_path++;
        if (status != 200) {
            r->posts_failed++;
            cJSON_Delete(req);
            continue;
        }
        r->posts_ok++;
        char *body = cJSON_GetObjectItem(req, "body")->valuestring;
        for (char *save, *rec = strtok_r(body, "\n", &save); rec;
             rec = strtok_r(NULL, "\n", &save)) {
            cJSON *t = cJSON_Parse(rec);
            assert_non_null(t);
            assert_true(r->n_ids < 256);
            snprintf(r->ids[r->n_ids++], 32, "%s", cJSON_GetObjectItem(t, "id")->valuestring);
            cJSON_Delete(t);
        }
        cJSON_Delete(req);
    }
    fclose(f);
}

/* The ids received, in order, joined by commas. */
static const char *ids_joined(const struct received *r)
{
    static char buf[8192];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->n_ids; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "," : "", r->ids[i]);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", th_tmpdir("ship"));
    char tokens[600];
    path_in(tokens, sizeof tokens, "tokens.json");
    write_file(
        tokens, "w",
        "{\"service\": [\"" SERVICE_TOKEN "\"], \"agent\": [\"agent-token-ship-test-01\"],"
        " \"poller\": [\"poller-token-ship-test-1\"], \"reader\": [\"reader-token-ship-t-1\"]}");
    sink_port = th_free_port();
    path_in(cfg_path, sizeof cfg_path, "config.json");
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"database\": \"host=127.0.0.1 dbname=unused\", \"listen\": \"127.0.0.1:%d\",\n"
             " \"tokens_file\": \"tokens.json\",\n"
             " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
             "           {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]}\n",
             sink_port);
    write_file(cfg_path, "w", cfg);
    path_in(sink_out, sizeof sink_out, "received.ndjson");
    path_in(status_file, sizeof status_file, "fail-status");
    char port_arg[64];
    snprintf(port_arg, sizeof port_arg, "127.0.0.1:%d", sink_port);
    /* Records containing "poison" are refused with 400. */
    char *argv[] = {WL_HTTP_SINK, "--listen", port_arg, "--out",     sink_out, "--status-file",
                    status_file,  "--reject", "poison", "--seconds", "120",    NULL};
    char sink_log[600];
    path_in(sink_log, sizeof sink_log, "sink.log");
    sink_pid = th_spawn(argv, sink_log);
    assert_true(sink_pid > 0);
    assert_int_equal(th_wait_port(sink_port, 5000), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    th_stop(sink_pid, 2000);
    return 0;
}

/* Complete lines of two logs are shipped in batches; the half-written last line waits for its
 * newline; a second run ships only what is new; a third ships nothing. */
static void test_once_resume_partial(void **state)
{
    (void)state;
    assert_int_equal(truncate(sink_out, 0), 0);
    char a[600], b[600];
    path_in(a, sizeof a, "a.log");
    path_in(b, sizeof b, "b.log");
    write_file(a, "w",
               "{\"service\":\"dupedog\",\"id\":\"a1\",\"bytes\":100}\n"
               "{\"service\":\"dupedog\",\"id\":\"a2\",\"bytes\":200}\n"
               "\n"
               "{\"service\":\"dupedog\",\"id\":\"a3\",\"bytes\":300}\n"
               "{\"service\":\"dupedog\",\"id\":\"a4\",\"by");
    write_file(b, "w",
               "{\"service\":\"dupedog\",\"id\":\"b1\",\"bytes\":1}\n"
               "{\"service\":\"dupedog\",\"id\":\"b2\",\"bytes\":2}\n");
    assert_int_equal(ship("--once --batch 2 --state state1 a.log b.log"), 0);
    struct received r;
    read_sink(&r);
    /* a: 3 records in batches of 2 -> 2 posts; b: 2 records -> 1 post. */
    assert_string_equal(ids_joined(&r), "a1,a2,a3,b1,b2");
    assert_int_equal(r.posts_ok, 3);
    assert_int_equal(r.posts_failed, 0);
    assert_int_equal(r.bad_auth, 0);
    assert_int_equal(r.bad_path, 0);

    write_file(a, "a", "tes\":400}\n{\"service\":\"dupedog\",\"id\":\"a5\",\"bytes\":500}\n");
    assert_int_equal(ship("--once --batch 2 --state state1 a.log b.log"), 0);
    read_sink(&r);
    assert_string_equal(ids_joined(&r), "a1,a2,a3,b1,b2,a4,a5");
    assert_int_equal(r.posts_ok, 4);

    assert_int_equal(ship("--once --batch 2 --state state1 a.log b.log"), 0);
    read_sink(&r);
    assert_int_equal(r.n_ids, 7);
    assert_int_equal(r.posts_ok, 4);
}

/* While the reconciler answers 503, --once fails and nothing is marked shipped; once it answers
 * 200 again every record arrives exactly once. A line that is not JSON is skipped, not sent. */
static void test_failures_retry_never_skip(void **state)
{
    (void)state;
    assert_int_equal(truncate(sink_out, 0), 0);
    char c[600];
    path_in(c, sizeof c, "c.log");
    write_file(c, "w",
               "{\"service\":\"dupedog\",\"id\":\"c1\",\"bytes\":1}\n"
               "this is not json\n"
               "{\"service\":\"dupedog\",\"id\":\"c2\",\"bytes\":2}\n");
    write_file(status_file, "w", "503\n");
    assert_int_equal(ship("--once --state state2 c.log"), 1);
    assert_int_equal(ship("--once --state state2 c.log"), 1);
    struct received r;
    read_sink(&r);
    assert_int_equal(r.posts_failed, 2);
    assert_int_equal(r.posts_ok, 0);
    unlink(status_file);
    assert_int_equal(ship("--once --state state2 c.log"), 0);
    read_sink(&r);
    assert_string_equal(ids_joined(&r), "c1,c2");
    /* c1 line is 42 bytes with its newline: the bad line starts at byte 42. */
    assert_int_equal(th_sh("grep -q 'c.log.*byte 42: not a JSON object' '%s/ship.log'", dir), 0);
}

/* A record the reconciler refuses (400) is isolated: the batch is resent line by line, the good
 * records arrive, the refused one is skipped with an error, and the run succeeds. */
static void test_refused_record_isolated(void **state)
{
    (void)state;
    assert_int_equal(truncate(sink_out, 0), 0);
    char e[600];
    path_in(e, sizeof e, "e.log");
    write_file(e, "w",
               "{\"service\":\"dupedog\",\"id\":\"e1\",\"bytes\":1}\n"
               "{\"service\":\"dupedog\",\"id\":\"poison\",\"bytes\":-5}\n"
               "{\"service\":\"dupedog\",\"id\":\"e2\",\"bytes\":2}\n");
    assert_int_equal(ship("--once --state state4 e.log"), 0);
    struct received r;
    read_sink(&r);
    /* 1 batch refused, then e1 accepted, poison refused, e2 accepted. */
    assert_string_equal(ids_joined(&r), "e1,e2");
    assert_int_equal(r.posts_ok, 2);
    assert_int_equal(r.posts_failed, 2);
    assert_int_equal(
        th_sh("grep -q 'e.log.*refused a record, skipped: .*poison' '%s/ship.log'", dir), 0);
    assert_int_equal(ship("--once --state state4 e.log"), 0); /* nothing again */
    read_sink(&r);
    assert_int_equal(r.posts_ok + r.posts_failed, 4);
}

static int wait_ids(int n, int timeout_ms, struct received *r)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        read_sink(r);
        if (r->n_ids >= n)
            return 0;
        usleep(50000);
    }
    return -1;
}

/* Tailing: lines appended while ship runs arrive; a rotated log is read to its end and the new
 * file from its start; a truncated log is read again from its start; SIGTERM exits 0, and a
 * restart afterwards sends nothing again. */
static void test_tail_rotation_truncation(void **state)
{
    (void)state;
    assert_int_equal(truncate(sink_out, 0), 0);
    char d[600], d1[600], state_path[600];
    path_in(d, sizeof d, "d.log");
    path_in(d1, sizeof d1, "d.log.1");
    path_in(state_path, sizeof state_path, "state3");
    char *argv[] = {(char *)th_bin("wanledger"),
                    "--config",
                    cfg_path,
                    "ship",
                    "--interval-ms",
                    "50",
                    "--state",
                    state_path,
                    d,
                    NULL};
    char log[600];
    path_in(log, sizeof log, "ship-tail.log");
    pid_t pid = th_spawn(argv, log);
    assert_true(pid > 0);
    usleep(200000); /* the log does not exist yet: ship waits for it */
    write_file(d, "w", "{\"service\":\"dupedog\",\"id\":\"d1\",\"bytes\":1}\n");
    struct received r;
    assert_int_equal(wait_ids(1, 5000, &r), 0);
    write_file(d, "a", "{\"service\":\"dupedog\",\"id\":\"d2\",\"bytes\":2}\n");
    assert_int_equal(wait_ids(2, 5000, &r), 0);
    /* Rotation: a line lands in the old file after the rename, then the new file starts. */
    assert_int_equal(rename(d, d1), 0);
    write_file(d1, "a", "{\"service\":\"dupedog\",\"id\":\"d3\",\"bytes\":3}\n");
    write_file(d, "w", "{\"service\":\"dupedog\",\"id\":\"d4\",\"bytes\":4}\n");
    assert_int_equal(wait_ids(4, 5000, &r), 0);
    /* Truncation in place: shorter than what was shipped. */
    write_file(d, "w", "{\"id\":\"d5\"}\n");
    assert_int_equal(wait_ids(5, 5000, &r), 0);
    int st = th_stop(pid, 5000);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    read_sink(&r);
    assert_string_equal(ids_joined(&r), "d1,d2,d3,d4,d5");
    assert_int_equal(ship("--once --state state3 d.log"), 0);
    read_sink(&r);
    assert_int_equal(r.n_ids, 5);
}

/* Writes config FILE for reconciler_url URL with the given $.delivery member text. */
static void write_cfg(const char *file, const char *url, const char *delivery)
{
    char text[2048];
    th_strfmt(text, sizeof text,
              "{\"database\": \"host=127.0.0.1 dbname=unused\", \"reconciler_url\": \"%s\",\n"
              " \"tokens_file\": \"tokens.json\", \"delivery\": %s,\n"
              " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
              "           {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]}\n",
              url, delivery);
    write_file(file, "w", text);
}

/* The common delivery policy in ship (common/deliver_post.h): bodies are zstd by default (the
 * sink decodes them: the records arrive intact); https:// with the right CA is accepted, a wrong
 * CA is refused with the reason; plain http:// to a non-loopback host is refused before
 * anything is sent (the token would cross the network in clear text). */
static void test_https_compression_plain_refused(void **state)
{
    (void)state;
    struct th_tls t;
    th_require(th_tls_make(dir, &t) == 0, "openssl command line to make test certificates");
    char tls_out[600], port_arg[64], url[128], cfg2[600], delivery[1400], f[600];
    path_in(tls_out, sizeof tls_out, "received-tls.ndjson");
    path_in(cfg2, sizeof cfg2, "config-tls.json");
    path_in(f, sizeof f, "t.log");
    int port = th_free_port();
    snprintf(port_arg, sizeof port_arg, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "https://127.0.0.1:%d", port);
    char *argv[] = {WL_HTTP_SINK, "--listen",  port_arg,  "--out",     tls_out, "--tls-cert",
                    t.srv_cert,   "--tls-key", t.srv_key, "--seconds", "60",    NULL};
    pid_t tls_pid = th_spawn(argv, NULL);
    assert_int_equal(th_wait_port(port, 5000), 0);
    write_file(f, "w",
               "{\"service\":\"dupedog\",\"id\":\"t1\",\"bytes\":1,\"src\":\"10.1.0.5\","
               "\"dst\":\"10.2.0.9\",\"requester\":\"alice\",\"workflow\":\"wf-000001\"}\n"
               "{\"service\":\"dupedog\",\"id\":\"t2\",\"bytes\":2,\"src\":\"10.1.0.5\","
               "\"dst\":\"10.2.0.9\",\"requester\":\"alice\",\"workflow\":\"wf-000001\"}\n");

    /* a wrong CA: refused, nothing sent, the reason logged */
    snprintf(delivery, sizeof delivery, "{\"ca_file\": \"%s\"}", t.other_ca);
    write_cfg(cfg2, url, delivery);
    assert_int_equal(th_sh("cd '%s' && '%s' --config '%s' ship --once --state st-tls t.log "
                           ">'%s/ship-tls.log' 2>&1",
                           dir, th_bin("wanledger"), cfg2, dir),
                     1);
    assert_int_equal(th_sh("grep -q 'not trusted.*other-ca.pem' '%s/ship-tls.log'", dir), 0);
    assert_int_equal(th_sh("test ! -s '%s'", tls_out), 0);

    /* the right CA: both records arrive, zstd-encoded on the wire */
    snprintf(delivery, sizeof delivery, "{\"ca_file\": \"%s\"}", t.ca);
    write_cfg(cfg2, url, delivery);
    assert_int_equal(th_sh("cd '%s' && '%s' --config '%s' ship --once --state st-tls t.log "
                           ">>'%s/ship-tls.log' 2>&1",
                           dir, th_bin("wanledger"), cfg2, dir),
                     0);
    th_stop(tls_pid, 2000);
    FILE *in = fopen(tls_out, "r");
    assert_non_null(in);
    char line[65536];
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    cJSON *req = cJSON_Parse(line);
    assert_non_null(req);
    assert_string_equal(cJSON_GetObjectItem(req, "encoding")->valuestring, "zstd");
    assert_int_equal(cJSON_GetObjectItem(req, "status")->valueint, 200);
    const char *body = cJSON_GetObjectItem(req, "body")->valuestring;
    assert_non_null(strstr(body, "\"id\":\"t1\""));
    assert_non_null(strstr(body, "\"id\":\"t2\""));
    printf("ship over https: %zu body bytes, %d on the wire (zstd)\n", strlen(body),
           cJSON_GetObjectItem(req, "wire_bytes")->valueint);
    cJSON_Delete(req);

    /* plain http:// to a non-loopback address (TEST-NET-1): refused before connecting */
    write_cfg(cfg2, "http://192.0.2.1:7070", "{}");
    assert_int_equal(th_sh("cd '%s' && '%s' --config '%s' ship --once --state st-plain t.log "
                           ">'%s/ship-plain.log' 2>&1",
                           dir, th_bin("wanledger"), cfg2, dir),
                     1);
    assert_int_equal(th_sh("grep -q 'clear text' '%s/ship-plain.log'", dir), 0);
}

static int ship_with(const char *cfg, const char *args, const char *log)
{
    return th_sh("cd '%s' && '%s' --config '%s' ship %s >>'%s/%s' 2>&1", dir, th_bin("wanledger"),
                 cfg, args, dir, log);
}

/* Mutual TLS: a receiver that requires a client certificate refuses ship without one and
 * accepts it with client_cert/client_key. A receiver that cannot decode (415 to any
 * Content-Encoding) still gets every record: ship resends uncompressed and says so once. */
static void test_mutual_tls_and_415_fallback(void **state)
{
    (void)state;
    struct th_tls t;
    th_require(th_tls_make(dir, &t) == 0, "openssl command line to make test certificates");
    char out[600], port_arg[64], url[128], cfg2[600], delivery[2000], f[600];
    path_in(out, sizeof out, "received-mtls.ndjson");
    path_in(cfg2, sizeof cfg2, "config-mtls.json");
    path_in(f, sizeof f, "m.log");
    int port = th_free_port();
    snprintf(port_arg, sizeof port_arg, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "https://127.0.0.1:%d", port);
    char *argv[] = {WL_HTTP_SINK, "--listen",          port_arg,    "--out",   out,
                    "--tls-cert", t.srv_cert,          "--tls-key", t.srv_key, "--tls-client-ca",
                    t.ca,         "--refuse-encoding", "--seconds", "60",      NULL};
    pid_t pid = th_spawn(argv, NULL);
    assert_int_equal(th_wait_port(port, 5000), 0);
    write_file(f, "w",
               "{\"service\":\"dupedog\",\"id\":\"m1\",\"bytes\":1,\"src\":\"10.1.0.5\","
               "\"dst\":\"10.2.0.9\",\"requester\":\"bob\",\"workflow\":\"wf-000002\"}\n");
    snprintf(delivery, sizeof delivery, "{\"ca_file\": \"%s\"}", t.ca);
    write_cfg(cfg2, url, delivery);
    assert_int_equal(ship_with(cfg2, "--once --state st-mtls m.log", "ship-mtls.log"), 1);
    assert_int_equal(th_sh("test ! -s '%s'", out), 0);
    snprintf(delivery, sizeof delivery,
             "{\"ca_file\": \"%s\", \"client_cert\": \"%s\", \"client_key\": \"%s\"}", t.ca,
             t.cli_cert, t.cli_key);
    write_cfg(cfg2, url, delivery);
    assert_int_equal(ship_with(cfg2, "--once --state st-mtls m.log", "ship-mtls.log"), 0);
    th_stop(pid, 2000);
    FILE *in = fopen(out, "r");
    assert_non_null(in);
    char line[65536];
    int n415 = 0, n200 = 0;
    while (fgets(line, sizeof line, in)) {
        cJSON *req = cJSON_Parse(line);
        int st = cJSON_GetObjectItem(req, "status")->valueint;
        n415 += st == 415;
        if (st == 200) {
            n200++;
            assert_string_equal(cJSON_GetObjectItem(req, "encoding")->valuestring, "");
            assert_non_null(strstr(cJSON_GetObjectItem(req, "body")->valuestring, "\"m1\""));
        }
        cJSON_Delete(req);
    }
    fclose(in);
    assert_int_equal(n415, 1);
    assert_int_equal(n200, 1);
    assert_int_equal(
        th_sh("grep -c 'refuses Content-Encoding zstd' '%s/ship-mtls.log' | grep -qx 1", dir), 0);
}

/* Bad invocations exit 2 and send nothing. */
static void test_usage_errors(void **state)
{
    (void)state;
    assert_int_equal(truncate(sink_out, 0), 0);
    assert_int_equal(ship(""), 2);
    assert_int_equal(ship("--batch 0 x.log"), 2);
    assert_int_equal(ship("--bogus x.log"), 2);
    struct received r;
    read_sink(&r);
    assert_int_equal(r.posts_ok + r.posts_failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_once_resume_partial),
        cmocka_unit_test(test_failures_retry_never_skip),
        cmocka_unit_test(test_refused_record_isolated),
        cmocka_unit_test(test_tail_rotation_truncation),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_https_compression_plain_refused),
        cmocka_unit_test(test_mutual_tls_and_415_fallback),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
