/* Parsing pieces of the agent: cgroup paths to container / pod / unit / Slurm job, endpoint
 * formatting, flag errors that name the flag, and the drain state's file format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_opts.h"
#include "agentmetrics.h"
#include "drainstate.h"
#include "harness.h"
#include "jsonv.h"
#include "nfslocal.h"
#include "nfsops.h"
#include "procmeta.h"
#include "report.h"
#include "timeutil.h"

static void test_cgroup_paths(void **state)
{
    (void)state;
    struct flow_meta m;
    const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char path[512];

    memset(&m, 0, sizeof(m));
    snprintf(path, sizeof(path),
             "/kubepods.slice/kubepods-besteffort.slice/"
             "kubepods-besteffort-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
             "cri-containerd-%s.scope",
             id);
    procmeta_parse_cgroup(path, &m);
    assert_string_equal(m.container, id);
    assert_string_equal(m.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");

    memset(&m, 0, sizeof(m));
    snprintf(path, sizeof(path), "/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/%s",
             id);
    procmeta_parse_cgroup(path, &m);
    assert_string_equal(m.container, id);
    assert_string_equal(m.pod_uid, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");

    memset(&m, 0, sizeof(m));
    snprintf(path, sizeof(path), "/system.slice/docker-%s.scope", id);
    procmeta_parse_cgroup(path, &m);
    assert_string_equal(m.container, id);

    memset(&m, 0, sizeof(m));
    procmeta_parse_cgroup("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", &m);
    assert_string_equal(m.slurm_job, "4242");
    assert_string_equal(m.unit, "slurmstepd.scope");

    memset(&m, 0, sizeof(m));
    procmeta_parse_cgroup("/system.slice/rsync-mirror.service", &m);
    assert_string_equal(m.unit, "rsync-mirror.service");
    assert_string_equal(m.container, "");
    assert_string_equal(m.pod_uid, "");

    memset(&m, 0, sizeof(m));
    procmeta_parse_cgroup("/user.slice/user-1000.slice/session-3.scope", &m);
    assert_string_equal(m.unit, "session-3.scope");
}

static void test_endpoints(void **state)
{
    (void)state;
    uint8_t a[16] = {0};
    char out[64];
    inet_pton(AF_INET, "10.1.0.2", a);
    report_format_endpoint(AF_INET, a, 41522, out, sizeof(out));
    assert_string_equal(out, "10.1.0.2:41522");
    inet_pton(AF_INET6, "fd00:1::2", a);
    report_format_endpoint(AF_INET6, a, 5201, out, sizeof(out));
    assert_string_equal(out, "[fd00:1::2]:5201");
    inet_pton(AF_INET6, "::ffff:10.2.0.9", a);
    report_format_endpoint(AF_INET6, a, 80, out, sizeof(out));
    assert_string_equal(out, "10.2.0.9:80");
}

static void expect_error(char **argv, int argc, const char *needle)
{
    struct agent_opts o;
    char err[512];
    assert_int_equal(agent_opts_parse(&o, argc, argv, err, sizeof(err)), -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
    agent_opts_free(&o);
}

static void test_flag_errors(void **state)
{
    (void)state;
    char *a1[] = {"agent", "--stdout", "--window", "0", NULL};
    expect_error(a1, 4, "--window");
    char *a2[] = {"agent", "--stdout", "--attach", "uprobe", NULL};
    expect_error(a2, 4, "--attach");
    char *a3[] = {"agent", "--window", "5", NULL};
    expect_error(a3, 3, "--reconciler");
    char *a4[] = {"agent", "--stdout", "--exclude-ports", "22,70000", NULL};
    expect_error(a4, 4, "--exclude-ports");
    char *a5[] = {"agent", "--reconciler", "ftp://x", NULL};
    expect_error(a5, 3, "http://");
    char *a6[] = {"agent", "--stdout", "--report-version", "3", NULL};
    expect_error(a6, 4, "--report-version: expected 1 or 2, got \"3\"");

    struct agent_opts o;
    char err[512];
    char *ok[] = {"agent",
                  "--stdout",
                  "--window",
                  "10",
                  "--k",
                  "50",
                  "--attach",
                  "tp_btf",
                  "--workflow-env",
                  "A,B,C",
                  "--exclude-ports",
                  "22,2049",
                  NULL};
    assert_int_equal(agent_opts_parse(&o, 12, ok, err, sizeof(err)), 0);
    assert_int_equal(o.window_seconds, 10);
    assert_int_equal(o.k, 50);
    assert_int_equal(o.attach, SOCKPROBE_TP_BTF);
    assert_int_equal(o.n_workflow_env, 3);
    assert_string_equal(o.workflow_env[2], "C");
    assert_int_equal(o.n_excl_ports, 2);
    assert_int_equal(o.excl_ports[1], 2049);
    assert_int_equal(o.report_version, 2); /* the default */
    agent_opts_free(&o);
    char *v1[] = {"agent", "--stdout", "--report-version", "1", NULL};
    assert_int_equal(agent_opts_parse(&o, 4, v1, err, sizeof(err)), 0);
    assert_int_equal(o.report_version, 1);
    agent_opts_free(&o);
}

