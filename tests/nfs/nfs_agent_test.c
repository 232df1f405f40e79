/* wanledger-agent on this machine's kernel, which has no NFS: it starts, says the NFS probe is
 * unavailable and why, and still reports (the socket probe runs). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void test_agent_without_nfs(void **state)
{
    (void)state;
    struct stat st;
    th_require_root();
    th_require(stat("/sys/kernel/btf/nfs", &st) != 0,
               "this kernel has NFS: the no-NFS path cannot be shown here");
    const char *agent = th_bin("wanledger-agent");
    th_require(agent && access(agent, X_OK) == 0, "wanledger-agent was not built");
    const char *dir = th_tmpdir("nfsagent");
    assert_non_null(dir);
    int rc = th_sh("timeout 60 %s --stdout --once --window 1 --spool %s/spool > %s/out 2> %s/err",
                   agent, dir, dir, dir);
    char path[512];
    snprintf(path, sizeof(path), "%s/err", dir);
    char *err = slurp(path);
    snprintf(path, sizeof(path), "%s/out", dir);
    char *out = slurp(path);
    printf("agent stderr:\n%s", err);
    assert_int_equal(rc, 0);
    /* The reason names what is missing. */
    assert_non_null(
        strstr(err, "[nfs] not counting NFS: unavailable: this kernel has no NFS client"));
    assert_non_null(strstr(err, "/sys/kernel/btf/nfs"));
    /* The socket probe attached and one report came out. */
    assert_non_null(strstr(err, "[socket] attach mode"));
    assert_non_null(strstr(out, "\"version\":2")); /* each process once, in procs[] */
    assert_non_null(strstr(out, "\"procs\":["));
    assert_non_null(strstr(out, "\"flows\":["));
    free(err);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_agent_without_nfs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
