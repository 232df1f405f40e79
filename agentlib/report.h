/* The agent's window report as DESIGN.md's POST /v1/attributions body. */
#ifndef WL_REPORT_H
#define WL_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"

struct report_header {
    const char *host;
    const char *agent_id;
    uint64_t seq;
    int64_t window_start_us; /* aligned to window_seconds */
    int window_seconds;
    uint64_t dropped_events;
    size_t k;
    double threshold; /* tau; 0 when every flow is exact */
    size_t flows_seen;
};

/* Formats "10.1.0.2:41522" or "[fd00::2]:5201" (IPv4-mapped IPv6 as IPv4). */
void report_format_endpoint(uint8_t family, const uint8_t addr[16], uint16_t port, char *out,
                            size_t outlen);
const char *report_role_name(int role);

/* One JSON object on one line (malloc'd, caller frees), or NULL with err. */
char *report_json(const struct report_header *h, const struct flowset *fs, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