static void test_config_file(void **state)
{
    (void)state;
    char path[] = "/tmp/wla-agent-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *json = "{\"window_seconds\": 7, \"k\": 9, \"workflow_env\": [\"A\", \"B\"],"
                       " \"host\": \"h1\"}";
    assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    struct agent_opts o;
    char err[512];
    char *argv[] = {"agent", "--config", path, "--stdout", "--k", "3", NULL};
    assert_int_equal(agent_opts_parse(&o, 6, argv, err, sizeof(err)), 0);
    assert_int_equal(o.window_seconds, 7); /* from the file */
    assert_int_equal(o.k, 3);              /* the flag wins */
    assert_int_equal(o.n_workflow_env, 2);
    assert_string_equal(o.workflow_env[1], "B");
    assert_string_equal(o.host, "h1");
    agent_opts_free(&o);

    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad = "{\"window_seconds\": 7, \"k\": \"many\"}";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    char *argv2[] = {"agent", "--config", path, "--stdout", NULL};
    assert_int_equal(agent_opts_parse(&o, 4, argv2, err, sizeof(err)), -1);
    char want[600];
    snprintf(want, sizeof(want), "%s: $.k: expected a flow count", path);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not start with \"%s\"", err, want);
    agent_opts_free(&o);
    unlink(path);
}

/* The token file is a secret: readable by group or others it is refused with its mode; 0600 is
 * read, its first line is the token. */
static void test_token_file_mode(void **state)
{
    (void)state;
    char path[] = "/tmp/wla-agent-tok-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cret\nrest\n", 12), 12);
    close(fd);
    assert_int_equal(chmod(path, 0644), 0);
    char *argv[] = {"agent", "--reconciler", "http://127.0.0.1:1", "--token-file", path, NULL};
    char want[600];
    snprintf(want, sizeof(want), "--token-file %s: mode 0644", path);
    expect_error(argv, 5, want);
    assert_int_equal(chmod(path, 0600), 0);
    struct agent_opts o;
    char err[512];
    assert_int_equal(agent_opts_parse(&o, 5, argv, err, sizeof(err)), 0);
    assert_string_equal(o.token, "s3cret");
    agent_opts_free(&o);
    unlink(path);
}

/* Strings from the kernel and /proc are bytes; the report must be valid UTF-8 without control
 * characters. Expected outputs are written out by hand: U+FFFD is EF BF BD. */
