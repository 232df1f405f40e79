/* Throwaway certificates for TLS tests, made with the openssl command line: a CA, a server
 * certificate for 127.0.0.1 (IP SAN) signed by it, a client certificate signed by it, and an
 * unrelated CA (the "wrong CA"). */
#ifndef WL_TH_TLS_H
#define WL_TH_TLS_H

struct th_tls {
    char ca[512], srv_cert[512], srv_key[512], cli_cert[512], cli_key[512], other_ca[512];
};

/* Writes the files into dir. 0, or -1 (message on stderr). */
int th_tls_make(const char *dir, struct th_tls *t);

#endif
