/* Subcommands of `wanledger` that the reconciler owns. argv[0] is the subcommand name; the return
 * value is the exit code (0 ok, 2 usage/config error, 1 runtime failure). */
#ifndef WL_RECON_CMD_H
#define WL_RECON_CMD_H

#include "config.h"

int recon_cmd_reconcile(const struct cfg *cfg, int argc, char **argv);
int recon_cmd_top(const struct cfg *cfg, int argc, char **argv);
int recon_cmd_alerts(const struct cfg *cfg, int argc, char **argv);

#endif