#define FFFD "\xef\xbf\xbd"
static void test_clean_text(void **state)
{
    (void)state;
    char out[128];
    /* two invalid bytes, a control character */
    assert_string_equal(report_clean_text("\xff\xfe"
                                          "bad\x01name",
                                          out, sizeof(out)),
                        FFFD FFFD "bad" FFFD "name");
    /* well-formed 2-, 3- and 4-byte characters stay as they are */
    assert_string_equal(
        report_clean_text("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", out, sizeof(out)),
        "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
    /* overlong "/" (C0 AF): C0 never starts a sequence, AF is a stray continuation */
    assert_string_equal(report_clean_text("a\xc0\xaf", out, sizeof(out)), "a" FFFD FFFD);
    /* a surrogate (ED A0 80): ED may not be followed by A0; then two stray continuations */
    assert_string_equal(report_clean_text("\xed\xa0\x80", out, sizeof(out)), FFFD FFFD FFFD);
    /* above U+10FFFF (F4 90 80 80) */
    assert_string_equal(report_clean_text("\xf4\x90\x80\x80z", out, sizeof(out)),
                        FFFD FFFD FFFD FFFD "z");
    /* a sequence cut by the end of the string */
    assert_string_equal(report_clean_text("ab\xe6\x97", out, sizeof(out)), "ab" FFFD FFFD);
    /* tab, newline, DEL and the C1 control U+0085 (C2 85); U+00A0 (C2 A0) is kept */
    assert_string_equal(report_clean_text("\t\n\x7f\xc2\x85\xc2\xa0", out, sizeof(out)),
                        FFFD FFFD FFFD FFFD "\xc2\xa0");
    /* a short buffer cuts between characters: "ab" + U+FFFD = 5 bytes, the next needs 3 more */
    assert_string_equal(report_clean_text("ab\xff\xff"
                                          "cd",
                                          out, 8),
                        "ab" FFFD);
    assert_string_equal(report_clean_text("", out, sizeof(out)), "");
}

/* A socket flow 10.1.0.2:lport -> 10.2.0.2:5201 (TCP), appended to fs. */
static struct flow_rec *sock_flow(struct flowset *fs, uint16_t lport)
{
    struct flow_rec *r = flowset_add(fs);
    assert_non_null(r);
    r->source = FLOW_SRC_SOCKET;
    r->family = AF_INET;
    r->proto = IPPROTO_TCP;
    inet_pton(AF_INET, "10.1.0.2", r->laddr);
    inet_pton(AF_INET, "10.2.0.2", r->raddr);
    r->lport = lport;
    r->rport = 5201;
    return r;
}

/* report_json's body for h and fs, read back with the strict reader (*root). */
static struct jv_doc *report_doc(const struct report_header *h, const struct flowset *fs,
                                 struct jv **root)
{
    char err[128];
    char *json = report_json(h, fs, err, sizeof(err));
    if (!json)
        fail_msg("report_json: %s", err);
    size_t n;
    struct jv_error e;
    struct jv_doc *d = jv_parse(json, strlen(json), false, root, &n, &e);
    if (!d)
        fail_msg("report_json wrote what the reader refuses: %s at %s", e.msg, e.path);
    free(json);
    return d;
}

/* Every string the report carries goes through the cleaning: owner fields of socket and NFS
 * flows, the NFS server and export, the host. */
static void test_report_json_clean(void **state)
{
    (void)state;
    struct flowset fs = {0};
    struct flow_meta meta;
    memset(&meta, 0, sizeof(meta));
    snprintf(meta.user, sizeof(meta.user), "us\xe9r"); /* Latin-1 e-acute */
    snprintf(meta.exe, sizeof(meta.exe), "/opt/\xff/run");
    snprintf(meta.workflow, sizeof(meta.workflow), "wf\x1b[31m"); /* an escape sequence */
    snprintf(meta.cgroup, sizeof(meta.cgroup), "/x\x80y.slice");
    struct flow_rec *r = sock_flow(&fs, 41522);
    r->tx_bytes = 10;
    snprintf(r->owner.comm, sizeof(r->owner.comm),
             "\xff\xfe"
             "bad\x01name");
    r->meta = &meta;
    r = flowset_add(&fs);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof(r->server), "10.2.0.50:2049");
    snprintf(r->export_path, sizeof(r->export_path), "/data/\xfe");
    snprintf(r->op, sizeof(r->op), "read");
    r->bytes = 4096;
    r->ops = 1;
    snprintf(r->owner.comm, sizeof(r->owner.comm), "ok");
    struct report_header h = {.host = "h\xc3", .agent_id = "a1", .seq = 1, .window_seconds = 60};
    char err[128];
    char *json = report_json(&h, &fs, err, sizeof(err));
    assert_non_null(json);
    assert_non_null(strstr(json, "\"host\":\"h" FFFD "\""));
    assert_non_null(strstr(json, "\"program\":\"" FFFD FFFD "bad" FFFD "name\""));
    assert_non_null(strstr(json, "\"user\":\"us" FFFD "r\""));
    assert_non_null(strstr(json, "\"exe\":\"/opt/" FFFD "/run\""));
    assert_non_null(strstr(json, "\"workflow\":\"wf" FFFD "[31m\""));
    assert_non_null(strstr(json, "\"cgroup\":\"/x" FFFD "y.slice\""));
    assert_non_null(strstr(json, "\"export\":\"/data/" FFFD "\""));
    /* no escaped control character is left either */
    assert_null(strstr(json, "\\u00"));
    free(json);
    flowset_free(&fs);
}

/* Counters above 2^53 reach the reconciler exactly: the report is read back with the strict
 * reader and every counter compared with what was put in (a double would give ...992 for
 * 2^53 + 1 and 18446744073709551616 for 2^64 - 1). */
