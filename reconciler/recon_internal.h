/* The working state of one recon_run, shared by recon.c (counters, paths, cells, the attribution
 * of bytes to owners, NFS, transfers, results) and recon_socket.c (socket flows: de-duplication,
 * both-ends matching, and the split of a window's flows across threads). Internal to the pure
 * reconciliation core; nothing outside these two files includes it. */
#ifndef WL_RECON_INTERNAL_H
#define WL_RECON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hindex.h"
#include "recon.h"

struct pair_path {
    uint64_t key;
    size_t off, len; /* into run.path_sites */
};

struct cell_acc {
    uint64_t key;
    struct recon_cell cell;
    double payload;
};

struct endpoint {
    int family;
    uint8_t addr[16];
    uint16_t port;
};

struct conn_side {
    bool seen;
    enum recon_role role;
    uint64_t tx, rx;
    const struct recon_flow *owner;
};

struct conn {
    uint64_t hash;
    int proto;
    int owner_part;        /* the thread that credits it (recon_socket.c) */
    struct endpoint ep[2]; /* ep[0] < ep[1] */
    int site[2];
    struct conn_side side[2];
};

struct host_site {
    const struct recon_flow *flow; /* the first of the host's flows with a site */
    int site;
};

/* A pair's entry in the route index: the first configured route of (src, dst), or -1 when
 * only a link joins them. */
struct pair_route {
    uint64_t key;
    int route;
};

/* One thread's share of a run (the whole run with one thread). Each has its own indexes and
 * accumulators; recon_socket.c merges them into the first. */
struct run {
    const struct cfg *cfg;
    const struct recon_input *in;
    struct pair_route *routes;
    size_t n_routes, cap_routes;
    struct hix route_ix;
    struct cell_acc *cells;
    size_t n_cells, cap_cells;
    struct hix cell_ix;
    struct pair_path *paths;
    size_t n_paths, cap_paths;
    struct hix path_ix;
    int *path_sites;
    size_t n_path_sites, cap_path_sites;
    struct recon_rollup *rollup;
    size_t n_rollup, cap_rollup;
    struct hix rollup_ix;
    struct conn *conns;
    size_t n_conns, cap_conns;
    struct hix conn_ix;
    struct host_site *hosts;
    size_t n_hosts, cap_hosts;
    struct hix host_ix;
    const struct run *host_run; /* where the hosts' sites are read (NFS flows): the merged run */
    struct recon_deps_acc deps;
    int *path_buf;
};

/* The sources of rollup rows; compared by address. */
extern const char rcn_src_socket[], rcn_src_nfs[], rcn_src_service[];

/* s, or "" for NULL. */
const char *rcn_str(const char *s);
/* The site of an address, or -1. */
int rcn_site_of(const struct cfg *cfg, const struct recon_addr *a);
/* An empty run (expect: flows it may hold). 0 or -1 (out of memory; free it with rcn_run_free). */
int rcn_run_init(struct run *r, const struct cfg *cfg, const struct recon_input *in, size_t expect);
void rcn_run_free(struct run *r);
/* The accumulator of the pair (src, dst), made when new; NULL when out of memory. */
struct cell_acc *rcn_cell_get(struct run *r, int src, int dst);
/* An owner's rollup key and its hash, made once for every pair it is credited on. */
struct rcn_owner {
    struct recon_rollup key;
    uint64_t hash;
};
void rcn_owner_init(struct rcn_owner *o, const char *source, const char *workflow, const char *user,
                    const char *program, const char *host, const struct recon_kube *kube);
/* rcn_attribute for an owner made by rcn_owner_init (its key's sites are overwritten). */
int rcn_attribute_owner(struct run *r, int src, int dst, struct rcn_owner *o, uint64_t bytes);
/* Credits bytes of one kind between two sites to one owner (kube: NULL outside pods) on every
 * hop of the pair's path: the cells and the rollup. 0 or -1 (out of memory). */
int rcn_attribute(struct run *r, int src, int dst, const char *source, const char *workflow,
                  const char *user, const char *program, const char *host,
                  const struct recon_kube *kube, uint64_t bytes);
int rcn_add_nfs_flow(struct run *r, const struct recon_flow *f, struct recon_result *out);
int rcn_add_transfer(struct run *r, const struct recon_transfer *t, int64_t ws, int64_t we,
                     struct recon_result *out);

/* The site of a host's first socket flow with one (recon_socket.c), or -1. */
int rcn_host_site(const struct run *r, const char *host);
/* recon_socket.c: every flow and transfer of the window into r (which holds the circuits'
 * cells already), split across n threads (rcn_threads). 0 or -1 (out of memory). */
int rcn_flows(struct run *r, int n, int64_t ws, int64_t we, struct recon_result *out);
/* The threads a run uses: recon_input.threads when set, else WL_RECON_THREADS (1..8) when set,
 * else one per 200,000 flows up to half the online cores (at most 4). */
int rcn_threads(const struct recon_input *in);

#endif
