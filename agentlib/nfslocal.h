/* The client address of NFS flows: the address this host uses to reach each NFS server, so the
 * reconciler can place the client in a site even on a host that has no socket flows. */
#ifndef WL_NFSLOCAL_H
#define WL_NFSLOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"

struct nfslocal;

/* ttl_us: how long an answer is reused before it is asked again (routes can change). */
struct nfslocal *nfslocal_new(int64_t ttl_us) __attribute__((warn_unused_result));
void nfslocal_free(struct nfslocal *nl); /* accepts NULL */

/* The source address the kernel picks for server ("10.2.0.50:2049", "[fd00::50]:2049") in the
 * caller's network namespace: a UDP socket connect()ed to it (which sends nothing), then
 * getsockname(). A loopback server gives the loopback address. Answers (also failures) are
 * cached per server string for ttl_us. Returns 0 with family/addr (IPv4 as its 4 bytes at the
 * start of addr, like flow_rec.laddr), or -1 when server does not parse or has no route. */
int nfslocal_lookup(struct nfslocal *nl, const char *server, int64_t now_us, uint8_t *family,
                    uint8_t addr[16]);

/* Sets family/laddr of every NFS flow of fs whose server has a client address; others keep
 * family 0 (the report then leaves "local" out). Returns how many flows got one. */
size_t nfslocal_fill(struct nfslocal *nl, struct flowset *fs, int64_t now_us);

#endif
