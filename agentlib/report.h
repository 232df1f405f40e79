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
    /* counts the agent lost (restarted without its pinned probe): [lost_from_us, lost_to_us),
     * reported when lost_to_us > 0 as "lost" (README.md "Restarts") */
    int64_t lost_from_us, lost_to_us;
    const char *lost_reason;
    /* reports the bounded spool dropped so far (cumulative), as "spool": {"dropped_reports"} */
    uint64_t spool_dropped_reports;
    /* 2 (0 means 2): each process once in "procs", each flow naming it with "proc"; 1: the
     * process's fields in every flow, for reconcilers that accept only version 1 */
    int version;
};

/* Formats "10.1.0.2:41522" or "[fd00::2]:5201" (IPv4-mapped IPv6 as IPv4). */
void report_format_endpoint(uint8_t family, const uint8_t addr[16], uint16_t port, char *out,
                            size_t outlen);
const char *report_role_name(int role);

/* Bytes report_clean_text may write for an input of len bytes (each byte may become U+FFFD). */
#define REPORT_CLEAN_LEN(len) (3 * (len) + 1)

/* Copies s into out (outlen bytes, at least REPORT_CLEAN_LEN(strlen(s)) to keep all of it) as
 * valid UTF-8 without control characters: every byte that does not start a well-formed UTF-8
 * sequence (stray continuation bytes, overlongs, surrogates, beyond U+10FFFF, truncated
 * sequences) and every control character (U+0001-U+001F, U+007F, U+0080-U+009F) becomes U+FFFD.
 * Kernel and /proc strings (comm, exe, cgroup paths, environment values, user names) are bytes,
 * and one invalid byte would make the reconciler refuse the whole report. A cut at outlen never
 * splits a character. Returns out. */
char *report_clean_text(const char *s, char *out, size_t outlen);

/* One JSON object on one line (malloc'd, caller frees), or NULL with err. */
char *report_json(const struct report_header *h, const struct flowset *fs, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
