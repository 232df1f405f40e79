/* `wanledger throttle add|list|proposals|approve|revoke|kill-switch`: the rules API
 * (throttle_api.h) from the command line, with the first operator token of the tokens file. */
#ifndef WL_THROTTLE_CMD_H
#define WL_THROTTLE_CMD_H

#include <stdint.h>

#include "config.h"

int thr_cmd(const struct cfg *cfg, int argc, char **argv);

/* "40Mbit", "1.5Gbit", "500kbit", "40000000" (bit/s; k/M/G are powers of 1000) -> bit/s. */
int thr_parse_rate(const char *s, uint64_t *bps) __attribute__((warn_unused_result));
/* "600", "600s", "10m", "2h", "1d" -> seconds. */
int thr_parse_ttl(const char *s, uint64_t *secs) __attribute__((warn_unused_result));

#endif
