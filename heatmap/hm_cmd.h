/* `wanledger heatmap` and `wanledger report`: see recon_cmd.h for the conventions. */
#ifndef WL_HM_CMD_H
#define WL_HM_CMD_H

#include "config.h"

int hm_cmd_heatmap(const struct cfg *cfg, int argc, char **argv);
int hm_cmd_report(const struct cfg *cfg, int argc, char **argv);

#endif
