/* The server-side configuration (DESIGN.md "Configuration"): parsed with cJSON, every field
 * checked; errors name the file, the JSON path and what was expected. */
#ifndef WL_CONFIG_H
#define WL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress.h"
#include "sitemap.h"

struct cfg_prefix {
    int family;       /* AF_INET or AF_INET6 */
    uint8_t addr[16]; /* network address, host bits zero; IPv4 in the first 4 bytes */
    int len;          /* prefix length */
};

struct cfg_site {
    char *name;
    size_t n_prefixes;
    struct cfg_prefix *prefixes;
};

struct cfg_snmp {
    char *address;   /* net-snmp peer string, "udp:127.0.0.1:16101" */
    int version;     /* 1, 2 (for "2c") or 3 */
    char *community; /* v1/v2c, read from community_file or $WANLEDGER_SNMP_COMMUNITY */
    char *community_file;
    /* v3 USM; passwords read from *_file */
    char *user;
    char *auth_protocol; /* "SHA", "SHA-256", "SHA-512", "MD5" */
    char *auth_password;
    char *auth_password_file;
    char *priv_protocol; /* "AES", "AES-256", "DES" */
    char *priv_password;
    char *priv_password_file;
    char *security_level; /* "authPriv" (default for v3), "authNoPriv", "noAuthNoPriv" */
    int interval_seconds; /* default 30 */
    int timeout_ms;       /* default 2000 */
    int retries;          /* default 1 */
};

/* A device's flow export (IPFIX, NetFlow v9 or sFlow v5) received by `wanledger poll`. */
enum cfg_flow_protocol { CFG_FLOW_IPFIX, CFG_FLOW_NETFLOW9, CFG_FLOW_SFLOW };

struct cfg_flows {
    char *listen; /* "0.0.0.0:4739" */
    enum cfg_flow_protocol protocol;
};
/* "ipfix", "netflow9", "sflow" */
const char *cfg_flow_protocol_name(enum cfg_flow_protocol p);

struct cfg_device {
    char *name;
    char *site;
    int site_idx;
    bool has_snmp;
    struct cfg_snmp snmp;
    bool has_gnmi;
    char *gnmi_source; /* gnmic's "source" tag for this device; default: name */
    bool has_flows;
    struct cfg_flows flows;
};

struct cfg_link {
    char *device;
    int device_idx;
    char *interface;
    char *site;
    int site_idx;
    char *peer_site;
    int peer_site_idx;
    char *circuit;
    uint64_t capacity_bps; /* 0 = unknown */
};

struct cfg_route {
    char *src, *dst;
    int src_idx, dst_idx;
    size_t n_via;
    char **via;
    int *via_idx;
};

struct cfg_service {
    char *name;
    size_t n_ports;
    uint16_t *ports;
    size_t n_users;
    char **users;
};

/* A named remote endpoint for the dependency map ($.endpoints): matched by address (when given)
 * and port (when ports are given). */
struct cfg_endpoint {
    char *name;
    char *address; /* as written, or NULL */
    int family;    /* AF_INET / AF_INET6 when address is set */
    uint8_t addr[16];
    size_t n_ports;
    uint16_t *ports;
};

struct cfg_tokens {
    size_t n_agent, n_poller, n_service, n_reader;
    char **agent, **poller, **service, **reader;
    size_t n_operator; /* throttle rules: create, approve, revoke */
    char **operator;
    /* per agent token (n_agent entries, or NULL when none is bound): the host it is bound to
     * ("agent_hosts": {"HOST": [tokens]} in the tokens file; NULL entry: any host) */
    char **agent_host;
};

/* $.delivery (common/cfg_delivery.c): how the poller and `ship` send to reconciler_url. */
struct cfg_delivery {
    enum wl_compress compress; /* default zstd */
    char *ca_file, *client_cert, *client_key;
    bool allow_plain_http;
};

