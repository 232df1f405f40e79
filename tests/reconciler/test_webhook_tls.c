/* Alerts to an https:// webhook: the reconciler verifies the receiver against $.delivery.ca_file
 * and its address (an IP SAN), so an alert reaches a receiver with a certificate of that CA, and
 * never one whose certificate another CA signed (the delivery fails and is retried; nothing is
 * sent in clear). The receiver is wl-http-sink serving HTTPS with certificates made by openssl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "th_tls.h"
#include "timeutil.h"

static struct th_tls T;

/* Starts the HTTPS sink, a reconciler configured with the webhook and ca, puts an open alert in
 * gap_alerts and runs `reconcile --once` (which delivers what is due and waits for answers).
 * Returns how many requests the sink recorded. */
static int deliver_once(const char *tag, const char *ca, int *rc)
{
    const char *dir = th_tmpdir(tag);
    int sink_port = th_free_port();
    char out[600], extra[1400], port_arg[64];
    snprintf(out, sizeof out, "%s/sink.ndjson", dir);
    snprintf(port_arg, sizeof port_arg, "127.0.0.1:%d", sink_port);
    snprintf(extra, sizeof extra,
             " \"alerts\": {\"webhooks\": [\"https://127.0.0.1:%d/api/v2/alerts\"]},\n"
             " \"delivery\": {\"ca_file\": \"%s\"},",
             sink_port, ca);
    char *argv[] = {WL_HTTP_SINK, "--listen",   port_arg,   "--out",     out,       "--seconds",
                    "60",         "--tls-cert", T.srv_cert, "--tls-key", T.srv_key, NULL};
    pid_t sink = th_spawn(argv, NULL);
    assert_true(sink > 0);
    assert_int_equal(th_wait_port(sink_port, 5000), 0);
    struct fx f;
    fx_setup(&f, tag, extra);
    int64_t w = fx_window_ago(3, 60);
    char *sql = fx_fmt("INSERT INTO gap_alerts (kind, src_site, dst_site, state, first_window,"
                       " last_window, peak_unattributed_bytes, peak_ratio, summary) VALUES ('gap',"
                       " 'nyc', 'chi', 'open', '%s', '%s', 123456789, 0.4, 'tls test')",
                       fx_ts(w), fx_ts(w + 120 * TM_USEC_PER_SEC));
    assert_int_equal(fx_num(&f, "SELECT count(*) FROM gap_alerts"), 0);
    PGresult *r = PQexec(f.db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    free(sql);
    char *log = NULL;
    *rc = fx_run(&f, "reconcile --once", &log);
    fprintf(stderr, "%s: %s", tag, log ? log : "");
    free(log);
    PQclear(PQexec(f.db, "DELETE FROM gap_alerts")); /* the cluster is shared with the next case */
    fx_stop(&f);
    th_stop(sink, 5000);
    int n = 0;
    FILE *fp = fopen(out, "r");
    if (fp) {
        char line[8192];
        while (fgets(line, sizeof line, fp))
            n += strstr(line, "WanledgerGap") != NULL && strstr(line, "tls test") != NULL;
        fclose(fp);
    }
    return n;
}

static void test_right_ca_delivers(void **state)
{
    (void)state;
    int rc;
    assert_int_equal(deliver_once("whtls-ok", T.ca, &rc), 1);
    assert_int_equal(rc, 0); /* and the sanitizer found nothing (no TLS connection leaked) */
}

static void test_wrong_ca_never_delivers(void **state)
{
    (void)state;
    int rc;
    assert_int_equal(deliver_once("whtls-bad", T.other_ca, &rc), 0);
}

int main(void)
{
    th_require(th_sh("command -v openssl >/dev/null") == 0, "openssl (Debian openssl) is needed");
    const char *dir = th_tmpdir("whtls-certs");
    if (th_tls_make(dir, &T) != 0)
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_right_ca_delivers),
                                       cmocka_unit_test(test_wrong_ca_never_delivers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
