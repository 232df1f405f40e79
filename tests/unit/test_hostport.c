/* common/hostport.c: IPv4, [IPv6]:port, names, the port range, and what each error says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "hostport.h"

struct good {
    const char *in;
    unsigned flags;
    const char *host;
    unsigned port;
    int family;
};

struct bad {
    const char *in;
    unsigned flags;
    const char *msg; /* a part of the error */
};

static void test_good(void **state)
{
    (void)state;
    const struct good cases[] = {
        {"127.0.0.1:7070", 0, "127.0.0.1", 7070, AF_INET},
        {"0.0.0.0:1", 0, "0.0.0.0", 1, AF_INET},
        {"[::1]:80", 0, "::1", 80, AF_INET6},
        {"[fd00::2]:65535", 0, "fd00::2", 65535, AF_INET6},
        {"[::ffff:10.0.0.1]:443", 0, "::ffff:10.0.0.1", 443, AF_INET6},
        {"localhost:9465", 0, "localhost", 9465, AF_UNSPEC},
        {"recon-1.nyc.example:7070", 0, "recon-1.nyc.example", 7070, AF_UNSPEC},
        {"127.0.0.1:0", HOSTPORT_ALLOW_ZERO, "127.0.0.1", 0, AF_INET},
        {"example.org", HOSTPORT_PORT_OPTIONAL, "example.org", 0, AF_UNSPEC},
        {"[::1]", HOSTPORT_PORT_OPTIONAL, "::1", 0, AF_INET6},
        {"h:00080", 0, "h", 80, AF_UNSPEC},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hostport hp;
        char err[256] = "";
        int rc =
            hostport_parse(cases[i].in, strlen(cases[i].in), cases[i].flags, &hp, err, sizeof(err));
        if (rc)
            fprintf(stderr, "%s: %s\n", cases[i].in, err);
        assert_int_equal(rc, 0);
        assert_string_equal(hp.host, cases[i].host);
        assert_int_equal(hp.port, cases[i].port);
        assert_int_equal(hp.family, cases[i].family);
        /* in these cases a port is given exactly when it is not optional */
        assert_int_equal(hp.has_port, !(cases[i].flags & HOSTPORT_PORT_OPTIONAL));
    }
    /* only the first len bytes count (a URL's authority) */
    struct hostport hp;
    char err[256];
    assert_int_equal(hostport_parse("[::1]:8080/v1/x", 10, 0, &hp, err, sizeof(err)), 0);
    assert_int_equal(hp.port, 8080);
    char out[64];
    assert_string_equal(hostport_format("::1", 80, out, sizeof(out)), "[::1]:80");
    assert_string_equal(hostport_format("[::1]", 80, out, sizeof(out)), "[::1]:80");
    assert_string_equal(hostport_format("10.0.0.1", 80, out, sizeof(out)), "10.0.0.1:80");
}

static void test_bad(void **state)
{
    (void)state;
    const struct bad cases[] = {
        {"", 0, "the host is empty"},
        {":80", 0, "the host is empty"},
        {"127.0.0.1", 0, "no port"},
        {"127.0.0.1:", 0, "the port after ':' is empty"},
        {"127.0.0.1:0", 0, "port 0"},
        {"127.0.0.1:65536", 0, "above 65535"},
        {"127.0.0.1:99999999999999999999", 0, "above 65535"},
        {"127.0.0.1:-1", 0, "not a decimal number"},
        {"127.0.0.1:+80", 0, "not a decimal number"},
        {"127.0.0.1:80 ", 0, "not a decimal number"},
        {"127.0.0.1:0x50", 0, "not a decimal number"},
        {"256.0.0.1:80", 0, "not an IPv4 address"},
        {"10.0.0:80", 0, "not an IPv4 address"},
        {"::1:80", 0, "needs brackets"},
        {"fd00::2", HOSTPORT_PORT_OPTIONAL, "needs brackets"},
        {"[::1:80", 0, "without ']'"},
        {"[]:80", 0, "not an IPv6 address"},
        {"[10.0.0.1]:80", 0, "not an IPv6 address"},
        {"[::1]80", 0, "expected ':'"},
        {"[::1]", 0, "no port"},
        {"bad host:80", 0, "neither an IP address nor a DNS name"},
        {"a..b:80", 0, "neither an IP address nor a DNS name"},
        {"h/x:80", 0, "neither an IP address nor a DNS name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hostport hp;
        char err[256] = "";
        int rc =
            hostport_parse(cases[i].in, strlen(cases[i].in), cases[i].flags, &hp, err, sizeof(err));
        fprintf(stderr, "%-32s -> %s\n", cases[i].in, err);
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err, cases[i].msg));
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "\"%s\"", cases[i].in);
        assert_non_null(strstr(err, quoted)); /* the error quotes what was given */
    }
    /* a 64-byte label is too long, 63 is fine */
    char name[80];
    memset(name, 'a', 63);
    strcpy(name + 63, ":80");
    struct hostport hp;
    char err[256];
    assert_int_equal(hostport_parse(name, strlen(name), 0, &hp, err, sizeof(err)), 0);
    memset(name, 'a', 64);
    strcpy(name + 64, ":80");
    assert_int_equal(hostport_parse(name, strlen(name), 0, &hp, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
