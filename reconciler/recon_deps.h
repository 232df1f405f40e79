/* The dependency map of one window (docs/design.md "Dependency map"): per owner (workflow, user,
 * program) and its local site, every remote endpoint it exchanged bytes with — a configured
 * endpoint, an NFS server and export, a transfer service's remote end, else the listening side's
 * address:port — with the bytes each way and the connections. Built during recon_run from the
 * same de-duplicated figures as the attribution rollup, so the two always agree. Pure. */
#ifndef WL_RECON_DEPS_H
#define WL_RECON_DEPS_H

#include <stddef.h>
#include <stdint.h>

#include "hindex.h"

enum recon_dep_kind {
    RECON_DEP_PEER,     /* address:port of the listening side (or address of a remote client) */
    RECON_DEP_SERVICE,  /* a configured endpoint ($.endpoints) */
    RECON_DEP_NFS,      /* NFS server address and export */
    RECON_DEP_TRANSFER, /* a transfer service and the remote end of the transfer */
};

/* "peer", "service", "nfs", "transfer". */
const char *recon_dep_kind_name(enum recon_dep_kind k);

struct recon_dep {
    int local_site, remote_site;
    const char *workflow, *user, *program; /* borrowed from the inputs; never NULL */
    enum recon_dep_kind kind;
    char *endpoint;       /* owned */
    uint64_t bytes_out;   /* local site -> remote site */
    uint64_t bytes_in;    /* remote site -> local site */
    uint64_t connections; /* socket connections, NFS records or transfers */
};

/* The accumulator (its members are recon_deps.c's): the distinct owners (workflow, user,
 * program), each with its rows while they accumulate, each row a 64-byte slot of the owner's
 * open-addressing table holding its key (sites, kind, the endpoint inline when short) and its
 * sums: adding to a row reads one cache line, and an owner's rows are near one another (the
 * flows of one report mostly share a few owners). */
struct recon_deps_slot;

struct recon_deps_owner {
    const char *workflow, *user, *program; /* borrowed; never NULL */
    uint64_t hash;
    struct recon_deps_slot *slots;
    uint32_t cap, n; /* cap: 0 or a power of two */
};

struct recon_deps_acc {
    struct recon_deps_owner *owners;
    size_t n_owners, cap_owners;
    struct hix owner_ix;
    size_t owner_last1; /* the last owner found + 1, looked at first; 0: none */
    size_t n;           /* rows */
};

int recon_deps_init(struct recon_deps_acc *a, size_t expect) __attribute__((warn_unused_result));
/* Adds to the row of this key (strings borrowed, endpoint copied). 0 or -1 (out of memory). */
int recon_deps_add(struct recon_deps_acc *a, int local_site, int remote_site, const char *workflow,
                   const char *user, const char *program, enum recon_dep_kind kind,
                   const char *endpoint, uint64_t bytes_out, uint64_t bytes_in,
                   uint64_t connections) __attribute__((warn_unused_result));
/* The id of an owner (NULL = ""), for callers that add many rows for one (recon_deps_add_o);
 * -1 when out of memory. */
int64_t recon_deps_owner(struct recon_deps_acc *a, const char *workflow, const char *user,
                         const char *program);
/* recon_deps_add for the owner recon_deps_owner gave. */
int recon_deps_add_o(struct recon_deps_acc *a, uint32_t owner, int local_site, int remote_site,
                     enum recon_dep_kind kind, const char *endpoint, uint64_t bytes_out,
                     uint64_t bytes_in, uint64_t connections) __attribute__((warn_unused_result));
/* Asks for the memory of the row recon_deps_add_o would add to (a hint: nothing changes); the
 * hash of its key, for recon_deps_add_oh. */
uint64_t recon_deps_prefetch(const struct recon_deps_acc *a, uint32_t owner, int local_site,
                             int remote_site, enum recon_dep_kind kind, const char *endpoint);
/* recon_deps_add_o with the key's hash that recon_deps_prefetch gave. */
int recon_deps_add_oh(struct recon_deps_acc *a, uint32_t owner, uint64_t hash, int local_site,
                      int remote_site, enum recon_dep_kind kind, const char *endpoint,
                      uint64_t bytes_out, uint64_t bytes_in, uint64_t connections)
    __attribute__((warn_unused_result));
/* Every row of from added to into's. 0 or -1. */
int recon_deps_merge(struct recon_deps_acc *into, const struct recon_deps_acc *from)
    __attribute__((warn_unused_result));
/* The rows (sorted by local site, owner, then bytes descending), copied out (a unchanged: free it
 * with recon_deps_acc_free). 0, or -1 (out of memory). */
int recon_deps_take(struct recon_deps_acc *a, struct recon_dep **rows, size_t *n)
    __attribute__((warn_unused_result));
void recon_deps_acc_free(struct recon_deps_acc *a);
void recon_deps_free(struct recon_dep *rows, size_t n);

#endif
