/* Namespaces, processes and report parsing for the agent's tests. */
#include "agent_testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char g_ns[8][64];
static int g_nns;

static void del_netns(void)
{
    for (int i = 0; i < g_nns; i++)
        th_sh("ip netns del %s 2>/dev/null", g_ns[i]);
    g_nns = 0;
}

int atl_netns_pair(const char *a, const char *b, const char *ipa, const char *ipb)
{
    if (g_nns == 0)
        atexit(del_netns);
    th_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", a, b);
    if (g_nns + 2 <= 8) {
        snprintf(g_ns[g_nns++], sizeof(g_ns[0]), "%s", a);
        snprintf(g_ns[g_nns++], sizeof(g_ns[0]), "%s", b);
    }
    return th_sh("set -e; ip netns add %s; ip netns add %s; "
                 "ip link add %s-v type veth peer name %s-v netns %s; "
                 "ip link set %s-v netns %s; "
                 "ip -n %s addr add %s/24 dev %s-v; ip -n %s addr add %s/24 dev %s-v; "
                 "ip -n %s link set %s-v up; ip -n %s link set %s-v up; "
                 "ip -n %s link set lo up; ip -n %s link set lo up",
                 a, b, a, b, b, a, a, a, ipa, a, b, ipb, b, a, a, b, b, a, b) == 0
               ? 0
               : -1;
}

const char *atl_bin(const char *name)
{
    static char buf[4][1024];
    static int k;
    const char *dir = getenv("WL_BUILD_DIR");
    char *out = buf[k++ % 4];
    snprintf(out, 1024, "%s/tests/agent/%s", dir ? dir : ".", name);
    return out;
}

static pid_t g_kids[64];
static int g_nkids;

/* At exit, children still running (a failed assertion skipped their stop) are terminated; ones
 * already reaped are left alone (waitpid fails for them, so a reused pid is never signalled). */
static void stop_kids(void)
{
    for (int i = 0; i < g_nkids; i++) {
        int st;
        if (waitpid(g_kids[i], &st, WNOHANG) != 0)
            continue;
        kill(g_kids[i], SIGTERM);
        for (int w = 0; w < 100 && waitpid(g_kids[i], &st, WNOHANG) == 0; w++)
            usleep(20000);
        if (waitpid(g_kids[i], &st, WNOHANG) == 0) {
            kill(g_kids[i], SIGKILL);
            waitpid(g_kids[i], &st, 0);
        }
    }
    g_nkids = 0;
}

pid_t atl_spawn(char *const argv[], const char *out_path, const char *err_path)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid > 0) {
        if (g_nkids == 0)
            atexit(stop_kids);
        if (g_nkids < 64)
            g_kids[g_nkids++] = pid;
        return pid;
    }
    if (pid < 0)
        return pid;
    /* never outlive the test, even if it crashes */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    if (out_path) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            close(fd);
        }
    }
    if (err_path) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

pid_t atl_agent_spawn(const char *out, const char *log, ...)
{
    char *argv[64] = {(char *)th_bin("wanledger-agent")};
    int n = 1;
    va_list ap;
    va_start(ap, log);
    for (const char *x; (x = va_arg(ap, const char *)) != NULL && n < 63;)
        argv[n++] = (char *)x;
    va_end(ap);
    argv[n] = NULL;
    pid_t pid = atl_spawn(argv, out, log);
    if (pid < 0 || atl_wait_contains(log, "reporting to", 15000) != 0) {
        fprintf(stderr, "atl_agent_spawn: the agent did not start (log %s)\n", log);
        return -1;
    }
    return pid;
}

