/* Flows to links by the exporting device and its interfaces (pollers/flow_link.h), the way
 * counters map to links: the links of a configuration (nyc-r's wan-chi and wan-osl, chi-r's
 * wan-nyc), ifIndexes learned from SNMP samples (poll_sample_ifindex: ifIndex x 2^32 +
 * discontinuity time; not from a sample read while the interface was down, nor from gNMI);
 * a record leaving by a link's interface goes site -> peer, one arriving peer -> site, one whose
 * in and out are the same interface (softflowd -i IDX:IF) by its destination; a transit flow
 * (osl -> nyc, seen by nyc-r arriving on wan-chi) is placed on the link it crossed, not on its
 * addresses' pair; unknown interfaces (or none learned yet) give no sites (addresses decide in
 * the reconciler). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "flow_link.h"
#include "poll_sample.h"

static const char CFG[] =
    "{\"database\": \"host=/nonexistent\", \"listen\": \"127.0.0.1:1\","
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
    "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"
    "             {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],"
    " \"devices\": [{\"name\": \"nyc-r\", \"site\": \"nyc\", \"gnmi\": {},"
    "   \"flows\": {\"listen\": \"127.0.0.1:4739\", \"protocol\": \"ipfix\"}},"
    "  {\"name\": \"chi-r\", \"site\": \"chi\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"nyc-r\", \"interface\": \"wan-chi\", \"site\": \"nyc\","
    "   \"peer_site\": \"chi\", \"circuit\": \"nc\"},"
    "  {\"device\": \"nyc-r\", \"interface\": \"wan-osl\", \"site\": \"nyc\","
    "   \"peer_site\": \"osl\", \"circuit\": \"no\"},"
    "  {\"device\": \"chi-r\", \"interface\": \"wan-nyc\", \"site\": \"chi\","
    "   \"peer_site\": \"nyc\", \"circuit\": \"nc\"}]}";

static struct cfg *g_cfg;

static struct poll_sample snmp(const char *dev, const char *ifname, long idx, bool up)
{
    struct poll_sample s;
    memset(&s, 0, sizeof(s));
    snprintf(s.device, sizeof(s.device), "%s", dev);
    snprintf(s.interface, sizeof(s.interface), "%s", ifname);
    s.has_uptime = true;
    s.uptime_cs = 123456;
    s.discontinuity_cs = up ? (int64_t)idx * (1LL << 32) + 777 : s.uptime_cs;
    return s;
}

static void sites(const struct flow_links *fl, const char *dev, uint32_t in, uint32_t out,
                  const char *dst, const char *want_src, const char *want_dst)
{
    uint8_t a[16] = {0};
    int d = cfg_device_index(g_cfg, dev);
    sscanf(dst, "%hhu.%hhu.%hhu.%hhu", &a[0], &a[1], &a[2], &a[3]);
    int s = -2, t = -2;
    bool got = flow_links_sites(fl, (uint32_t)d, in, out, 4, a, &s, &t);
    if (!want_src) {
        assert_false(got);
        return;
    }
    assert_true(got);
    assert_string_equal(g_cfg->sites[s].name, want_src);
    assert_string_equal(g_cfg->sites[t].name, want_dst);
}

static void test_links(void **state)
{
    (void)state;
    struct cfg_errors errs = {0};
    g_cfg = cfg_parse("flow-link.json", CFG, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
    assert_non_null(g_cfg);
    struct flow_links *fl = flow_links_new(g_cfg);
    assert_non_null(fl);
    sites(fl, "nyc-r", 0, 7, "10.2.0.20", NULL, NULL); /* nothing learned yet */

    struct poll_sample down = snmp("nyc-r", "wan-chi", 7, false),
                       gnmi = snmp("nyc-r", "wan-chi", 7, true);
    gnmi.has_uptime = false;
    assert_int_equal(poll_sample_ifindex(&down), 0);
    assert_int_equal(poll_sample_ifindex(&gnmi), 0);
    struct poll_sample chi = snmp("nyc-r", "wan-chi", 7, true),
                       osl = snmp("nyc-r", "wan-osl", 9, true);
    assert_int_equal(poll_sample_ifindex(&chi), 7);
    flow_links_learn(fl, chi.device, chi.interface, poll_sample_ifindex(&chi));
    flow_links_learn(fl, osl.device, osl.interface, poll_sample_ifindex(&osl));
    flow_links_learn(fl, "nyc-r", "lan", 3); /* not a link: ignored */

    sites(fl, "nyc-r", 3, 7, "10.2.0.20", "nyc", "chi"); /* leaves by wan-chi */
    sites(fl, "nyc-r", 7, 3, "10.1.0.20", "chi", "nyc"); /* arrives by wan-chi */
    sites(fl, "nyc-r", 7, 7, "10.2.0.20", "nyc", "chi"); /* one interface: the destination says */
    sites(fl, "nyc-r", 7, 7, "10.1.0.20", "chi", "nyc");
    /* transit osl -> chi through nyc: arrives by wan-osl, leaves by wan-chi: the egress link */
    sites(fl, "nyc-r", 9, 7, "10.2.0.5", "nyc", "chi");
    /* osl -> nyc host, arriving on wan-osl (addresses would say osl -> nyc as well) */
    sites(fl, "nyc-r", 9, 3, "10.1.0.5", "osl", "nyc");
    sites(fl, "nyc-r", 3, 4, "10.2.0.20", NULL, NULL); /* neither interface is a link */
    sites(fl, "chi-r", 0, 7, "10.1.0.20", NULL, NULL); /* ifIndex 7 is nyc-r's, not chi-r's */
    /* a re-resolution (reboot): wan-chi is now ifIndex 12 */
    flow_links_learn(fl, "nyc-r", "wan-chi", 12);
    sites(fl, "nyc-r", 3, 7, "10.2.0.20", NULL, NULL);
    sites(fl, "nyc-r", 3, 12, "10.2.0.20", "nyc", "chi");
    flow_links_free(fl);
    cfg_free(g_cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_links)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