static void test_report_json_exact(void **state)
{
    (void)state;
    struct flowset fs = {0};
    struct flow_rec *r = sock_flow(&fs, 41522);
    r->tx_bytes = (1ULL << 53) + 1;
    r->rx_bytes = UINT64_MAX;
    r->tx_calls = (1ULL << 60) + 3;
    r->rx_calls = 1;
    r->owner.pid = UINT32_MAX;
    snprintf(r->owner.comm, sizeof(r->owner.comm), "big");
    r = flowset_add(&fs);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof(r->server), "10.2.0.50:2049");
    snprintf(r->export_path, sizeof(r->export_path), "/data");
    snprintf(r->op, sizeof(r->op), "write");
    r->bytes = UINT64_MAX - 1;
    r->ops = (1ULL << 53) + 7;
    snprintf(r->owner.comm, sizeof(r->owner.comm), "nfs");
    struct report_header h = {.host = "h",
                              .agent_id = "a1",
                              .seq = UINT64_MAX - 5,
                              .window_seconds = 60,
                              .dropped_events = (1ULL << 53) + 11,
                              .k = 5,
                              .threshold = 0.1,
                              .flows_seen = 9};
    struct jv *root;
    struct jv_doc *d = report_doc(&h, &fs, &root);
    uint64_t u;
    assert_true(jv_u64(jv_get(root, "seq"), &u) && u == 18446744073709551610ULL);
    assert_true(jv_u64(jv_get(root, "dropped_events"), &u) && u == 9007199254741003ULL);
    assert_true(jv_get(jv_get(root, "sampling"), "threshold")->d == 0.1);
    const struct jv *f0 = jv_get(root, "flows")->child, *f1 = f0->next;
    const struct jv *p0 = jv_get(root, "procs")->child; /* f0's process (version 2) */
    assert_true(jv_u64(jv_get(f0, "proc"), &u) && u == 0);
    assert_true(jv_u64(jv_get(f0, "tx_bytes"), &u) && u == 9007199254740993ULL);
    assert_true(jv_u64(jv_get(f0, "rx_bytes"), &u) && u == 18446744073709551615ULL);
    assert_true(jv_u64(jv_get(f0, "tx_calls"), &u) && u == 1152921504606846979ULL);
    assert_true(jv_u64(jv_get(p0, "pid"), &u) && u == 4294967295ULL);
    assert_true(jv_u64(jv_get(f1, "bytes"), &u) && u == 18446744073709551614ULL);
    assert_true(jv_u64(jv_get(f1, "ops"), &u) && u == 9007199254740999ULL);
    jv_doc_free(d);
    flowset_free(&fs);
}

/* Version 2: each distinct process once in procs[], in order of first appearance, and every flow
 * naming its entry. Five flows: A (pid 7, "rsync", workflow w1), B (pid 8), A again, A's pid and
 * name with another workflow (another entry), and A's content under a second flow_meta copy (the
 * same entry: compared by content, not by pointer). Expected procs: A, B, A'; proc 0, 1, 0, 2, 0.
 */
static void test_report_json_procs(void **state)
{
    (void)state;
    struct flowset fs = {0};
    static struct flow_meta m1, m1copy, m2;
    snprintf(m1.workflow, sizeof m1.workflow, "w1");
    snprintf(m1.user, sizeof m1.user, "alice");
    m1copy = m1;
    m2 = m1;
    snprintf(m2.workflow, sizeof m2.workflow, "w2");
    const struct {
        uint32_t pid;
        const struct flow_meta *meta;
    } spec[] = {{7, &m1}, {8, &m1}, {7, &m1}, {7, &m2}, {7, &m1copy}};
    for (size_t i = 0; i < 5; i++) {
        struct flow_rec *r = sock_flow(&fs, (uint16_t)(40000 + i));
        r->tx_bytes = 100 + i;
        r->owner.pid = spec[i].pid;
        r->owner.uid = 1000;
        snprintf(r->owner.comm, sizeof r->owner.comm, "rsync");
        r->meta = spec[i].meta;
    }
    struct report_header h = {.host = "h", .agent_id = "a1", .seq = 3, .window_seconds = 60};
    struct jv *root;
    struct jv_doc *d = report_doc(&h, &fs, &root);
    uint64_t u;
    assert_true(jv_u64(jv_get(root, "version"), &u) && u == 2);
    const struct jv *procs = jv_get(root, "procs");
    assert_int_equal(procs->type, JV_ARRAY);
    assert_int_equal(procs->n, 3);
    const struct jv *p = procs->child;
    const char *want_wf[] = {"w1", "w1", "w2"};
    const uint64_t want_pid[] = {7, 8, 7};
    for (int k = 0; k < 3; k++, p = p->next) {
        assert_true(jv_u64(jv_get(p, "pid"), &u) && u == want_pid[k]);
        assert_string_equal(jv_get(p, "workflow")->s, want_wf[k]);
        assert_string_equal(jv_get(p, "user")->s, "alice");
        assert_string_equal(jv_get(p, "program")->s, "rsync");
    }
    const uint64_t want_proc[] = {0, 1, 0, 2, 0};
    const struct jv *f = jv_get(root, "flows")->child;
    for (int i = 0; i < 5; i++, f = f->next) {
        assert_true(jv_u64(jv_get(f, "proc"), &u) && u == want_proc[i]);
        assert_true(jv_u64(jv_get(f, "tx_bytes"), &u) && u == 100u + (unsigned)i);
        assert_null(jv_get(f, "pid")); /* the process is only in procs[] */
        assert_null(jv_get(f, "program"));
    }
    assert_null(f);
    jv_doc_free(d);
    /* --report-version 1: no procs, every flow with its owner's members */
    h.version = 1;
    d = report_doc(&h, &fs, &root);
    assert_true(jv_u64(jv_get(root, "version"), &u) && u == 1);
    assert_null(jv_get(root, "procs"));
    f = jv_get(root, "flows")->child;
    for (int i = 0; i < 5; i++, f = f->next) {
        assert_null(jv_get(f, "proc"));
        assert_true(jv_u64(jv_get(f, "pid"), &u) && u == want_pid[want_proc[i]]);
        assert_string_equal(jv_get(f, "workflow")->s, want_wf[want_proc[i]]);
        assert_string_equal(jv_get(f, "program")->s, "rsync");
    }
    jv_doc_free(d);
    flowset_free(&fs);
}

