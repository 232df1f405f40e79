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

struct recon_deps_acc {
    struct recon_dep *rows;
    uint64_t *owner_hash; /* per row: recon_deps_owner_hash of its workflow, user, program */
    size_t n, cap, cap_hash;
    struct hix ix;
};

int recon_deps_init(struct recon_deps_acc *a, size_t expect) __attribute__((warn_unused_result));
/* Adds to the row of this key (strings borrowed, endpoint copied). 0 or -1 (out of memory). */
int recon_deps_add(struct recon_deps_acc *a, int local_site, int remote_site, const char *workflow,
                   const char *user, const char *program, enum recon_dep_kind kind,
                   const char *endpoint, uint64_t bytes_out, uint64_t bytes_in,
                   uint64_t connections) __attribute__((warn_unused_result));
/* The hash of a row's owner part (NULL = ""), made once per owner by callers that add many
 * rows for one (recon_deps_add_h). */
uint64_t recon_deps_owner_hash(const char *workflow, const char *user, const char *program);
/* recon_deps_add with owner_hash = recon_deps_owner_hash(workflow, user, program). */
int recon_deps_add_h(struct recon_deps_acc *a, uint64_t owner_hash, int local_site, int remote_site,
                     const char *workflow, const char *user, const char *program,
                     enum recon_dep_kind kind, const char *endpoint, uint64_t bytes_out,
                     uint64_t bytes_in, uint64_t connections) __attribute__((warn_unused_result));
/* Hands the rows over (sorted by local site, owner, then bytes descending); a is emptied. 0, or -1
 * (out of memory: a unchanged). */
int recon_deps_take(struct recon_deps_acc *a, struct recon_dep **rows, size_t *n)
    __attribute__((warn_unused_result));
void recon_deps_acc_free(struct recon_deps_acc *a);
void recon_deps_free(struct recon_dep *rows, size_t n);

#endif
