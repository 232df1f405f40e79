/* The agent's reading of the reconciler's rules (throttle_rules.c): expiry on the agent's own
 * clock, the host's share, the allow-list, the kill switch; bad input names its JSON path and
 * leaves nothing applied; the report body carries every counter; the sender side's peer
 * sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "throttle_rules.h"

static void test_parse(void **state)
{
    (void)state;
    static struct throttle_rules r;
    char err[256];
    const char *j = "{\"rules\":[{\"id\":7,\"selector\":{\"workflow\":\"bulk-1\"},\"mode\":"
                    "\"enforce\",\"rate_bps\":40000000,\"expires_in_s\":600},{\"id\":8,"
                    "\"selector\":{\"user\":\"alice\"},\"mode\":\"dry_run\",\"rate_bps\":1000,"
                    "\"host_rate_bps\":250,\"expires_in_s\":5}],\"allow\":[{\"program\":"
                    "\"wanledger-agent\"}],\"kill_switch\":false}";
    assert_int_equal(throttle_rules_parse(j, 1000000, &r, err, sizeof(err)), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.rule[0].id, 7);
    assert_int_equal(r.rule[0].sel.kind, THROTTLE_SEL_WORKFLOW);
    assert_string_equal(r.rule[0].sel.value, "bulk-1");
    assert_int_equal(r.rule[0].rate_bps, 40000000);
    assert_int_equal(r.rule[0].mode, THROTTLE_ENFORCE);
    assert_int_equal(r.rule[0].expires_at_us, 1000000 + 600LL * 1000000);
    assert_int_equal(r.rule[1].sel.kind, THROTTLE_SEL_USER);
    assert_int_equal(r.rule[1].rate_bps, 250); /* the host's share wins */
    assert_int_equal(r.rule[1].mode, THROTTLE_DRY_RUN);
    assert_int_equal(r.n_allow, 1);
    assert_int_equal(r.allow[0].kind, THROTTLE_SEL_PROGRAM);
    assert_false(r.kill_switch);
    assert_int_equal(
        throttle_rules_parse("{\"rules\":[],\"kill_switch\":true}", 0, &r, err, sizeof(err)), 0);
    assert_true(r.kill_switch);
}

static void test_refused(void **state)
{
    (void)state;
    static struct throttle_rules r;
    char err[256];
    static const struct {
        const char *json, *where;
    } bad[] = {
        {"[]", "$"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
         "\"rate_bps\":1}]}",
         "$.rules[0].expires_in_s"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"host\":\"w\"},\"mode\":\"enforce\",\"rate_bps\":1,"
         "\"expires_in_s\":5}]}",
         "$.rules[0].selector.host"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"slow\",\"rate_bps\":"
         "1,\"expires_in_s\":5}]}",
         "$.rules[0].mode"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
         "\"rate_bps\":0,\"expires_in_s\":5}]}",
         "$.rules[0].rate_bps"},
        {"{\"rules\":[],\"allow\":[{\"a\":\"b\",\"c\":\"d\"}]}", "$.allow[0]"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
         "\"rate_bps\":1,\"expires_in_s\":5,\"remote_prefixes\":[\"10.1.0.0/33\"]}]}",
         "$.rules[0].remote_prefixes[0]"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
         "\"rate_bps\":1,\"expires_in_s\":5,\"remote_prefixes\":[\"chi\"]}]}",
         "$.rules[0].remote_prefixes[0]"},
        {"{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
         "\"rate_bps\":1,\"expires_in_s\":5,\"remote_prefixes\":\"10.1.0.0/16\"}]}",
         "$.rules[0].remote_prefixes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_equal(throttle_rules_parse(bad[i].json, 0, &r, err, sizeof(err)), -1);
        if (!strstr(err, bad[i].where))
            fprintf(stderr, "case %zu: \"%s\" does not name %s\n", i, err, bad[i].where);
        assert_non_null(strstr(err, bad[i].where));
        assert_int_equal(r.n, 0);
    }
}

/* A rule's destination prefixes: IPv4 as ::ffff:a.b.c.d with the length over 128 bits; an
 * empty list scopes the rule to nothing; no list: not scoped. */
static void test_scope(void **state)
{
    (void)state;
    static struct throttle_rules r;
    char err[256];
    const char *j = "{\"rules\":[{\"id\":1,\"selector\":{\"workflow\":\"w\"},\"mode\":\"enforce\","
                    "\"rate_bps\":1,\"expires_in_s\":5,\"remote_prefixes\":[\"10.1.0.0/16\","
                    "\"2001:db8::/32\",\"192.0.2.7\"]},{\"id\":2,\"selector\":{\"workflow\":"
                    "\"w\"},\"mode\":\"enforce\",\"rate_bps\":1,\"expires_in_s\":5,"
                    "\"remote_prefixes\":[]},{\"id\":3,\"selector\":{\"workflow\":\"w\"},"
                    "\"mode\":\"enforce\",\"rate_bps\":1,\"expires_in_s\":5}]}";
    assert_int_equal(throttle_rules_parse(j, 0, &r, err, sizeof(err)), 0);
    assert_int_equal(r.n, 3);
    assert_true(r.rule[0].scoped);
    assert_int_equal(r.rule[0].n_remote, 3);
    static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 0, 0};
    assert_memory_equal(r.rule[0].remote[0].addr, v4, 16);
    assert_int_equal(r.rule[0].remote[0].len, 96 + 16);
    assert_int_equal(r.rule[0].remote[1].addr[0], 0x20);
    assert_int_equal(r.rule[0].remote[1].addr[1], 0x01);
    assert_int_equal(r.rule[0].remote[1].len, 32);
    assert_int_equal(r.rule[0].remote[2].len, 128); /* one address */
    assert_int_equal(r.rule[0].remote[2].addr[15], 7);
    assert_true(r.rule[1].scoped);
    assert_int_equal(r.rule[1].n_remote, 0);
    assert_false(r.rule[2].scoped);
}

