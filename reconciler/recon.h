/* Reconciliation of one window, pure (no I/O): counter samples, agent flows and service transfers
 * in; per circuit direction observations, heatmap cells and the attribution rollup out.
 * DESIGN.md "Reconciliation semantics" is the specification; reconciler/README.md the decisions. */
#ifndef WL_RECON_H
#define WL_RECON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cell_status.h" /* enum cell_status, CELL_MIN_VALID_FRACTION: one definition */
#include "config.h"
#include "recon_deps.h"

/* "ok", "warn", … as stored in heatmap_cells.status (cell_status_name). */
const char *recon_status_name(enum cell_status s);
/* The status named s, or -1 (cell_status_parse). */
int recon_status_parse(const char *s);

/* One raw cumulative sample of one configured link's interface (cfg->links[link]). */
struct recon_sample {
    int link;
    int64_t at_us;
    int64_t uptime_cs;        /* < 0: unknown */
    int64_t discontinuity_cs; /* a change between two samples discards their interval */
    int counter_bits;         /* 32 or 64 */
    bool has_in_octets, has_out_octets, has_in_pkts, has_out_pkts;
    uint64_t in_octets, out_octets, in_pkts, out_pkts;
    uint64_t speed_bps; /* 0: unknown */
};

struct recon_addr {
    int family; /* AF_INET, AF_INET6, or 0 when absent */
    uint8_t addr[16];
};

enum recon_flow_source { RECON_FLOW_SOCKET, RECON_FLOW_NFS };
enum recon_role { RECON_ROLE_UNKNOWN, RECON_ROLE_CLIENT, RECON_ROLE_SERVER };
enum recon_nfs_op { RECON_NFS_READ, RECON_NFS_WRITE };

/* The Kubernetes identity of an owner (sql/015_kube_owner.sql): pod namespace, pod name and
 * container name; NULL or "" outside pods. Part of a rollup owner's key. */
struct recon_kube {
    const char *ns, *pod, *container;
};

/* One flow of an agent's report for the window. Strings may be NULL (= unknown, ""); they are
 * borrowed and must outlive the recon_result. A flow is a socket flow or an NFS flow (source):
 * each kind's own fields share their bytes with the other kind's (136 bytes a flow instead of
 * 184: a 5 M-flow window's array is 680 MB, not 920), so only the fields of a flow's source are
 * read or written. */
struct recon_flow {
    enum recon_flow_source source;
    int proto; /* socket: IPPROTO_TCP / IPPROTO_UDP */
    const char *host, *user, *program, *workflow;
    struct recon_kube kube;
    /* the socket's local end; nfs: the client when known, else the site of the host's socket
     * flows */
    struct recon_addr local;
    uint16_t local_port; /* socket */
    union {
        struct { /* source RECON_FLOW_SOCKET */
            uint64_t tx_bytes, rx_bytes;
            struct recon_addr remote;
            uint16_t remote_port;
            enum recon_role role;
        };
        struct { /* source RECON_FLOW_NFS */
            uint64_t nfs_bytes;
            const char *nfs_export; /* may be NULL */
            struct recon_addr nfs_server;
            uint16_t nfs_port;
            enum recon_nfs_op nfs_op;
        };
    };
};

/* One service transfer (any that overlaps the window). src/dst: a site name or an address. */
struct recon_transfer {
    const char *service, *requester, *workflow;
    const char *src, *dst;
    uint64_t bytes;
    int64_t start_us, end_us;
};

/* Where a flow stands in arrival order: (seq, agent, idx) compared in that order, agent by
 * strcmp. recon_run makes two choices by the first flow seen, a connection side's owner and a
 * host's site; with recon_input.order it makes them by this order, whatever the order of flows[]
 * (the ClickHouse path's rows come in the order its reading threads finish their blocks; its
 * loader sorts them into this order for speed, and the choices do not depend on that). */
struct recon_flow_order {
    uint64_t seq;
    const char *agent; /* never NULL */
    uint64_t idx;
};

