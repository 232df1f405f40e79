/* Parsing pieces of the agent: cgroup paths to container / pod / unit / Slurm job, endpoint
 * formatting, and flag errors that name the flag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_opts.h"
#include "procmeta.h"
#include "report.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_paths),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_config_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
