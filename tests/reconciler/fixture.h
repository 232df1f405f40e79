/* Shared by the reconciler service tests: a throwaway PostgreSQL, a generated configuration and
 * tokens file, the real `wanledger reconcile` binary started on a free port, a raw HTTP/1.1
 * client (so tests can send any header or body), and row counts through libpq. */
#ifndef WL_TEST_RECON_FIXTURE_H
#define WL_TEST_RECON_FIXTURE_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FX_TOKEN_AGENT   "agent-token-0123456789abcdef"
#define FX_TOKEN_POLLER  "poller-token-0123456789abcdef"
#define FX_TOKEN_SERVICE "service-token-0123456789abcdef"
#define FX_TOKEN_READER  "reader-token-0123456789abcdef"

struct fx {
    const char *conninfo;
    const char *dir;
    char cfg_path[512];
    char log_path[512];
    int port;
    pid_t pid;
    PGconn *db;
};

/* Writes tokens + config (sites nyc 10.1/16, chi 10.2/16, osl 10.3/16; one link nyc-border-1
 * et-0/0/1 nyc->chi, circuit nyc-chi-1, 10 Gbit/s; service dupedog on port 7100) plus extra
 * top-level members (JSON text ending in ',' or empty), and connects the test's own libpq. */
void fx_setup(struct fx *f, const char *tag, const char *extra_json);
/* Starts `wanledger --config … reconcile` and waits for its port. */
void fx_start(struct fx *f);
/* Runs `wanledger --config … ARGS` to completion; returns the exit code, output in *out. */
int fx_run(struct fx *f, const char *args, char **out);
void fx_stop(struct fx *f);

/* One request over a fresh connection. token may be NULL (no Authorization header);
 * extra_headers: "Name: value\r\n…" or NULL. Returns the status (or -1), body in *resp
 * (malloc'd, NUL-terminated) when resp is not NULL. */
int fx_http(struct fx *f, const char *method, const char *path, const char *token,
            const char *extra_headers, const char *body, size_t len, char **resp);
/* POSTs body (freed here) and exits the test unless the answer is 200 (printed then). */
void fx_post_ok(struct fx *f, const char *path, const char *token, char *body);
/* The alert tests' gap scenario on the link nyc-border-1 et-0/0/1 (nyc -> chi): one counter
 * sample at each window start w[first..last], cumulative from window 1 (uptime 100000 + 6000 i
 * cs, out_octets (i - 1) x 1e9, out_pkts (i - 1) x 1e6: 934,000,000 payload bytes a window). */
void fx_gap_samples(struct fx *f, const int64_t *w, int first, int last);
/* alice's socket flow nyc -> chi (10.1.0.2 -> 10.2.0.2:5201, workflow train-42) of tx bytes in
 * window w[i], reported by nyc-gpu-17 with seq i. */
void fx_gap_report(struct fx *f, const int64_t *w, int i, long long tx);
/* A report of agent (host nyc-gpu-1) with seq s for window ws: flows socket flows k = 0..flows-1,
 * alice's python3, 10.1.0.2:(20000+k) -> 10.2.0.2:5201 client, tx_bytes 1000 s + k; fails the
 * test unless acknowledged (200). */
void fx_socket_report(struct fx *f, const char *agent, int64_t ws, int s, int flows);
/* That report's JSON body (malloc'd; its length in *len when len is not NULL). flows <= 45535. */
char *fx_socket_report_body(const char *agent, int64_t ws, int s, int flows, size_t *len);
/* The status line and headers of the last fx_http answer (this thread's, static buffer). */
const char *fx_last_headers(void);
/* A single-number query ("SELECT count(*) FROM …"). */
long long fx_num(struct fx *f, const char *sql);
/* Runs SQL and returns the first row's values joined by '|' (static buffer). */
const char *fx_row(struct fx *f, const char *sql);
/* fx_row, asked every 50 ms until it is want or timeout_ms have passed: for a row the server
 * writes a moment after what the test watched (a delivery marked once its 200 is back). */
const char *fx_row_within(struct fx *f, const char *sql, const char *want, int timeout_ms);

/* A test case's text with its placeholders replaced (malloc'd): @AGENT@ @POLLER@ @SERVICE@
 * @READER@ (the tokens above), @T<s>@ (RFC 3339 of base_us + s seconds), @E<s>@ (the same in
 * epoch seconds), @CTL@ (U+0001), @X<hh>@ (the byte 0xhh), @SP<n>@ (n spaces). Anything else
 * between two @ stays as it is. */
char *fx_expand(const char *in, int64_t base_us);

/* Time helpers: the start of the window n windows before the current one. */
/* vasprintf into a malloc'd string the caller frees (NULL on allocation failure). */
char *fx_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
int64_t fx_window_ago(int n, int window_seconds);
/* RFC 3339 of us in a rotating static buffer. */
const char *fx_ts(int64_t us);

#endif