/* $.analytics.clickhouse (common/cfg_analytics.c): the ClickHouse store of raw flow records. */
struct cfg_clickhouse {
    bool enabled; /* configured: flows also go to ClickHouse, windows are summed there */
    char *url;    /* "http://127.0.0.1:8123" (no trailing /) */
    char *database, *cluster; /* cluster NULL: no Distributed table */
    char **shard_urls;        /* with a cluster: every shard's HTTP URL in the cluster's order, so
                                 the flusher inserts each report into its shard's local table */
    size_t n_shard_urls;
    char *user, *password; /* password from password_file, or NULL */
    char *password_file;   /* resolved path, or NULL */
    int batch_rows;        /* rows per INSERT, default 1000000 */
    int timeout_ms;        /* per request, default 10000 */
};

struct cfg {
    char *path; /* the file it was read from */

    int window_seconds;     /* default 60 */
    int grace_seconds;      /* default 90 */
    int tick_seconds;       /* default 5 */
    int max_future_seconds; /* default 120 */

    char *database; /* libpq conninfo; password via database_password_file or PGPASSWORD */
    char *database_password_file;
    char *listen; /* "127.0.0.1:7070" */
    char *tokens_file;
    struct cfg_tokens tokens;
    char *reconciler_url;  /* default "http://" + listen */
    char *public_url;      /* base for generatorURL in alerts; default reconciler_url */
    bool open_on_loopback; /* pages readable without a reader token from 127.0.0.1/::1 */

    size_t n_sites;
    struct cfg_site *sites;
    size_t n_devices;
    struct cfg_device *devices;
    size_t n_links;
    struct cfg_link *links;
    size_t n_routes;
    struct cfg_route *routes;

    /* dedup */
    size_t n_nfs_ports;
    uint16_t *nfs_ports; /* default {2049} */
    size_t n_services;
    struct cfg_service *services;

    /* names of remote endpoints (dependency map) */
    size_t n_endpoints;
    struct cfg_endpoint *endpoints;

    /* overhead */
    double bytes_per_packet;      /* default 66 */
    double ratio_without_packets; /* default 0.95 */

    /* thresholds */
    double green;           /* default 0.95 */
    double red;             /* default 0.80 */
    uint64_t min_gap_bytes; /* default 100000000 */
    double over;            /* default 1.05 */
    int alert_windows;      /* default 3 */
    int resolve_windows;    /* default 3 */
    double saturation;      /* default 0.90 */
    /* how old a counter value can be when its device answers (snmpd's interface cache: 3 s by
     * default); gap and over alerts need a shortfall or excess beyond what that explains.
     * Default 0. */
    double counter_staleness_seconds;

    /* throttle proposals from saturation alerts ($.throttle, cfg_throttle.c) */
    struct cfg_throttle {
        int proposals;            /* default 1: each saturation alert proposes rules */
        uint64_t floor_bps;       /* no proposed cap below this; default 10 Mbit/s */
        int proposal_ttl_seconds; /* default 3600 */
        size_t n_auto_enforce;
        char **auto_enforce;       /* workflows whose proposals are enforced at once */
        double wrong_target_share; /* revoke when the throttled share stays below; 0.10 */
        int wrong_target_windows;  /* ... for this many saturated windows; 3 */
    } throttle;

    /* alerts */
    size_t n_webhooks;
    char **webhooks;
    int resend_seconds; /* default 60; open alerts carry endsAt = now + 4 x this */
    /* retention (cfg_retention.c, retention.h), days: raw partitions and window_state (30),
     * heatmap_cells/attribution_rollup/link_windows (400), resolved alerts (400), agent_gaps
     * (400) */
    int retention_raw_days, retention_results_days, retention_alerts_days, retention_gaps_days;

    /* limits */
    uint64_t max_body_bytes; /* default 64 MiB */
    uint64_t max_flow_bps;   /* default 400e9: a flow may not claim more than this x window */
    /* hardening (reconciler/srv_limits.h reads these; 0 = the default named there) */
    int max_past_days; /* oldest accepted time: now - this; default retention.raw_days (30) */
    int max_transfer_seconds;                 /* longest transfer record; default 7 days */
    uint64_t max_body_role[4];                /* per role (agent, poller, service, reader) */
    int max_connections;                      /* default 512 (and below RLIMIT_NOFILE) */
    int header_timeout_seconds;               /* whole request head within; default 10 */
    int body_timeout_seconds;                 /* whole body within; default 60 */
    char *tls_cert, *tls_key, *tls_client_ca; /* HTTPS when tls_cert is set */
    bool allow_plain_http; /* plain HTTP on a non-loopback listen address (default: refused) */

