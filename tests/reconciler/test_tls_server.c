/* The reconciler over HTTPS (libevent's OpenSSL bufferevents under the gate): a CA and a server
 * certificate made here with `openssl req`, checked with `curl --cacert` (and `openssl s_client`
 * for the protocol), mutual TLS with a client CA, and plain HTTP refused on a non-loopback
 * listen address. */
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

static struct fx F;
static char g_dir[512];

/* curl's HTTP status for url with extra arguments, or 0 when no HTTP answer came. */
static int curl_status(const char *args, const char *url)
{
    char out[600];
    snprintf(out, sizeof(out), "%s/curl.out", g_dir);
    th_sh("curl -s -o /dev/null -w '%%{http_code}' --max-time 10 %s '%s' >'%s' 2>/dev/null", args,
          url, out);
    FILE *f = fopen(out, "r");
    int code = 0;
    if (f) {
        if (fscanf(f, "%d", &code) != 1)
            code = 0;
        fclose(f);
    }
    return code;
}

static void make_pki(void)
{
    /* CA, server certificate for 127.0.0.1, client CA and a client certificate */
    int rc = th_sh("cd '%s' && "
                   "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
                   "-subj /CN=wl-test-ca 2>/dev/null && "
                   "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
                   "-subj /CN=127.0.0.1 2>/dev/null && "
                   "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
                   "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                   "-out server.pem -days 2 -extfile san.ext 2>/dev/null && "
                   "openssl req -x509 -newkey rsa:2048 -nodes -keyout cca.key -out cca.pem -days 2 "
                   "-subj /CN=wl-test-client-ca 2>/dev/null && "
                   "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
                   "-subj /CN=agent-1 2>/dev/null && "
                   "openssl x509 -req -in client.csr -CA cca.pem -CAkey cca.key -CAcreateserial "
                   "-out client.pem -days 2 2>/dev/null && chmod 600 *.key",
                   g_dir);
    assert_int_equal(rc, 0);
}

static void start_with(const char *tag, const char *server_json)
{
    char *extra = fx_fmt(" \"tick_seconds\": 3600, \"server\": %s,", server_json);
    fx_setup(&F, tag, extra);
    free(extra);
    fx_start(&F);
}

static void test_https(void **state)
{
    (void)state;
    char *sv =
        fx_fmt("{\"tls\": {\"cert_file\": \"%s/server.pem\", \"key_file\": \"%s/server.key\"}}",
               g_dir, g_dir);
    start_with("recon-tls", sv);
    free(sv);
    char *url = fx_fmt("https://127.0.0.1:%d/healthz", F.port);
    char *plain = fx_fmt("http://127.0.0.1:%d/healthz", F.port);
    char *ca = fx_fmt("--cacert '%s/ca.pem'", g_dir);
    /* verified against the CA made here */
    assert_int_equal(curl_status(ca, url), 200);
    /* not verified without the CA: no answer */
    assert_int_equal(curl_status("", url), 0);
    /* plain HTTP to the TLS port: no HTTP answer */
    assert_int_equal(curl_status("", plain), 0);
    /* a token crosses inside TLS and the gate still applies: 401 without one */
    char *cells = fx_fmt("https://127.0.0.1:%d/api/v1/cells", F.port);
    assert_int_equal(curl_status(ca, cells), 401);
    char *auth = fx_fmt("%s -H 'Authorization: Bearer %s'", ca, FX_TOKEN_READER);
    assert_int_equal(curl_status(auth, cells), 200);
    /* the protocol: TLS 1.2 or later */
    assert_int_equal(
        th_sh("echo | openssl s_client -connect 127.0.0.1:%d -CAfile '%s/ca.pem' "
              "-verify_return_error 2>/dev/null | grep -Eq '(Protocol *: |New, )TLSv1\\.[23]'",
              F.port, g_dir),
        0);
    assert_int_not_equal(th_sh("echo | openssl s_client -connect 127.0.0.1:%d -tls1_1 "
                               "</dev/null >/dev/null 2>&1",
                               F.port),
                         0);
    fx_stop(&F);
    free(url), free(plain), free(ca), free(cells), free(auth);
}

static void test_mutual_tls(void **state)
{
    (void)state;
    char *sv =
        fx_fmt("{\"tls\": {\"cert_file\": \"%s/server.pem\", \"key_file\": \"%s/server.key\","
               " \"client_ca_file\": \"%s/cca.pem\"}}",
               g_dir, g_dir, g_dir);
    start_with("recon-mtls", sv);
    free(sv);
    char *url = fx_fmt("https://127.0.0.1:%d/healthz", F.port);
    char *ca = fx_fmt("--cacert '%s/ca.pem'", g_dir);
    char *withcert = fx_fmt("--cacert '%s/ca.pem' --cert '%s/client.pem' --key '%s/client.key'",
                            g_dir, g_dir, g_dir);
    char *wrongcert = /* the server's own certificate is not signed by the client CA */
        fx_fmt("--cacert '%s/ca.pem' --cert '%s/server.pem' --key '%s/server.key'", g_dir, g_dir,
               g_dir);
    assert_int_equal(curl_status(withcert, url), 200);
    assert_int_equal(curl_status(ca, url), 0);
    assert_int_equal(curl_status(wrongcert, url), 0);
    fx_stop(&F);
    free(url), free(ca), free(withcert), free(wrongcert);
}

static void test_plain_only_on_loopback(void **state)
{
    (void)state;
    fx_setup(&F, "recon-plain", " \"tick_seconds\": 3600,");
    /* the same configuration listening on every address, without TLS */
    assert_int_equal(
        th_sh("sed -i 's/\"listen\": \"127.0.0.1:/\"listen\": \"0.0.0.0:/' '%s'", F.cfg_path), 0);
    char outp[600];
    snprintf(outp, sizeof(outp), "%s/plain.out", F.dir);
    int rc = th_sh("timeout 30 '%s' --config '%s' reconcile >'%s' 2>&1", th_bin("wanledger"),
                   F.cfg_path, outp);
    char *out = calloc(1, 8192);
    FILE *fo = fopen(outp, "r");
    if (fo) {
        size_t n = fread(out, 1, 8191, fo);
        out[n] = 0;
        fclose(fo);
    }
    fprintf(stderr, "# %s", out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "is not a loopback address"));
    assert_non_null(strstr(out, "$.server.tls"));
    free(out);
    /* allowed when the operator says so */
    assert_int_equal(th_sh("sed -i 's/\"tick_seconds\": 3600,/\"tick_seconds\": 3600, \"server\": "
                           "{\"allow_plain_http\": true},/' '%s'",
                           F.cfg_path),
                     0);
    fx_start(&F);
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, &resp), 200);
    free(resp);
    fx_stop(&F);
}

int main(void)
{
    const char *d = th_tmpdir("recon-tls-pki");
    th_require(d != NULL, "a temporary directory");
    snprintf(g_dir, sizeof(g_dir), "%s", d);
    th_require(th_sh("command -v openssl >/dev/null && command -v curl >/dev/null") == 0,
               "openssl and curl");
    make_pki();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_https),
                                       cmocka_unit_test(test_mutual_tls),
                                       cmocka_unit_test(test_plain_only_on_loopback)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