int atl_agent_start(struct atl_agent *a, const char *dir, const char *tag, const char *ns,
                    int window, char *const extra[])
{
    char win[16], nspath[160];
    snprintf(a->rep, sizeof a->rep, "%s/%s.jsonl", dir, tag);
    snprintf(a->log, sizeof a->log, "%s/%s.log", dir, tag);
    snprintf(a->spool, sizeof a->spool, "%s/%s-spool", dir, tag);
    snprintf(win, sizeof win, "%d", window);
    char *argv[48] = {(char *)th_bin("wanledger-agent"), "--stdout", "--window", win};
    int n = 4;
    if (ns) {
        snprintf(nspath, sizeof nspath, "/run/netns/%s", ns);
        argv[n++] = "--netns";
        argv[n++] = nspath;
    }
    argv[n++] = "--spool";
    argv[n++] = a->spool;
    for (int i = 0; extra && extra[i] && n < 47; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    a->pid = atl_spawn(argv, a->rep, a->log);
    if (a->pid < 0 || atl_wait_contains(a->log, "reporting to", 15000) != 0) {
        fprintf(stderr, "atl_agent_start %s: the agent did not start (log %s)\n", tag, a->log);
        return -1;
    }
    return 0;
}

struct atl_sum *atl_sum_of(struct atl_sums *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].key, key))
            return &s->v[i];
    if (s->n >= sizeof(s->v) / sizeof(s->v[0]))
        return NULL;
    struct atl_sum *e = &s->v[s->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->key, sizeof(e->key), "%s", key);
    return e;
}

int atl_load_truth(const char *path, struct atl_sums *s)
{
    FILE *f = fopen(path, "r");
    char proto[8], l[64], r[64];
    unsigned long long tx, rx;
    if (!f)
        return -1;
    int rc = 0;
    while (rc == 0 && fscanf(f, "%7s %63s %63s %llu %llu", proto, l, r, &tx, &rx) == 5) {
        char key[160];
        snprintf(key, sizeof(key), "%s %s %s", proto, l, r);
        struct atl_sum *e = atl_sum_of(s, key);
        if (!e) {
            rc = -1;
            break;
        }
        e->tx += tx;
        e->rx += rx;
    }
    fclose(f);
    return rc;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = s ? fread(s, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    fclose(f);
    if (s)
        s[got] = '\0';
    return s;
}

int atl_wait_contains(const char *path, const char *needle, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        char *s = slurp(path);
        int found = s && strstr(s, needle);
        free(s);
        if (found)
            return 0;
        usleep(50000);
    }
    return -1;
}

int atl_wait_exit(pid_t pid, int timeout_ms)
{
    int st;
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* A version 2 report's procs[proc] members copied into each of its flows, as the reconciler
 * reads them (reconciler/ingest_owner.c): -1 when a flow names no entry or carries a member of
 * its entry itself. */
static int resolve_procs(cJSON *rep)
{
    if (atl_num(rep, "version") != 2)
        return 0;
    const cJSON *procs = cJSON_GetObjectItemCaseSensitive(rep, "procs");
    cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rep, "flows"))
    {
        const cJSON *idx = cJSON_GetObjectItemCaseSensitive(f, "proc");
        const cJSON *p = cJSON_IsNumber(idx) ? cJSON_GetArrayItem(procs, idx->valueint) : NULL;
        if (!cJSON_IsObject(p))
            return -1;
        const cJSON *m;
        cJSON_ArrayForEach(m, p)
        {
            if (cJSON_GetObjectItemCaseSensitive(f, m->string))
                return -1;
            cJSON_AddItemToObject(f, m->string, cJSON_Duplicate(m, true));
        }
    }
    return 0;
}

int atl_reports_load(const char *path, struct atl_reports *out)
{
    char *s = slurp(path);
    memset(out, 0, sizeof(*out));
    if (!s)
        return -1;
    size_t cap = 0;
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != '{')
            continue;
        cJSON *j = cJSON_Parse(line);
        if (!j)
            continue;
        if (resolve_procs(j) < 0) {
            fprintf(stderr, "a version 2 report whose flow names no process of procs[]: %.200s\n",
                    line);
            cJSON_Delete(j);
            free(s);
            atl_reports_free(out);
            return -1;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            out->r = realloc(out->r, cap * sizeof(*out->r));
        }
        out->r[out->n++] = j;
    }
    free(s);
    return 0;
}

void atl_reports_free(struct atl_reports *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        cJSON_Delete(rs->r[i]);
    free(rs->r);
    memset(rs, 0, sizeof(*rs));
}

long long atl_num(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

const char *atl_str(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}
