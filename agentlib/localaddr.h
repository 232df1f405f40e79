/* Traffic a host sends to itself: a socket bound to the wildcard address that talks to one of its
 * own addresses goes over the loopback device, but the kernel probe only sees 0.0.0.0 as the
 * local side. This drops such flows using each namespace's own address list. */
#ifndef WL_LOCALADDR_H
#define WL_LOCALADDR_H

#include <stddef.h>

#include "flowset.h"

/* Removes socket flows whose local address is the wildcard and whose remote address is a local
 * address of the flow's network namespace (from PROC/PID/net/fib_trie and if_inet6 of a live
 * process in that namespace; proc_root NULL = "/proc"). Returns how many were removed. */
size_t localaddr_drop_self(struct flowset *fs, const char *proc_root);

#endif