/* NFS client address: the kernel's source address towards the server (loopback here: the
 * server is on this host, so the answer is the loopback address itself). */
static void test_nfs_local(void **state)
{
    (void)state;
    struct nfslocal *nl = nfslocal_new(300 * TM_USEC_PER_SEC);
    assert_non_null(nl);
    uint8_t family = 0, addr[16], want[16] = {0};
    assert_int_equal(nfslocal_lookup(nl, "127.0.0.1:2049", 1000, &family, addr), 0);
    assert_int_equal(family, AF_INET);
    inet_pton(AF_INET, "127.0.0.1", want);
    assert_memory_equal(addr, want, 4);
    /* without a port (2049), and IPv6 loopback when this host has IPv6 */
    assert_int_equal(nfslocal_lookup(nl, "127.0.0.1", 1000, &family, addr), 0);
    int fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
    if (fd6 >= 0 && access("/proc/net/if_inet6", R_OK) == 0) {
        assert_int_equal(nfslocal_lookup(nl, "[::1]:2049", 1000, &family, addr), 0);
        assert_int_equal(family, AF_INET6);
        inet_pton(AF_INET6, "::1", want);
        assert_memory_equal(addr, want, 16);
    }
    if (fd6 >= 0)
        close(fd6);
    /* not an address, bad port, unterminated bracket */
    assert_int_equal(nfslocal_lookup(nl, "filer.example:2049", 1000, &family, addr), -1);
    assert_int_equal(nfslocal_lookup(nl, "127.0.0.1:99999", 1000, &family, addr), -1);
    assert_int_equal(nfslocal_lookup(nl, "[::1:2049", 1000, &family, addr), -1);

    /* fill: NFS flows get it, socket flows are left alone, unknown servers keep family 0 */
    struct flowset fs = {0};
    struct flow_rec *n1 = flowset_add(&fs);
    n1->source = FLOW_SRC_NFS;
    snprintf(n1->server, sizeof(n1->server), "127.0.0.1:2049");
    struct flow_rec *n2 = flowset_add(&fs);
    n2->source = FLOW_SRC_NFS; /* superblock no longer in mountinfo: no server */
    struct flow_rec *s1 = flowset_add(&fs);
    s1->source = FLOW_SRC_SOCKET;
    s1->family = AF_INET6;
    assert_int_equal(nfslocal_fill(nl, &fs, 2000), 1);
    n1 = &fs.v[0];
    assert_int_equal(n1->family, AF_INET);
    inet_pton(AF_INET, "127.0.0.1", want);
    assert_memory_equal(n1->laddr, want, 4);
    assert_int_equal(fs.v[1].family, 0);
    assert_int_equal(fs.v[2].family, AF_INET6);

    /* the report says "local" (address only) on NFS flows that have it */
    snprintf(n1->op, sizeof(n1->op), "read");
    struct report_header h = {.host = "h", .agent_id = "a", .seq = 1, .window_seconds = 60};
    char err[128];
    fs.n = 2;
    char *json = report_json(&h, &fs, err, sizeof(err));
    assert_non_null(json);
    assert_non_null(strstr(json, "\"server\":\"127.0.0.1:2049\",\"local\":\"127.0.0.1\","));
    /* only the flow with a client address has one */
    assert_null(strstr(strstr(json, "\"local\"") + 1, "\"local\""));
    free(json);
    flowset_free(&fs);
    nfslocal_free(nl);
}