/* The sender side ("peers"): each rule's connections in the kernel's form (IPv6 form, IPv4
 * as ::ffff:a.b.c.d, ports in host order); a bad socket names its path and leaves no rule. */
static void test_peers(void **state)
{
    (void)state;
    static struct throttle_rules r;
    char err[256];
    const char *j = "{\"rules\":[],\"peers\":[{\"id\":9,\"mode\":\"enforce\",\"rate_bps\":"
                    "40000000,\"expires_in_s\":60,\"sockets\":[{\"local\":\"10.1.0.10:9000\","
                    "\"remote\":\"10.2.0.10:41000\"},{\"local\":\"[2001:db8::1]:443\","
                    "\"remote\":\"[2001:db8::2]:50000\"}]}]}";
    assert_int_equal(throttle_rules_parse(j, 1000000, &r, err, sizeof(err)), 0);
    assert_int_equal(r.peers.n, 1);
    assert_int_equal(r.peers.rule[0].id, 9);
    assert_int_equal(r.peers.rule[0].mode, THROTTLE_ENFORCE);
    assert_int_equal(r.peers.rule[0].rate_bps, 40000000);
    assert_int_equal(r.peers.rule[0].expires_at_us, 1000000 + 60 * 1000000LL);
    assert_int_equal(r.peers.rule[0].n, 2);
    assert_int_equal(r.peers.n_sock, 2);
    const struct throttle_peer *p = &r.peers.sock[0];
    static const uint8_t l4[16] = {[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 1, [15] = 10};
    static const uint8_t r4[16] = {[10] = 0xff, [11] = 0xff, [12] = 10, [13] = 2, [15] = 10};
    assert_memory_equal(p->laddr, l4, 16);
    assert_memory_equal(p->raddr, r4, 16);
    assert_int_equal(p->lport, 9000);
    assert_int_equal(p->rport, 41000);
    static const uint8_t l6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
    assert_memory_equal(r.peers.sock[1].laddr, l6, 16);
    assert_int_equal(r.peers.sock[1].rport, 50000);
    const char *bad = "{\"rules\":[],\"peers\":[{\"id\":9,\"mode\":\"enforce\",\"rate_bps\":1,"
                      "\"expires_in_s\":60,\"sockets\":[{\"local\":\"10.1.0.10\",\"remote\":"
                      "\"10.2.0.10:1\"}]}]}";
    assert_int_equal(throttle_rules_parse(bad, 1000000, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "$.peers[0].sockets[0]"));
    assert_int_equal(r.peers.n, 0);
    assert_int_equal(r.peers.n_sock, 0);
    const char *mode = "{\"rules\":[],\"peers\":[{\"id\":9,\"mode\":\"off\",\"rate_bps\":1,"
                       "\"expires_in_s\":60,\"sockets\":[]}]}";
    assert_int_equal(throttle_rules_parse(mode, 1000000, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "$.peers[0].mode"));
}

static void test_report(void **state)
{
    (void)state;
    struct throttle_rule_stat st = {
        .id = 9, .mode = THROTTLE_DRY_RUN, .rate_bps = 5, .processes = 2};
    st.c.pass_bytes = 1ULL << 52; /* exact in JSON */
    st.c.delay_bytes = 3;
    st.c.drop_pkts = 4;
    char *s = throttle_rules_report("h1", "a1", &st, 1);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "rules"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "host")), "h1");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r0, "mode")),
                        "dry_run");
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r0, "passed_bytes")) ==
                4503599627370496.0);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r0, "delayed_bytes")) == 3);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r0, "dropped_packets")) == 4);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r0, "processes")) == 2);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),  cmocka_unit_test(test_refused), cmocka_unit_test(test_scope),
        cmocka_unit_test(test_report), cmocka_unit_test(test_peers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
