/* The BPF pipeline works end to end: the trivial probe's skeleton loads into this kernel, attaches
 * to sock:sock_send_length, and counts exactly the sends this test makes. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "trivial.skel.h"

static void test_probe_counts_our_sends(void **state)
{
    (void)state;
    th_require_root();
    th_sh("mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing");
    struct trivial *skel = trivial__open();
    assert_non_null(skel);
    skel->rodata->target_tgid = (uint32_t)getpid();
    int err = trivial__load(skel);
    if (err)
        fail_msg("loading the trivial probe failed: %d", err);
    err = trivial__attach(skel);
    if (err)
        fail_msg("attaching to sock:sock_send_length failed: %d", err);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char buf[1000] = {0};
    /* 7 sends of 1000 bytes and 3 of 10 bytes: 7030 bytes in 10 calls */
    for (int i = 0; i < 7; i++)
        assert_int_equal(sendto(fd, buf, 1000, 0, (struct sockaddr *)&a, sizeof(a)), 1000);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sendto(fd, buf, 10, 0, (struct sockaddr *)&a, sizeof(a)), 10);
    close(fd);
    assert_int_equal(skel->bss->calls, 10);
    assert_int_equal(skel->bss->bytes, 7030);
    trivial__destroy(skel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_probe_counts_our_sends)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