/* NFS /metrics from hand-made drain records. Two label sets:
 * A = 127.0.0.1:2049 /srv read wf-read alice, from two processes in one window:
 *     ops 3 + 1 = 4, bytes 12,288 + 4,096 = 16,384, errors 0 + 1 = 1;
 *     latencies 50 us, 1,500 us x2, 20 s. Log-linear buckets (16 per power of two): 50 us is
 *     in [50, 52) (octave 32..63 in steps of 2), 1,500 us in [1,472, 1,536) (steps of 64), 20 s
 *     beyond 2^24 us in the overflow bucket. Exported le (every 4th bucket edge): 32, 40, 48,
 *     56 us, ... 1,280, 1,536 us, ... 16.777216 s: 0 up to le 48 us, 1 from le 56 us, 1 at
 *     le 1.28 ms, 3 from le 1.536 ms, still 3 at le 16.777216 s; +Inf 4; 78 bucket lines.
 *     _sum (midpoints; the overflow bucket's lower bound): 51 + 2 x 1,504 + 16,777,216 =
 *     16,780,275 us. Window quantiles: p50 = rank 2 -> [1,472, 1,536) -> 0.001536 s; p99 =
 *     rank ceil(3.96) = 4 -> overflow -> +Inf (not a made-up number); p999, max the same.
 * B = [fd00::50]:2049, export /a "q" \b (quote and backslash escaped), write, no workflow,
 *     user "bo\xffb" (cleaned to U+FFFD): ops 2, bytes 1,000,000, 1 us x2 ([1, 2) us):
 *     every bucket 2, _sum 2 x 1.5 us, quantiles 2 us. */
#define NOKUBE ",namespace=\"\",pod=\"\",container=\"\""
#define LA                                                                                         \
    "server=\"127.0.0.1:2049\",export=\"/"                                                         \
    "srv\",op=\"read\",workflow=\"wf-read\",user=\"alice\"" NOKUBE
#define LB                                                                                         \
    "server=\"[fd00::50]:2049\",export=\"/a \\\"q\\\" \\\\b\",op=\"write\",workflow=\"\","         \
    "user=\"bo\xef\xbf\xbd"                                                                        \
    "b\"" NOKUBE

static struct flow_rec *nfs_rec(struct nfsops *o, const char *server, const char *export,
                                const char *op, uint64_t ops, uint64_t bytes, uint64_t errors,
                                const struct flow_meta *meta, struct nfsop_detail **d)
{
    struct flow_rec *r = nfsops_add(o, d);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof(r->server), "%s", server);
    snprintf(r->export_path, sizeof(r->export_path), "%s", export);
    snprintf(r->op, sizeof(r->op), "%s", op);
    r->ops = ops;
    r->bytes = bytes;
    (*d)->errors = errors;
    r->meta = meta;
    return r;
}

