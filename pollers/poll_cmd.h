/* `wanledger poll`: see recon_cmd.h for the conventions. */
#ifndef WL_POLL_CMD_H
#define WL_POLL_CMD_H

#include "config.h"

int poll_cmd_poll(const struct cfg *cfg, int argc, char **argv);

#endif
