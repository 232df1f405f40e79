/* The heatmap page at 500 sites (hm_fleet.c) against a throwaway real PostgreSQL: 500 pairs with
 * traffic (s_i -> s_i+1, unattributed i x 1000 bytes) and 500 circuits without rows (s_i <->
 * s_i+2); the page stays within a bounded size, lists the 1,500 pairs with a circuit or traffic
 * worst first (200 rows, the rest counted), groups the sites by name prefix, and the site and
 * group filters keep the pairs counted here by hand. The strip reads heatmap_cells_hourly. */
#include <event2/buffer.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "db.h"
#include "harness.h"
#include "hm_grid.h"
#include "hm_heatmap_html.h"
#include "timeutil.h"

#define N              500
#define WS_S           INT64_C(1762077600) /* 2025-11-02T10:00:00Z */
#define US(s)          ((s)*INT64_C(1000000))
#define MAX_PAGE_BYTES (400 * 1024)

static PGconn *db;
static struct cfg *cfg;

static void exec(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%.200s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

/* The page for the window, with the filter; returns a malloc'd NUL-terminated copy. */
static char *page(const char *site, const char *group, size_t *len)
{
    struct hm_span span = {.kind = HM_SPAN_WINDOW, .window_us = US(WS_S)};
    struct hm_grid *g = NULL;
    char err[512];
    if (hm_grid_load(db, cfg, &span, &g, err, sizeof err) < 0)
        fail_msg("%s", err);
    struct evbuffer *b = evbuffer_new();
    struct hm_fleet_opts fo = {.site = site, .group = group};
    hm_heatmap_html_opts(b, g, cfg, "", &fo);
    hm_grid_free(g);
    *len = evbuffer_get_length(b);
    char *s = malloc(*len + 1);
    evbuffer_remove(b, s, *len);
    s[*len] = 0;
    evbuffer_free(b);
    return s;
}

static void test_fleet_page(void **state)
{
    (void)state;
    size_t len;
    char *p = page(NULL, NULL, &len);
    print_message("page of %d sites: %zu bytes\n", N, len);
    assert_true(len < MAX_PAGE_BYTES);
    assert_non_null(strstr(p, "Pairs with a circuit or traffic (1500 of 500 sites' 249500"));
    assert_non_null(strstr(p, "1300 more pairs not listed"));
    assert_non_null(strstr(p, "Site groups (5)")); /* s0.. s4 */
    /* worst first: s499 -> s000 (499,000 bytes), then s498 -> s499, s497 -> s498 */
    char *a = strstr(p, "src=s499&amp;dst=s000"), *b = strstr(p, "src=s498&amp;dst=s499"),
         *c = strstr(p, "src=s497&amp;dst=s498");
    assert_true(a && b && c && a < b && b < c);
    /* the 200th row is s300 -> s301; s299 -> s300 is not listed */
    assert_non_null(strstr(p, "src=s300&amp;dst=s301"));
    assert_null(strstr(p, "src=s299&amp;dst=s300"));
    /* a circuit without rows is a pair too, but is beyond the 200 worst here */
    free(p);

    /* one site: traffic s122->s123, s123->s124; circuits s121<->s123, s123<->s125 */
    p = page("s123", NULL, &len);
    assert_non_null(strstr(p, "Pairs with a circuit or traffic (6 of"));
    assert_non_null(strstr(p, "src=s121&amp;dst=s123"));
    assert_non_null(strstr(p, "src=s125&amp;dst=s123"));
    assert_non_null(strstr(p, "no rows (circuit only)"));
    free(p);

    /* group s2 (s200..s299): traffic i -> i+1 for i = 199..299 (101); circuits with an end in
     * 200..299: i = 198..299 (102), both directions (204) */
    p = page(NULL, "s2", &len);
    assert_non_null(strstr(p, "Pairs with a circuit or traffic (305 of"));
    free(p);
}

static int setup(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512];
    db = db_connect_str(ci, err, sizeof err);
    assert_non_null(db);
    size_t cap = 1 << 20, n = 0;
    char *j = malloc(cap);
    n += (size_t)snprintf(j + n, cap - n, "{\"window_seconds\": 60, \"sites\": [");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(j + n, cap - n,
                              "%s{\"name\": \"s%03d\", \"prefixes\": [\"10.%d.%d.0/24\"]}",
                              i ? ", " : "", i, 1 + i / 200, i % 200);
    n += (size_t)snprintf(j + n, cap - n, "], \"devices\": [");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(j + n, cap - n,
                              "%s{\"name\": \"r%03d\", \"site\": \"s%03d\", \"gnmi\": {}}",
                              i ? ", " : "", i, i);
    n += (size_t)snprintf(j + n, cap - n, "], \"links\": [");
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(j + n, cap - n,
                              "%s{\"device\": \"r%03d\", \"interface\": \"x\", \"site\": \"s%03d\","
                              " \"peer_site\": \"s%03d\", \"circuit\": \"c%03d\"}",
                              i ? ", " : "", i, i, (i + 2) % N, i);
    snprintf(j + n, cap - n, "]}");
    struct cfg_errors errs = {0};
    cfg = cfg_parse("test_hm_fleet.json", j, &errs);
    free(j);
    if (!cfg) {
        for (size_t i = 0; i < errs.n; i++)
            print_error("%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        fail_msg("config");
    }
    exec("DELETE FROM heatmap_cells");
    exec("INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, "
         "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, "
         "service_bytes, unattributed_bytes, coverage, status) SELECT "
         "'2025-11-02T10:00:00Z', 60, format('s%s', lpad(i::text, 3, '0')), "
         "format('s%s', lpad(((i + 1) % 500)::text, 3, '0')), 2000000, 1900000, "
         "1900000 - i * 1000, 1900000 - i * 1000, 0, 0, i * 1000, (1900000 - i * 1000) / "
         "1900000.0, CASE WHEN i < 95 THEN 'ok' ELSE 'red' END FROM generate_series(0, 499) i");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(cfg);
    PQfinish(db);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fleet_page)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
