/* A throwaway ClickHouse server for tests (Debian's clickhouse-server 18.16, FACTS.md): its own
 * config in a scratch directory, free loopback ports, a password, started and stopped by pid. */
#ifndef WL_TH_CLICKHOUSE_H
#define WL_TH_CLICKHOUSE_H

#include <stdbool.h>
#include <sys/types.h>

#define TH_CH_PASSWORD "ch-test-secret"

struct th_ch {
    char dir[256];
    char url[64];            /* http://127.0.0.1:PORT */
    char password_file[300]; /* holds TH_CH_PASSWORD */
    int http_port, tcp_port, interserver_port;
    pid_t pid;
};

/* th_require()s clickhouse-server (fails under CI=true), writes the config into a fresh
 * directory (extra_xml: more top-level elements, e.g. <remote_servers>, or NULL), starts the
 * server and waits until it answers (at most 30 s). Registers a stop at exit. */
void th_ch_start(struct th_ch *ch, const char *extra_xml);
/* The same on a TCP port chosen by the caller (th_free_port), 0 for any: a cluster's
 * <remote_servers> names its shards' TCP ports before they start. */
void th_ch_start_on(struct th_ch *ch, const char *extra_xml, int tcp_port);
/* SIGTERM (SIGKILL after 10 s) by pid; data stays in dir. */
void th_ch_stop(struct th_ch *ch);
/* Starts it again on the same directory and ports. 0 or -1. */
int th_ch_restart(struct th_ch *ch);
/* Runs sql over HTTP; the answer (malloc'd, NUL-terminated) or NULL on failure (message on
 * stderr). */
char *th_ch_query(const struct th_ch *ch, const char *sql);
/* The single number a query answers; fails the test when there is none. */
long long th_ch_num(const struct th_ch *ch, const char *sql);

#endif