/* Long: most of it is the expected text, as data. */
static void test_nfs_metrics(void **state)
{
    (void)state;
    static const char head[] =
        "# HELP wanledger_nfs_ops_total NFS requests completed (errors included).\n"
        "# TYPE wanledger_nfs_ops_total counter\n"
        "wanledger_nfs_ops_total{" LA "} 4\n"
        "wanledger_nfs_ops_total{" LB "} 2\n"
        "# HELP wanledger_nfs_bytes_total NFS payload bytes of requests completed without error.\n"
        "# TYPE wanledger_nfs_bytes_total counter\n"
        "wanledger_nfs_bytes_total{" LA "} 16384\n"
        "wanledger_nfs_bytes_total{" LB "} 1000000\n"
        "# HELP wanledger_nfs_errors_total NFS requests completed with an error.\n"
        "# TYPE wanledger_nfs_errors_total counter\n"
        "wanledger_nfs_errors_total{" LA "} 1\n"
        "wanledger_nfs_errors_total{" LB "} 0\n"
        "# HELP wanledger_nfs_latency_seconds NFS request latency, initiate to done (log-linear "
        "buckets, 4 bounds per power of two exported; _sum estimated from bucket midpoints).\n"
        "# TYPE wanledger_nfs_latency_seconds histogram\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.000032\"} 0\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.000040\"} 0\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.000048\"} 0\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.000056\"} 1\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.000064\"} 1\n";
    static const char *const lines[] = {
        "\nwanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.001280\"} 1\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"0.001536\"} 3\n",
        "\nwanledger_nfs_latency_seconds_bucket{" LA ",le=\"16.777216\"} 3\n"
        "wanledger_nfs_latency_seconds_bucket{" LA ",le=\"+Inf\"} 4\n"
        "wanledger_nfs_latency_seconds_sum{" LA "} 16.780275\n"
        "wanledger_nfs_latency_seconds_count{" LA "} 4\n"
        "wanledger_nfs_latency_seconds_bucket{" LB ",le=\"0.000032\"} 2\n",
        "\nwanledger_nfs_latency_seconds_bucket{" LB ",le=\"16.777216\"} 2\n"
        "wanledger_nfs_latency_seconds_bucket{" LB ",le=\"+Inf\"} 2\n"
        "wanledger_nfs_latency_seconds_sum{" LB "} 0.000003\n"
        "wanledger_nfs_latency_seconds_count{" LB "} 2\n"
        "# HELP wanledger_nfs_latency_window_seconds NFS latency quantile over the last window "
        "(upper bound of its log-linear bucket, at most 6.25% above).\n"
        "# TYPE wanledger_nfs_latency_window_seconds summary\n"
        "wanledger_nfs_latency_window_seconds{" LA ",quantile=\"0.5\"} 0.001536\n"
        "wanledger_nfs_latency_window_seconds{" LA ",quantile=\"0.99\"} +Inf\n"
        "wanledger_nfs_latency_window_seconds{" LA ",quantile=\"0.999\"} +Inf\n"
        "wanledger_nfs_latency_window_seconds{" LA ",quantile=\"1\"} +Inf\n"
        "wanledger_nfs_latency_window_seconds{" LB ",quantile=\"0.5\"} 0.000002\n"
        "wanledger_nfs_latency_window_seconds{" LB ",quantile=\"0.99\"} 0.000002\n"
        "wanledger_nfs_latency_window_seconds{" LB ",quantile=\"0.999\"} 0.000002\n"
        "wanledger_nfs_latency_window_seconds{" LB ",quantile=\"1\"} 0.000002\n"
        "# HELP wanledger_nfs_latency_window_requests NFS requests behind the last window's "
        "quantiles.\n"
        "# TYPE wanledger_nfs_latency_window_requests gauge\n"
        "wanledger_nfs_latency_window_requests{" LA "} 4\n"
        "wanledger_nfs_latency_window_requests{" LB "} 2\n"
        "# HELP wanledger_nfs_series_overflow_total NFS records not exported: more than 4096 "
        "label sets.\n"
        "# TYPE wanledger_nfs_series_overflow_total counter\n"
        "wanledger_nfs_series_overflow_total 0\n",
    };
    struct agentmetrics m;
    memset(&m, 0, sizeof(m));
    m.nfs = "nfs";
    struct flow_meta alice, bob;
    memset(&alice, 0, sizeof(alice));
    memset(&bob, 0, sizeof(bob));
    snprintf(alice.user, sizeof(alice.user), "alice");
    snprintf(alice.workflow, sizeof(alice.workflow), "wf-read");
    snprintf(bob.user, sizeof(bob.user),
             "bo\xff"
             "b");
    struct nfsops o = {0};
    struct nfsop_detail *d;
    nfs_rec(&o, "[fd00::50]:2049", "/a \"q\" \\b", "write", 2, 1000000, 0, &bob, &d);
    llhist_record(&d->latency, 1, 2);
    nfs_rec(&o, "127.0.0.1:2049", "/srv", "read", 3, 12288, 0, &alice, &d);
    llhist_record(&d->latency, 50, 1);
    llhist_record(&d->latency, 1500, 2);
    nfs_rec(&o, "127.0.0.1:2049", "/srv", "read", 1, 4096, 1, &alice, &d);
    llhist_record(&d->latency, 20000000, 1);
    agentmetrics_nfs_window(&m, &o);
    char *text = agentmetrics_render(&m);
    assert_non_null(text);
    const char *nfs = strstr(text, "# HELP wanledger_nfs_ops_total");
    assert_non_null(nfs);
    assert_memory_equal(nfs, head, strlen(head));
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        if (!strstr(nfs, lines[i]))
            fail_msg("missing from /metrics:\n%s\n--- got:\n%s", lines[i], nfs);
    assert_string_equal(strstr(nfs, lines[2]), lines[2]); /* the last block ends the text */
    size_t n_bucket = 0;
    for (const char *p = nfs; (p = strstr(p, "wanledger_nfs_latency_seconds_bucket{" LA)); p++)
        n_bucket++;
    assert_int_equal(n_bucket, 78);
    /* the whole exposition passes Prometheus' linter (odd label values included) */
    th_require(system("command -v promtool >/dev/null") == 0,
               "promtool is needed (package prometheus, scripts/install-deps.sh)");
    FILE *pr = popen("promtool check metrics", "w");
    assert_non_null(pr);
    fputs(text, pr);
    assert_int_equal(pclose(pr), 0);
    free(text);

    /* Next window: B once more (1 op of 3 us, [3, 4) us), A idle. Counters add up; A keeps its
     * counters but has no last-window quantiles; B's window is only the new op (4 us). A record
     * without owner metadata gets empty workflow and user labels. */
    nfsops_clear(&o);
    nfs_rec(&o, "[fd00::50]:2049", "/a \"q\" \\b", "write", 1, 10, 0, &bob, &d);
    llhist_record(&d->latency, 3, 1); /* [3, 4) us */
    nfs_rec(&o, "10.0.0.1:2049", "/x", "commit", 1, 0, 0, NULL, &d);
    llhist_record(&d->latency, 8, 1);
    agentmetrics_nfs_window(&m, &o);
    text = agentmetrics_render(&m);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nwanledger_nfs_ops_total{" LA "} 4\n"));
    assert_non_null(strstr(text, "\nwanledger_nfs_ops_total{" LB "} 3\n"));
    assert_non_null(strstr(text, "\nwanledger_nfs_bytes_total{" LB "} 1000010\n"));
    assert_non_null(strstr(text, "\nwanledger_nfs_latency_seconds_count{" LB "} 3\n"));
    assert_null(strstr(text, "wanledger_nfs_latency_window_seconds{" LA));
    assert_non_null(
        strstr(text, "\nwanledger_nfs_latency_window_seconds{" LB ",quantile=\"1\"} 0.000004\n"));
    assert_non_null(strstr(text, "\nwanledger_nfs_latency_window_requests{" LB "} 1\n"));
    assert_non_null(strstr(text, "\nwanledger_nfs_ops_total{server=\"10.0.0.1:2049\",export=\"/x\","
                                 "op=\"commit\",workflow=\"\",user=\"\"" NOKUBE "} 1\n"));
    free(text);

    /* A label set idle for AGENTMETRICS_NFS_IDLE windows is removed: after 59 more empty
     * windows (61 in all) A, last seen in window 1, is gone; B and the commit set (window 2)
     * stay. In window 62 the commit set (idle since 2) goes too, and B, found again through the
     * rebuilt index, adds to its counters (3 + 1 ops) instead of starting anew. */
    nfsops_clear(&o);
    for (int w = 0; w < AGENTMETRICS_NFS_IDLE - 1; w++)
        agentmetrics_nfs_window(&m, &o);
    assert_int_equal(m.n_nfs_series, 2);
    nfs_rec(&o, "[fd00::50]:2049", "/a \"q\" \\b", "write", 1, 10, 0, &bob, &d);
    agentmetrics_nfs_window(&m, &o);
    assert_int_equal(m.n_nfs_series, 1);
    text = agentmetrics_render(&m);
    assert_non_null(text);
    assert_null(strstr(text, "wanledger_nfs_ops_total{" LA));
    assert_non_null(strstr(text, "\nwanledger_nfs_ops_total{" LB "} 4\n"));
    free(text);
    nfsops_clear(&o);
    for (int w = 0; w < AGENTMETRICS_NFS_IDLE; w++)
        agentmetrics_nfs_window(&m, &o);
    assert_int_equal(m.n_nfs_series, 0);
    nfsops_free(&o);
    agentmetrics_free(&m);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The drain state keeps a loss not yet reported, and since the late-tick change whether it is a
 * late drain's; a file an older agent wrote (no "late=") still loads, as a restart's loss. */
static void test_drainstate_format(void **state)
{
    (void)state;
    char dir[] = "/tmp/wla-drainstate-XXXXXX", path[600], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/drain_state", dir);
    struct drainstate st = {.seq = 41,
                            .gen = 1,
                            .drops_seen = 7,
                            .window_end_us = 1700000010000000,
                            .token = 0xabcdef,
                            .obj_hash = 0x1234,
                            .lost_from_us = 1700000000000000,
                            .lost_to_us = 1700000013500000,
                            .lost_late = true};
    assert_int_equal(drainstate_save(dir, &st), 0);
    struct drainstate got;
    assert_int_equal(drainstate_load(dir, &got, err, sizeof(err)), 1);
    assert_int_equal(got.seq, 41);
    assert_int_equal(got.lost_from_us, 1700000000000000);
    assert_int_equal(got.lost_to_us, 1700000013500000);
    assert_true(got.lost_late);

    write_text(path, "wanledger-drain-state v1 seq=9 gen=0 zero_gen=0 drops_seen=0 "
                     "window_end_us=1700000010000000 token=00000000000000ab obj=0000000000000012 "
                     "lost=1700000000000000..1700000005000000\n");
    assert_int_equal(drainstate_load(dir, &got, err, sizeof(err)), 1);
    assert_int_equal(got.seq, 9);
    assert_int_equal(got.lost_to_us, 1700000005000000);
    assert_false(got.lost_late);

    write_text(path, "wanledger-drain-state v1 seq=9 gen=0 zero_gen=0 drops_seen=0 "
                     "window_end_us=1 token=0 obj=0 lost=0..0 late=2\n");
    assert_int_equal(drainstate_load(dir, &got, err, sizeof(err)), -1);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_paths),      cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_flag_errors),       cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_clean_text),        cmocka_unit_test(test_report_json_clean),
        cmocka_unit_test(test_report_json_exact), cmocka_unit_test(test_report_json_procs),
        cmocka_unit_test(test_nfs_local),         cmocka_unit_test(test_nfs_metrics),
        cmocka_unit_test(test_token_file_mode),   cmocka_unit_test(test_drainstate_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
