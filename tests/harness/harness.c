/* Test harness: throwaway PostgreSQL clusters, ports, child processes and the CI skip rule. */
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"

#define PG_BIN "/usr/lib/postgresql/15/bin"

static int in_ci(void)
{
    const char *ci = getenv("CI");
    return ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0;
}

void th_require(bool cond, const char *why)
{
    if (cond)
        return;
    if (in_ci()) {
        fprintf(stderr, "FAIL: required in CI: %s\n", why);
        exit(1);
    }
    fprintf(stderr, "SKIP: %s\n", why);
    exit(TH_SKIP);
}

void th_require_root(void)
{
    th_require(geteuid() == 0, "this test needs root (BPF, network namespaces or servers)");
}

static int free_port(int type)
{
    int fd = socket(AF_INET, type, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int th_free_port(void)
{
    return free_port(SOCK_STREAM);
}

int th_free_udp_port(void)
{
    return free_port(SOCK_DGRAM);
}

void th_strfmt(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "th_strfmt: \"%s\" needs %d bytes, has %zu\n", fmt, len, n);
        abort();
    }
}

int th_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

pid_t th_spawn(char *const argv[], const char *log_path)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (log_path) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

int th_stop(pid_t pid, int timeout_ms)
{
    if (pid <= 0)
        return -1;
    kill(pid, SIGTERM);
    int st;
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    if (waitpid(pid, &st, 0) == pid)
        return st;
    return -1;
}

int th_wait_port(int port, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (ok)
            return 0;
        usleep(20000);
    }
    return -1;
}

/* Agents keep their probe pinned in bpffs across restarts (agentlib/README.md "Restarts"): a test
 * that ran one removes the pins at exit, so the programs do not stay attached after it. */
static void rm_agent_pins(void)
{
    if (geteuid() == 0 && system("rm -rf /sys/fs/bpf/wanledger") != 0)
        fprintf(stderr, "harness: could not remove /sys/fs/bpf/wanledger\n");
}

const char *th_bin(const char *name)
{
    static char buf[8][1024];
    static int k, pins_hooked;
    const char *dir = getenv("WL_BUILD_DIR");
    char *out = buf[k++ % 8];
    if (strcmp(name, "wanledger-agent") == 0 && !pins_hooked) {
        pins_hooked = 1;
        atexit(rm_agent_pins);
    }
    if (strcmp(name, "wanledger-agent") == 0)
        snprintf(out, 1024, "%s/agentlib/%s", dir ? dir : ".", name);
    else
        snprintf(out, 1024, "%s/cmd/%s", dir ? dir : ".", name);
    return out;
}

static char *g_tmpdirs[64];
static int g_ntmp;

static void rm_tmpdirs(void)
{
    if (getenv("WL_KEEP_TMP"))
        return;
    for (int i = 0; i < g_ntmp; i++) {
        th_sh("rm -rf '%s'", g_tmpdirs[i]);
        free(g_tmpdirs[i]);
    }
    g_ntmp = 0;
}

const char *th_tmpdir(const char *tag)
{
    char tmpl[256];
    snprintf(tmpl, sizeof(tmpl), "/tmp/wl-%s-XXXXXX", tag ? tag : "test");
    if (!mkdtemp(tmpl))
        return NULL;
    chmod(tmpl, 0755);
    if (g_ntmp == 0)
        atexit(rm_tmpdirs);
    if (g_ntmp == 64) { /* no room to remember it: remove it now rather than hand out another */
        rmdir(tmpl);
        return NULL;
    }
    g_tmpdirs[g_ntmp] = strdup(tmpl);
    return g_tmpdirs[g_ntmp++];
}

/* Runs a PostgreSQL tool as the postgres user when we are root (initdb refuses root). */
static int pg_run(const char *cmdline)
{
    if (geteuid() == 0)
        return th_sh("runuser -u postgres -- sh -c '%s' >>/tmp/wl-pg-harness.log 2>&1", cmdline);
    return th_sh("sh -c '%s' >>/tmp/wl-pg-harness.log 2>&1", cmdline);
}

int th_pg_start(struct th_pg *pg)
{
    memset(pg, 0, sizeof(*pg));
    snprintf(pg->dir, sizeof(pg->dir), "/tmp/wl-pg-XXXXXX");
    if (!mkdtemp(pg->dir)) {
        fprintf(stderr, "th_pg_start: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw || chown(pg->dir, pw->pw_uid, pw->pw_gid) != 0) {
            fprintf(stderr, "th_pg_start: no postgres user to own %s\n", pg->dir);
            return -1;
        }
    }
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             PG_BIN "/initdb -D %s/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 -N",
             pg->dir);
    if (pg_run(cmd) != 0) {
        fprintf(stderr, "th_pg_start: initdb failed (see /tmp/wl-pg-harness.log)\n");
        return -1;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        pg->port = th_free_port();
        snprintf(cmd, sizeof(cmd),
                 PG_BIN "/pg_ctl -D %s/data -l %s/log -w -t 60 -o \"-k %s -h 127.0.0.1 -p %d "
                        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                        "-c max_connections=60 -c shared_buffers=64MB\" start",
                 pg->dir, pg->dir, pg->dir, pg->port);
        if (pg_run(cmd) == 0) {
            pg->running = true;
            break;
        }
    }
    if (!pg->running) {
        fprintf(stderr, "th_pg_start: pg_ctl start failed (see %s/log)\n", pg->dir);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), PG_BIN "/createdb -h 127.0.0.1 -p %d -U postgres wanledger",
             pg->port);
    if (pg_run(cmd) != 0) {
        fprintf(stderr, "th_pg_start: createdb failed\n");
        th_pg_stop(pg);
        return -1;
    }
    snprintf(pg->conninfo, sizeof(pg->conninfo),
             "host=127.0.0.1 port=%d dbname=wanledger user=postgres", pg->port);
    return 0;
}

void th_pg_stop(struct th_pg *pg)
{
    if (!pg->dir[0])
        return;
    if (pg->running) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), PG_BIN "/pg_ctl -D %s/data -m immediate -w stop", pg->dir);
        pg_run(cmd);
        pg->running = false;
    }
    if (!getenv("WL_KEEP_TMP"))
        th_sh("rm -rf '%s'", pg->dir);
    pg->dir[0] = '\0';
}

static struct th_pg g_pg;

static void stop_default(void)
{
    th_pg_stop(&g_pg);
}

const char *th_pg_default(void)
{
    if (g_pg.running)
        return g_pg.conninfo;
    th_require(access(PG_BIN "/initdb", X_OK) == 0, "PostgreSQL 15 server binaries are missing");
    th_require(geteuid() == 0 || getpwnam("postgres") == NULL,
               "PostgreSQL tests run as root (to start the server as the postgres user)");
    if (th_pg_start(&g_pg) != 0) {
        th_require(false, "could not start a throwaway PostgreSQL cluster");
    }
    atexit(stop_default);
    char err[1024];
    PGconn *db = db_connect_str(g_pg.conninfo, err, sizeof(err));
    int applied = 0;
    if (!db || db_migrate(db, &applied, err, sizeof(err)) != 0) {
        fprintf(stderr, "th_pg_default: %s\n", err);
        if (db)
            PQfinish(db);
        exit(1);
    }
    PQfinish(db);
    return g_pg.conninfo;
}

long th_rss_kb(pid_t pid)
{
    char p[64], line[256];
    snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

int th_open_fds(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}
