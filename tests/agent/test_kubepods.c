/* agentlib/kubepods + procmeta_parse_cgroup: a pod cgroup path (systemd and cgroupfs drivers,
 * containerd and CRI-O naming) to namespace, pod and container name, from a /var/log tree this
 * test builds with the kubelet's layout (pkg/kubelet/kuberuntime/helpers.go:
 * pods/<ns>_<pod>_<uid>/<container>/<restart>.log; kuberuntime_container.go legacyLogSymlink:
 * containers/<pod>_<ns>_<container>-<id>.log -> that file). Also the report's owner fields and
 * the NFS /metrics labels; an NFS flow's latency in the report. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "agentmetrics.h"
#include "kubepods.h"
#include "procmeta.h"
#include "report.h"

#define UID1  "1b2c3d4e-0000-4a5b-8c9d-0123456789ab"
#define UID1_ "1b2c3d4e_0000_4a5b_8c9d_0123456789ab"
#define UID2  "99999999-aaaa-4bbb-8ccc-dddddddddddd"
#define UID2_ "99999999_aaaa_4bbb_8ccc_dddddddddddd"
#define ID1   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"
#define ID2   "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2"
#define ID3   "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc3"

static char root[256];

static void mkdirs(const char *rel)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
    assert_int_equal(system(cmd), 0);
}

static void touch(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void link_to(const char *target, const char *rel)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/wl-kubepods-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    /* ns1/web-0: one container "app" (restarted once), with its CRI symlink */
    mkdirs("pods/ns1_web-0_" UID1 "/app");
    touch("pods/ns1_web-0_" UID1 "/app/0.log");
    touch("pods/ns1_web-0_" UID1 "/app/1.log");
    mkdirs("containers");
    link_to("/var/log/pods/ns1_web-0_" UID1 "/app/1.log", "containers/web-0_ns1_app-" ID1 ".log");
    /* batch/job-x: "main" (symlinked) and "sidecar" (no symlink) */
    mkdirs("pods/batch_job-x_" UID2 "/main");
    mkdirs("pods/batch_job-x_" UID2 "/sidecar");
    touch("pods/batch_job-x_" UID2 "/main/0.log");
    link_to("/var/log/pods/batch_job-x_" UID2 "/main/0.log",
            "containers/job-x_batch_main-" ID2 ".log");
    /* noise the scan must ignore: a file, a name without uid, a cut symlink name */
    touch("pods/not-a-pod");
    mkdirs("pods/kube-system_nouid");
    link_to("/var/log/pods/x/y/0.log", "containers/very-long-name-cut-abc.log");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void identity_of(struct kubepods *k, const char *cgroup, struct flow_meta *m)
{
    memset(m, 0, sizeof(*m));
    procmeta_parse_cgroup(cgroup, m);
    kubepods_lookup(k, m->pod_uid, m->container, &m->kube);
}

static void test_cgroup_drivers(void **state)
{
    (void)state;
    struct kubepods *k = kubepods_new(root);
    assert_non_null(k);
    struct flow_meta m;
    /* systemd driver, containerd */
    identity_of(k,
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1_
                ".slice/cri-containerd-" ID1 ".scope",
                &m);
    assert_string_equal(m.pod_uid, UID1);
    assert_string_equal(m.kube.namespace_, "ns1");
    assert_string_equal(m.kube.pod, "web-0");
    assert_string_equal(m.kube.container, "app");
    /* cgroupfs driver: kubepods/besteffort/pod<uid>/<id> */
    identity_of(k, "/kubepods/besteffort/pod" UID2 "/" ID2, &m);
    assert_string_equal(m.pod_uid, UID2);
    assert_string_equal(m.kube.namespace_, "batch");
    assert_string_equal(m.kube.pod, "job-x");
    assert_string_equal(m.kube.container, "main");
    /* systemd driver, CRI-O, a container without symlink in a two-container pod: the pod is
     * known, the container name is not (left empty, not guessed) */
    identity_of(k, "/kubepods.slice/kubepods-pod" UID2_ ".slice/crio-" ID3 ".scope", &m);
    assert_string_equal(m.container, ID3);
    assert_string_equal(m.kube.namespace_, "batch");
    assert_string_equal(m.kube.pod, "job-x");
    assert_string_equal(m.kube.container, "");
    /* CRI-O in the one-container pod without a matching symlink: its only container */
    identity_of(k, "/kubepods.slice/kubepods-pod" UID1_ ".slice/crio-" ID3 ".scope", &m);
    assert_string_equal(m.kube.container, "app");
    /* a container id of another pod does not lend its name */
    identity_of(k, "/kubepods/pod" UID2 "/" ID1, &m);
    assert_string_equal(m.kube.container, "");
    /* unknown pod, and no pod at all */
    struct kube_identity id;
    assert_false(kubepods_lookup(k, "00000000-0000-0000-0000-000000000000", NULL, &id));
    assert_string_equal(id.namespace_, "");
    assert_false(kubepods_lookup(k, "", NULL, &id));
    kubepods_free(k);
    /* a node without the directories */
    k = kubepods_new("/nonexistent-wl");
    assert_non_null(k);
    assert_false(kubepods_lookup(k, UID1, ID1, &id));
    kubepods_free(k);
}

