/* Roles of TCP connections the kernel did not see start (older than the agent): a connection
 * whose local port is a listening port of its network namespace was accepted (server); one whose
 * local port is not was connected (client); unknown when the table cannot be read. */
#ifndef WL_LISTENROLES_H
#define WL_LISTENROLES_H

#include "flowset.h"

/* Sets role on every TCP flow of fs whose role is WL_ROLE_UNKNOWN, reading
 * PROC/PID/net/tcp and tcp6 of a live owner (proc_root NULL = "/proc"). */
void listenroles_fill(struct flowset *fs, const char *proc_root);

#endif
