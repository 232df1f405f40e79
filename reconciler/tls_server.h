/* The reconciler's HTTPS context: certificate chain and key from the configuration
 * ($.server.tls.cert_file / key_file), TLS 1.2 or later, and with client_ca_file mutual TLS (a
 * client certificate signed by that CA is required). */
#ifndef WL_TLS_SERVER_H
#define WL_TLS_SERVER_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "config.h"

/* NULL with err filled when the files cannot be used. */
SSL_CTX *tls_server_ctx(const struct cfg *cfg, char *err, size_t errlen);

#endif
