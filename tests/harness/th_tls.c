/* Test certificates (tests/harness/th_tls.h): EC P-256 keys, valid for one day. */
#include "th_tls.h"

#include <stdio.h>

#include "harness.h"

int th_tls_make(const char *dir, struct th_tls *t)
{
    snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", dir);
    snprintf(t->srv_cert, sizeof(t->srv_cert), "%s/srv.pem", dir);
    snprintf(t->srv_key, sizeof(t->srv_key), "%s/srv.key", dir);
    snprintf(t->cli_cert, sizeof(t->cli_cert), "%s/cli.pem", dir);
    snprintf(t->cli_key, sizeof(t->cli_key), "%s/cli.key", dir);
    snprintf(t->other_ca, sizeof(t->other_ca), "%s/other-ca.pem", dir);
    const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    return th_sh("cd '%s' && "
                 "openssl req -x509 %s -keyout ca.key -out ca.pem -days 1 -subj /CN=wl-test-ca "
                 "2>/dev/null && "
                 "openssl req -x509 %s -keyout other-ca.key -out other-ca.pem -days 1 "
                 "-subj /CN=wl-other-ca 2>/dev/null && "
                 "openssl req %s -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 2>/dev/null && "
                 "printf 'subjectAltName=IP:127.0.0.1\\n' > srv.ext && "
                 "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                 "-out srv.pem -days 1 -extfile srv.ext 2>/dev/null && "
                 "openssl req %s -keyout cli.key -out cli.csr -subj /CN=wl-agent 2>/dev/null && "
                 "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                 "-out cli.pem -days 1 2>/dev/null",
                 dir, ec, ec, ec, ec) == 0
               ? 0
               : -1;
}
