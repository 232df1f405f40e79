/* Helpers shared by the poller tests: files, and the samples printed by `wanledger poll --stdout`
 * (or received by a test HTTP server) as JSON batches. */
#ifndef WL_PT_UTIL_H
#define WL_PT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_sample {
    char device[64], interface[64];
    int64_t at_us;
    int64_t uptime_cs; /* -1 when absent */
    uint64_t in_octets, out_octets, in_pkts, out_pkts, speed_bps;
    int counter_bits;
    int64_t discontinuity_cs;
};

struct pt_samples {
    struct pt_sample *v;
    size_t n;
};

/* Parses every batch in text (one JSON object per line) and appends its samples. Returns the
 * number of batches, or -1 on a line that is not a valid batch. */
int pt_parse_batches(const char *text, struct pt_samples *out);
/* Same for one batch body. */
int pt_parse_batch(const char *body, size_t len, struct pt_samples *out);
void pt_samples_free(struct pt_samples *s);
/* Samples of (device, interface) in order into out (caller frees out->v). */
void pt_filter(const struct pt_samples *all, const char *device, const char *interface,
               struct pt_samples *out);

/* Whole file, NUL-terminated (empty string when missing); caller frees. */
char *pt_slurp(const char *path);
void pt_write(const char *path, const char *text);
/* Number of occurrences of needle in hay. */
int pt_count(const char *hay, const char *needle);

/* snmpd in network namespace ns with DIR/snmpd.conf (pid, log and persistent state in DIR),
 * waited for until it answers sysUpTime on 127.0.0.1:port (5 s); 0 or -1. */
int pt_snmpd_start(const char *dir, const char *ns, int port);
/* Sends sig to the snmpd pt_snmpd_start started in dir (if any) and gives it 0.3 s. */
void pt_snmpd_kill(const char *dir, int sig);

/* Loopback helpers for the gNMI listener tests: a connected TCP socket (-1 on failure), all of s
 * written (0 or -1), one UDP datagram (0 or -1). */
int pt_connect_tcp(int port);
int pt_send_all(int fd, const char *s);
int pt_send_udp(int port, const char *s);

#endif
