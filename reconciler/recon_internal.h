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

/* Up to this many sites a run finds a pair's path in an array by pair (4 bytes a pair: 16 MB at
 * 2,048 sites, touched only where pairs carry bytes), above it in a hash index. */
#define RCN_DIRECT_PATH_SITES 2048

struct pair_path {
    uint64_t key;
    size_t off, len; /* into run.path_sites and run.path_cells */
};

struct cell_acc {
    uint64_t key;
    struct recon_cell cell;
    double payload;
};

/* A connection, per side (0, 1): its sums, its owner flow (an index in recon_input.flows), role
 * and whether it was reported. The key (protocol and both endpoints) is read from a side's owner
 * flow: a flow on side s has its local endpoint at s (recon_socket.c flow_side). 48 bytes. */
struct conn {
    uint64_t tx[2], rx[2];
    uint32_t owner[2];
    uint8_t role[2]; /* enum recon_role */
    bool seen[2];
    uint8_t owner_part; /* the thread that credits it (recon_socket.c) */
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

/* A rollup row while it accumulates, in its owner's table: key = cell + 1 (0 = empty). */
struct rcn_roll_slot {
    uint64_t key, bytes;
};

/* An interned owner of rollup rows: source and strings (its key's sites and bytes unused), and
 * its rows on the cells while they accumulate (open addressing; an owner's rows are near one
 * another in memory, and the flows of one report mostly share a few owners, so adding to a row
 * mostly reads a cache line read just before). */
struct rcn_owner_ent {
    struct recon_rollup key;
    uint64_t hash;     /* rcn_owner_hash */
    int64_t dep_owner; /* its id in run.deps (recon_deps_owner), made when first needed; -1 */
    struct rcn_roll_slot *rows;
    uint32_t cap, n; /* cap: 0 or a power of two */
};

struct rcn_owners {
    struct rcn_owner_ent *v;
    size_t n, cap;
    struct hix ix;
    size_t last1;  /* the last owner found + 1, looked at first; 0: none */
    size_t n_rows; /* rows in the owners' tables */
};

/* A rollup row, once the owners' tables are flattened: an owner (rcn_owners) on a cell. */
struct rcn_roll {
    uint64_t bytes;
    uint32_t owner, cell;
};

/* A connection index: slot = hash tag (high 32 bits) | conn index + 1 (low 32), 0 = empty. */
struct conn_ix {
    uint64_t *slots;
    size_t cap, n; /* cap: a power of two */
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
    uint32_t *path_cells; /* the cell of each hop (path_sites[i], path_sites[i + 1]) */
    uint32_t *path_of;    /* path index + 1 by src * n_sites + dst (0: none yet), instead of
                           * path_ix, with at most RCN_DIRECT_PATH_SITES sites */
    size_t n_path_sites, cap_path_sites, cap_path_cells;
    struct rcn_owners owners;
    struct rcn_roll *rolls; /* the owners' rows, once flattened (rcn_roll_merge, rcn_roll_finish) */
    size_t n_rolls, cap_rolls;
    struct conn *conns;
    size_t n_conns, cap_conns;
    struct conn_ix conn_ix;
    struct host_site *hosts;
    size_t n_hosts, cap_hosts;
    struct hix host_ix;
    size_t host_last1;            /* the last host found + 1, looked at first; 0: none */
    struct recon_addr last_local; /* the last socket flow's local address and its site */
    int last_local_site;
    bool last_local_ok;
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
/* Owners (recon_rollup.c): the hash of an owner's key (NULL strings = ""); its id in t (made when
 * new; hash: NULL, or the key's rcn_owner_hash), or -1 when out of memory. */
uint64_t rcn_owner_hash(const char *source, const char *workflow, const char *user,
                        const char *program, const char *host, const struct recon_kube *kube);
int rcn_owners_init(struct rcn_owners *t, size_t expect);
void rcn_owners_free(struct rcn_owners *t);
int64_t rcn_owner_id_h(struct rcn_owners *t, const uint64_t *hash, const char *source,
                       const char *workflow, const char *user, const char *program,
                       const char *host, const struct recon_kube *kube);
int64_t rcn_owner_id(struct rcn_owners *t, const char *source, const char *workflow,
                     const char *user, const char *program, const char *host,
                     const struct recon_kube *kube);
/* Adds bytes to the row (owner, cell). 0 or -1 (out of memory). */
int rcn_roll_add(struct run *r, uint32_t owner, uint32_t cell, uint64_t bytes);
/* rk's owners and rows appended to r0's (cell_map: rk's cell index -> r0's); no row is added to
 * either after it. 0 or -1. */
int rcn_roll_merge(struct run *r0, struct run *rk, const uint32_t *cell_map);
/* The rows into out->rollup in its order (cell_pos: a cell's place in out->cells). 0 or -1. */
int rcn_roll_finish(struct run *r, const uint32_t *cell_pos, struct recon_result *out);
/* rcn_attribute for an owner of r->owners. */
int rcn_attribute_owner(struct run *r, int src, int dst, uint32_t owner, uint64_t bytes);
/* rcn_attribute_owner in two steps, for a loop that asks for the memory of an item ahead of its
 * use: the index of the pair's path in r->paths (made when new; -1: out of memory), the memory
 * of its cells and of the owner's rows on them asked for, and the bytes credited (bytes > 0). */
int64_t rcn_path(struct run *r, int src, int dst);
void rcn_path_prefetch(const struct run *r, size_t path, uint32_t owner);
int rcn_attribute_path(struct run *r, size_t path, uint32_t owner, uint64_t bytes);
/* Asks for the memory of the row (owner, cell). */
void rcn_roll_prefetch(const struct run *r, uint32_t owner, uint32_t cell);
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
