/* `wanledger ship`: tails data-transfer service logs (NDJSON) and posts them to /v1/transfers. */
#ifndef WL_SHIP_H
#define WL_SHIP_H

#include "config.h"

int ship_cmd(const struct cfg *cfg, int argc, char **argv);

#endif
