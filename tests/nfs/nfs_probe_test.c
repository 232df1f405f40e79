/* NFS probe on this machine: mountinfo lines -> server and export, latency quantiles, and the
 * probe saying it is unavailable, and why, on a kernel without NFS. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "nfs_probe.h"

/* Lines as the 6.1 VM kernel printed them (tests/nfs/vm-init.sh mounts). */
static void test_mountinfo_v4(void **state)
{
    (void)state;
    struct nfs_probe_mount m;
    const char *line = "30 1 0:25 / /mnt/v4 rw,relatime - nfs4 127.0.0.1:/ rw,vers=4.2,"
                       "rsize=131072,wsize=131072,namlen=255,hard,proto=tcp,timeo=600,retrans=2,"
                       "sec=sys,clientaddr=127.0.0.1,local_lock=none,addr=127.0.0.1\n";
    assert_int_equal(nfs_probe_parse_mountinfo_line(line, &m), 1);
    assert_int_equal(m.dev, (0u << 20) | 25u);
    assert_string_equal(m.server, "127.0.0.1:2049");
    assert_string_equal(m.export, "/");
    assert_string_equal(m.mountpoint, "/mnt/v4");
    assert_string_equal(m.fstype, "nfs4");
}

/* NFSv3 lists mountaddr= before addr=: only the exact option names the server. A non-default
 * port is part of the address; the mount point's \040 escape is undone. */
static void test_mountinfo_v3_port_and_escape(void **state)
{
    (void)state;
    struct nfs_probe_mount m;
    const char *line =
        "41 30 0:52 / /mnt/my\\040data rw,relatime shared:7 - nfs 10.1.0.50:/srv/data "
        "rw,vers=3,rsize=1048576,port=20490,proto=tcp,mountaddr=10.9.9.9,"
        "mountvers=3,mountport=20048,mountproto=tcp,local_lock=none,addr=10.1.0.50";
    assert_int_equal(nfs_probe_parse_mountinfo_line(line, &m), 1);
    assert_int_equal(m.dev, 52u);
    assert_string_equal(m.server, "10.1.0.50:20490");
    assert_string_equal(m.export, "/srv/data");
    assert_string_equal(m.mountpoint, "/mnt/my data");
    assert_string_equal(m.fstype, "nfs");
}

static void test_mountinfo_ipv6_and_major(void **state)
{
    (void)state;
    struct nfs_probe_mount m;
    const char *line = "50 30 259:3 /sub /data rw - nfs4 [fd00:1::50]:/exports/x "
                       "rw,vers=4.1,addr=fd00:1::50,clientaddr=fd00:1::2";
    assert_int_equal(nfs_probe_parse_mountinfo_line(line, &m), 1);
    assert_int_equal(m.dev, (259u << 20) | 3u);
    assert_string_equal(m.server, "[fd00:1::50]:2049");
    assert_string_equal(m.export, "/exports/x");
}

static void test_mountinfo_other_and_malformed(void **state)
{
    (void)state;
    struct nfs_probe_mount m;
    assert_int_equal(nfs_probe_parse_mountinfo_line(
                         "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw,errors=remount-ro", &m),
                     0);
    assert_int_equal(nfs_probe_parse_mountinfo_line("22 1 8:1 / / rw,relatime ext4", &m), -1);
    assert_int_equal(nfs_probe_parse_mountinfo_line("", &m), -1);
    assert_int_equal(nfs_probe_parse_mountinfo_line("22 1 x / / rw - nfs a:/b addr=a", &m), -1);
}

/* This machine's kernel has no NFS (FACTS.md): the probe must refuse with a reason, not fail
 * obscurely. On a kernel with NFS the same test needs root and expects the probe to load. */
static void test_open_says_why(void **state)
{
    (void)state;
    struct stat st;
    char why[512] = "";
    bool has_nfs =
        stat("/sys/kernel/btf/nfs", &st) == 0 || stat("/sys/kernel/tracing/events/nfs", &st) == 0;
    if (has_nfs)
        th_require_root();
    struct nfs_probe *p = nfs_probe_open(why, sizeof(why));
    if (has_nfs) {
        if (!p)
            fail_msg("kernel has NFS but the probe did not open: %s", why);
        nfs_probe_close(p);
        return;
    }
    assert_null(p);
    printf("nfs probe here: %s\n", why);
    assert_non_null(strstr(why, "unavailable"));
    assert_non_null(strstr(why, "no NFS client"));
    assert_non_null(strstr(why, "/sys/kernel/btf/nfs"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mountinfo_v4),
        cmocka_unit_test(test_mountinfo_v3_port_and_escape),
        cmocka_unit_test(test_mountinfo_ipv6_and_major),
        cmocka_unit_test(test_mountinfo_other_and_malformed),
        cmocka_unit_test(test_open_says_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
