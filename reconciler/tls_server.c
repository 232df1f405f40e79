/* The reconciler's HTTPS context (see tls_server.h). */
#include "tls_server.h"

#include <openssl/err.h>
#include <stdio.h>

static void ssl_err(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s %s: %s", what, file ? file : "", buf[0] ? buf : "unknown error");
    ERR_clear_error();
}

SSL_CTX *tls_server_ctx(const struct cfg *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_err(err, errlen, "cannot create a TLS context", NULL);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1) {
        ssl_err(err, errlen, "$.server.tls.cert_file: cannot use certificate", cfg->tls_cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1) {
        ssl_err(err, errlen, "$.server.tls.key_file: cannot use key", cfg->tls_key);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_err(err, errlen, "$.server.tls.key_file: the key does not match the certificate",
                cfg->tls_key);
        goto fail;
    }
    if (cfg->tls_client_ca) {
        if (SSL_CTX_load_verify_locations(ctx, cfg->tls_client_ca, NULL) != 1) {
            ssl_err(err, errlen, "$.server.tls.client_ca_file: cannot load", cfg->tls_client_ca);
            goto fail;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->tls_client_ca);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}
