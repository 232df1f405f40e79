/* wanledger-agent's settings: command-line flags, or the same keys in a JSON file given with
 * --config (flags win). Every error names the flag or the file and JSON key. */
#ifndef WL_AGENT_OPTS_H
#define WL_AGENT_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compress.h"
#include "sockprobe.h"

#define AGENT_MAX_WORKFLOW_ENV 16

struct agent_opts {
    char *reconciler; /* base URL ("http://127.0.0.1:7070") or the full /v1/attributions URL */
    char *token_file;
    char *token;        /* read from token_file */
    int window_seconds; /* default 60 */
    size_t k;           /* default 1000 */
    char *netns;        /* path of a network namespace file, e.g. /run/netns/x */
    char *cgroup;       /* cgroup v2 directory, e.g. /sys/fs/cgroup/system.slice */
    char *workflow_env[AGENT_MAX_WORKFLOW_ENV];
    size_t n_workflow_env; /* default WANLEDGER_WORKFLOW, SLURM_JOB_ID */
    bool to_stdout;
    bool once;
    char *metrics; /* "127.0.0.1:9465" or NULL */
    enum sockprobe_attach attach;
    char *spool_dir;          /* default /var/lib/wanledger/agent-spool */
    char *kube_logs;          /* the kubelet's log root; NULL: /var/log (kubepods.h) */
    uint64_t spool_max_bytes; /* default 64 MiB */
    char *agent_id;           /* default: kept in SPOOL/agent_id, created once */
    char *host;               /* default gethostname() */
    char *site;               /* --site: the site throttle rules scoped to a site match; NULL */
    uint16_t excl_ports[SOCKPROBE_MAX_EXCL_PORTS];
    size_t n_excl_ports;
    uint32_t map_entries;   /* per generation; default 65536 */
    bool throttle_off;      /* --throttle off */
    int throttle_interval;  /* seconds between rule fetches; default 5 */
    int throttle_fail_open; /* rules removed after this long without the reconciler; 60 */
    char *pin_dir;          /* bpffs directory, "none", or NULL = /sys/fs/bpf/wanledger/AGENT_ID */
    bool release_pins;      /* remove the pins on exit */
    int verbose;
    /* delivery: compression (default zstd) and TLS to an https:// reconciler */
    enum wl_compress compress;
    int report_version; /* 2 (default) or 1: report.h */
    char *ca_file, *client_cert, *client_key;
    bool allow_plain_http;
};

/* Parses argv (argv[0] is the program). Returns 0, 1 when --help was printed, or -1 with err
 * (exit 2). */
int agent_opts_parse(struct agent_opts *o, int argc, char **argv, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void agent_opts_free(struct agent_opts *o);
void agent_opts_usage(FILE *f);

#endif