    /* poller */
    char *spool_dir;          /* default "/var/lib/wanledger/spool" */
    uint64_t spool_max_bytes; /* default 256 MiB */
    char *gnmi_tcp_listen;    /* "127.0.0.1:57400" or NULL */
    char *gnmi_udp_listen;
    char *gnmi_delimiter; /* gnmic tcp output's `delimiter`, or NULL */
    char *metrics_listen; /* the poller's /metrics, "HOST:PORT"; NULL: POLL_METRICS_DEFAULT */

    struct cfg_delivery delivery;
    struct cfg_clickhouse clickhouse;

    /* derived */
    struct sitemap *sitemap;                     /* every site prefix -> site index */
    struct cfg_names *site_names, *device_names; /* name -> index (cfg_names.h); may be NULL */
};

/* One error: "FILE: $.links[2].peer_site: expected a site name, got \"xyz\"". */
struct cfg_error {
    char *jpath;
    char *msg;
};

struct cfg_errors {
    size_t n;
    struct cfg_error *items;
};

/* Reads and validates path. On success returns a config (free with cfg_free) and errs->n == 0.
 * On failure returns NULL and fills errs with every problem found (free with cfg_errors_free). */
struct cfg *cfg_load(const char *path, struct cfg_errors *errs) __attribute__((warn_unused_result));
/* Same, from a JSON string; path is only used in messages and for relative secret files. */
struct cfg *cfg_parse(const char *path, const char *json, struct cfg_errors *errs)
    __attribute__((warn_unused_result));
void cfg_free(struct cfg *cfg);
void cfg_errors_free(struct cfg_errors *errs);
/* Prints every error as "FILE: PATH: MSG" lines to f. */
void cfg_errors_print(const struct cfg *unused, const char *file, const struct cfg_errors *errs,
                      void *f /* FILE* */);

/* Look-ups by name: index or -1. */
int cfg_site_index(const struct cfg *cfg, const char *name);
int cfg_device_index(const struct cfg *cfg, const char *name);
/* Site of a textual address ("10.1.2.3", "fd00:1::5"): index or -1 (unmapped or unparsable). */
int cfg_site_of_addr(const struct cfg *cfg, const char *addr);
/* 1 if port is an NFS port or a service's port. */
int cfg_is_dedup_port(const struct cfg *cfg, uint16_t port);
/* Index of the service owning this port or this user name, else -1. */
int cfg_service_of_port(const struct cfg *cfg, uint16_t port);
int cfg_service_of_user(const struct cfg *cfg, const char *user);
/* Name of the configured endpoint matching a remote address (16 bytes, IPv4 in the first 4) and
 * port, or NULL. */
const char *cfg_endpoint_name(const struct cfg *cfg, int family, const uint8_t addr[16],
                              uint16_t port);
/* Path of site indexes from src to dst (src and dst included) via routes, or the direct pair
 * when a link joins them. Returns the number of sites written to out (<= max), 0 if no path. */
size_t cfg_path(const struct cfg *cfg, int src, int dst, int *out, size_t max);

/* The configuration as JSON with every default filled in and secret *files* (never secrets)
 * named by absolute path: parsing the output again gives the same configuration. malloc'd. */
char *cfg_to_json(const struct cfg *cfg);

/* Prints the one-screen summary of `wanledger check-config`. */
void cfg_print_summary(const struct cfg *cfg, void *f /* FILE* */);

/* Reads a whole small file (a secret) and strips one trailing newline. NULL on error, with
 * errno set. */
char *cfg_read_secret(const char *path);
/* Secret files (tokens, community strings, passwords) are regular files of at most this size
 * that neither group nor others may read or write. */
#define CFG_SECRET_MAX_BYTES (1u << 20)
/* A whole regular file of at most max bytes (with secret: also the mode check above). NULL with
 * errno and the reason in why (when given). */
char *cfg_read_file(const char *path, size_t max, int secret, char *why, size_t whylen);

#endif
