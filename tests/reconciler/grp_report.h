/* Agent reports for the grouped-commit tests (test_ingest_group, tests/analytics/
 * test_ch_ingest_group): built as the agent posts them, parsed by the real ingest_parse, with the
 * byte sums a test compares with what the database holds, computed here from the same numbers
 * that went into the body (not read back from the batch). */
#ifndef WL_TEST_GRP_REPORT_H
#define WL_TEST_GRP_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ingest.h"

struct grp_report {
    struct ingest_batch b;
    size_t flows;
    long long tx_sum, rx_sum; /* of its flows */
};

/* Report seq of agent (host = agent) in the window starting at ws_us: flows socket flows, flow k
 * with tx_bytes base + k (special: flow 0 gets tx_bytes special instead when special > 0) and
 * rx_bytes k. Parsed at now_us; the test fails when ingest refuses it. */
void grp_report(struct grp_report *r, const struct cfg *cfg, const char *agent, long seq,
                int64_t ws_us, size_t flows, long long base, long long special, int64_t now_us);
void grp_report_free(struct grp_report *r);

#endif