/* Cached: a pod created after a scan is found only once the miss-rescan interval has passed. */
static void test_refresh(void **state)
{
    (void)state;
    struct kubepods *k = kubepods_new(root);
    assert_non_null(k);
    struct kube_identity id;
    const char *uid3 = "33333333-3333-4333-8333-333333333333";
    assert_false(kubepods_lookup(k, uid3, NULL, &id)); /* first scan */
    mkdirs("pods/late_pod-3_33333333-3333-4333-8333-333333333333/c");
    assert_false(kubepods_lookup(k, uid3, NULL, &id)); /* within KUBEPODS_MISS_S: cached */
    sleep(KUBEPODS_MISS_S);
    assert_true(kubepods_lookup(k, uid3, NULL, &id));
    assert_string_equal(id.namespace_, "late");
    assert_string_equal(id.pod, "pod-3");
    assert_string_equal(id.container, "c");
    kubepods_free(k);
}

/* The report carries namespace, pod and container_name; /metrics labels the NFS series. */
static void test_report_and_labels(void **state)
{
    (void)state;
    struct kubepods *k = kubepods_new(root);
    assert_non_null(k);
    struct flow_meta m;
    identity_of(k, "/kubepods/besteffort/pod" UID2 "/" ID2, &m);
    snprintf(m.workflow, sizeof(m.workflow), "wf");
    kubepods_free(k);
    struct nfsops o = {0};
    struct nfsop_detail *d;
    struct flow_rec *r = nfsops_add(&o, &d);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof(r->server), "127.0.0.1:2049");
    snprintf(r->export_path, sizeof(r->export_path), "/srv");
    snprintf(r->op, sizeof(r->op), "read");
    r->ops = 1;
    r->bytes = 4096;
    r->meta = &m;
    llhist_record(&d->latency, 100, 1);  /* [100, 104) us */
    llhist_record(&d->latency, 3000, 1); /* [2944, 3072) us */
    r->latency = &d->latency;
    struct report_header h = {.host = "h", .agent_id = "a", .window_seconds = 1};
    char err[128];
    char *json = report_json(&h, &o.recs, err, sizeof(err));
    assert_non_null(json);
    assert_non_null(strstr(json, "\"namespace\":\"batch\""));
    assert_non_null(strstr(json, "\"pod\":\"job-x\""));
    assert_non_null(strstr(json, "\"container_name\":\"main\""));
    assert_non_null(strstr(json, "\"container\":\"" ID2 "\""));
    /* p50 = rank 1 -> [100, 104); p99, p999, max = rank 2 -> [2944, 3072) */
    assert_non_null(strstr(json, "\"latency_us\":{\"count\":2,\"p50\":104,\"p99\":3072,"
                                 "\"p999\":3072,\"max\":3072,\"buckets\":[[100,1],[2944,1]]}"));
    free(json);
    struct agentmetrics am;
    memset(&am, 0, sizeof(am));
    am.nfs = "nfs";
    agentmetrics_nfs_window(&am, &o);
    char *text = agentmetrics_render(&am);
    assert_non_null(text);
    assert_non_null(strstr(text,
                           "\nwanledger_nfs_ops_total{server=\"127.0.0.1:2049\",export=\"/srv\","
                           "op=\"read\",workflow=\"wf\",user=\"\",namespace=\"batch\","
                           "pod=\"job-x\",container=\"main\"} 1\n"));
    free(text);
    agentmetrics_free(&am);
    nfsops_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_drivers),
        cmocka_unit_test(test_refresh),
        cmocka_unit_test(test_report_and_labels),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