struct recon_input {
    int64_t window_start_us; /* aligned to cfg->window_seconds */
    const struct recon_sample *samples;
    size_t n_samples; /* any order; include the last sample before and the first after */
    const struct recon_flow *flows;
    size_t n_flows;
    const struct recon_flow_order *order; /* NULL (flows[] is in arrival order) or n_flows */
    /* NULL, or n_flows: arrival order is rank order, flows of one rank in their order in flows[]
     * (the PostgreSQL path's split load: each flow's packed row's ctid, its two halves one after
     * the other in flows[]); with order set, order decides */
    const uint64_t *rank;
    const struct recon_transfer *transfers;
    size_t n_transfers;
    int threads; /* 1..8; 0: WL_RECON_THREADS, else one per 200,000 flows up to half the cores */
};

/* What the counters say about one direction (src_site -> dst_site) of one circuit. */
struct recon_link_obs {
    const char *circuit; /* borrowed from cfg */
    int src_site, dst_site;
    int link;         /* cfg link whose counter was used (valid_fraction 0: it had no samples) */
    bool out_counter; /* true: the sender's out-counter; false: the receiver's in-counter */
    uint64_t observed_bytes;
    uint64_t observed_payload_bytes;
    double valid_fraction; /* share of the window covered by valid intervals */
    uint64_t capacity_bps; /* configured, else the interface speed, else 0 */
    bool has_utilization;
    double utilization; /* observed rate over the covered part / capacity */
};

/* One heatmap cell: a directed site pair. */
struct recon_cell {
    int src_site, dst_site;
    bool has_link;
    uint64_t observed_bytes, observed_payload_bytes;
    uint64_t attributed_bytes, socket_bytes, nfs_bytes, service_bytes, unattributed_bytes;
    bool has_coverage;
    double coverage; /* attributed / observed_payload */
    double valid_fraction;
    uint64_t capacity_bps;
    enum cell_status status;
};

/* Who put bytes on a cell, after de-duplication. source: "socket", "nfs" or "service". For a
 * service transfer user is the requester and program the service name. Never NULL. */
struct recon_rollup {
    int src_site, dst_site;
    const char *source, *workflow, *user, *program, *host;
    struct recon_kube kube; /* never NULL members; "" for service transfers */
    uint64_t bytes;
    /* the owner's number in this result, 0..n_owners-1 (the rank of its strings among the
     * window's owners): the rows of one owner share it */
    uint32_t owner;
};

struct recon_result {
    struct recon_link_obs *links; /* by circuit name, then direction */
    size_t n_links;
    struct recon_cell *cells; /* by (src_site, dst_site) */
    size_t n_cells;
    struct recon_rollup *rollup; /* by (src_site, dst_site), then bytes descending */
    size_t n_rollup;
    size_t n_owners;        /* the owners the rollup's rows are numbered among */
    struct recon_dep *deps; /* the dependency map of the window (recon_deps.h) */
    size_t n_deps;
    /* left out, with reasons */
    size_t n_unmapped;    /* an address (or transfer end) mapped to no site */
    size_t n_intra_site;  /* both ends in one site */
    size_t n_dedup_flows; /* socket flows on a service's or NFS port or user */
    size_t n_both_ends;   /* connections reported by both ends (counted once) */
};

/* Reconciles one window. 0 on success (free out with recon_result_free), -1 with err filled
 * (bad input: a sample naming no link, an unaligned window). */
int recon_run(const struct cfg *cfg, const struct recon_input *in, struct recon_result *out,
              char *err, size_t errlen) __attribute__((warn_unused_result));
void recon_result_free(struct recon_result *r);

/* Status of a cell with counters from its figures (DESIGN.md "Status"; cell_status_of); pure. */
enum cell_status recon_cell_status(const struct cfg *cfg, double valid_fraction,
                                   uint64_t observed_payload_bytes, bool has_coverage,
                                   double coverage);

/* Bytes of a total spread evenly over [start_us, end_us] that fall in [from_us, to_us). Exact in
 * sum: the parts over adjacent ranges add up to total. start == end puts everything at start. */
uint64_t recon_spread(uint64_t total, int64_t start_us, int64_t end_us, int64_t from_us,
                      int64_t to_us);

#endif
