/* Helpers shared by the agent's tests: network namespaces joined by veth, running the agent and
 * the traffic tools with stdout and stderr apart, reading the agent's JSON-line reports. */
#ifndef WL_AGENT_TESTLIB_H
#define WL_AGENT_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/* Creates namespaces a and b joined by a veth pair (ipa/24, ipb/24, lo up); deletes any
 * leftovers of the same names first and registers their removal at exit. 0 or -1. */
int atl_netns_pair(const char *a, const char *b, const char *ipa, const char *ipb);
/* Path of a program built in this folder (WL_BUILD_DIR/tests/agent/NAME). */
const char *atl_bin(const char *name);
/* fork+exec with stdout to out_path and stderr to err_path (NULL: inherit). */
pid_t atl_spawn(char *const argv[], const char *out_path, const char *err_path);
/* Waits until path contains needle; 0 or -1 after timeout_ms. */
int atl_wait_contains(const char *path, const char *needle, int timeout_ms);
/* Waits for a child to exit by itself; its exit status (waitpid form) or -1 after timeout_ms
 * (then it is killed). */
int atl_wait_exit(pid_t pid, int timeout_ms);

/* A wanledger-agent run by a test: JSON-line reports (--stdout) in rep, its log in log, its
 * spool in spool, all DIR/TAG.* */
struct atl_agent {
    pid_t pid;
    char rep[512], log[512], spool[512];
};
/* Starts `wanledger-agent --stdout --window WINDOW [--netns /run/netns/NS] --spool DIR/TAG-spool
 * EXTRA...` (ns may be NULL, extra a NULL-terminated list or NULL) and waits up to 15 s for it
 * to say "reporting to". 0, or -1 (a message on stderr). */
int atl_agent_start(struct atl_agent *a, const char *dir, const char *tag, const char *ns,
                    int window, char *const extra[]);

/* Starts `wanledger-agent ARGS...` (a NULL-terminated list after log) with stdout to out and
 * stderr to log, and waits up to 15 s for it to say "reporting to"; its pid, or -1 (a message on
 * stderr). */
pid_t atl_agent_spawn(const char *out, const char *log, ...) __attribute__((sentinel));

/* Byte counts per flow ("proto local remote"), from the traffic program's truth files or the
 * agent's reports. */
struct atl_sum {
    char key[160];
    unsigned long long tx, rx;
    char role[16];
    int windows; /* windows in which it appeared */
};
struct atl_sums {
    struct atl_sum v[4096];
    size_t n;
};
/* The entry of key, added (zero) when new; NULL when the table is full. */
struct atl_sum *atl_sum_of(struct atl_sums *s, const char *key);
/* Adds the counts of a traffic program's truth file ("proto local remote tx rx" lines); 0 or -1
 * when it cannot be read or the table is full. */
int atl_load_truth(const char *path, struct atl_sums *s);

/* The agent reports in a file (lines starting with '{'), parsed; a version 2 report's flows
 * with their process's members (procs[proc]) copied in, as the reconciler reads them (-1 when a
 * flow names no entry). */
struct atl_reports {
    cJSON **r;
    size_t n;
};
int atl_reports_load(const char *path, struct atl_reports *out);
void atl_reports_free(struct atl_reports *rs);
/* Integer field of a JSON object (0 when absent). */
long long atl_num(const cJSON *o, const char *name);
/* String field ("" when absent). */
const char *atl_str(const cJSON *o, const char *name);

#endif
