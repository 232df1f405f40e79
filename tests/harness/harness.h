/* Test harness for real servers: a throwaway PostgreSQL 15 cluster, free loopback ports, child
 * processes, and the skip rule (exit 77 outside CI; with CI=true a missing prerequisite fails). */
#ifndef WL_HARNESS_H
#define WL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TH_SKIP 77

/* When cond is false: outside CI prints "SKIP: why" and exits 77; with CI=true prints
 * "FAIL: required in CI: why" and exits 1. */
void th_require(bool cond, const char *why);
/* th_require(geteuid() == 0, ...) */
void th_require_root(void);

/* A free TCP port on 127.0.0.1 (bound and released; racy only against other processes). */
int th_free_port(void);
/* Same for UDP. */
int th_free_udp_port(void);

struct th_pg {
    char dir[256]; /* temporary directory (owned by postgres) */
    int port;
    char conninfo[256]; /* "host=127.0.0.1 port=N dbname=wanledger user=postgres" */
    bool running;
};

/* initdb as the postgres user into a fresh temporary directory, start on a free loopback port,
 * create database "wanledger". Returns 0 or -1 (message on stderr). */
int th_pg_start(struct th_pg *pg);
/* Stops the server and removes the directory. Safe to call twice. */
void th_pg_stop(struct th_pg *pg);
/* Starts PostgreSQL (skipping/failing by th_require when that is impossible) and applies the
 * migrations; returns the conninfo. Registers th_pg_stop at exit. */
const char *th_pg_default(void);

/* Runs argv (argv[0] a path or PATH name) as a child; returns its pid or -1. stdout/stderr go to
 * the given file (NULL keeps the test's). */
pid_t th_spawn(char *const argv[], const char *log_path);
/* SIGTERM, then SIGKILL after timeout_ms; returns the exit status (waitpid form) or -1. */
int th_stop(pid_t pid, int timeout_ms);
/* Runs a shell command, returns its exit code (or -1). */
int th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* snprintf into dst of n bytes; a result that does not fit aborts the test with what it was (a
 * truncated path or name in a test is a bug of the test, never a value to go on with). */
void th_strfmt(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Waits until a TCP connect to 127.0.0.1:port succeeds; 0 or -1 after timeout_ms. */
int th_wait_port(int port, int timeout_ms);
/* Path of a built program ("wanledger", "wanledger-agent") from WL_BUILD_DIR (set by ctest). */
const char *th_bin(const char *name);
/* A process's resident set (VmRSS) in kB, -1 when it cannot be read. */
long th_rss_kb(pid_t pid);
/* How many descriptors a process has open (/proc/PID/fd), 0 when it cannot be read. */
int th_open_fds(pid_t pid);
/* A fresh temporary directory (mkdtemp under /tmp), removed at exit unless WL_KEEP_TMP is set. */
const char *th_tmpdir(const char *tag);

#endif
