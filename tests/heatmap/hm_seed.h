/* Shared by the heatmap tests: a configuration for the seeded sites, SQL execution with a
 * failing assertion, file reading, and the in-process HTTP server (libevent evhttp) that serves
 * hm_page_heatmap / hm_page_cell the way `wanledger reconcile` routes them. */
#ifndef WL_TEST_HM_SEED_H
#define WL_TEST_HM_SEED_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"

/* The heatmap scenario: one cell per status in window 2026-11-29T18:53:00Z, 6 hours of history,
 * attribution with hostile names, link counters, alerts (see hm_seed.c for the figures). */
extern const char hm_test_seed_sql[];
#define HM_TEST_N_CELLS 7
struct hm_test_cell {
    const char *src, *dst, *status;
};
/* The cells the scenario must show, with their statuses. */
extern const struct hm_test_cell hm_test_cells[HM_TEST_N_CELLS];
#define HM_TEST_HOSTILE_WF "<script>alert(1)</script><img src=x onerror=alert(2)>"

/* cfg_parse of a config with sites nyc, chi, osl, lon and database = conninfo. Aborts on error. */
struct cfg *hm_test_cfg(const char *conninfo);
/* Runs sql (several statements allowed); aborts the test with the server's message on error. */
void hm_test_exec(PGconn *db, const char *sql);
/* One value of a one-row query, as a string owned by the caller (NULL for SQL NULL). */
char *hm_test_value(PGconn *db, const char *sql);
/* Whole file, NUL-terminated; NULL when unreadable. *len may be NULL. */
char *hm_test_slurp(const char *path, size_t *len);
/* WL_BUILD_DIR/tests/heatmap/artifacts (created). */
const char *hm_test_artifacts(void);

struct hm_test_server;
/* Serves GET /heatmap and /heatmap/cell on 127.0.0.1:port in a thread, with its own connection. */
struct hm_test_server *hm_test_server_start(const char *conninfo, const struct cfg *cfg, int *port);
void hm_test_server_stop(struct hm_test_server *s);

/* Loads url in headless Chromium (Debian's package): a PNG screenshot to png (checked to be a
 * real picture) and the DOM (--dump-dom) to dom. cmocka assertions. */
void hm_test_chromium(const char *url, const char *png, const char *dom, int width, int height);
/* Loads http://127.0.0.1:PORT/PATH in Chromium (hm_test_chromium), the screenshot and the DOM
 * kept as NAME.png and NAME.dom.html in hm_test_artifacts(); the DOM (malloc'd, never NULL). */
char *hm_test_page(int port, const char *path, const char *name, int width, int height);
/* The heatmap DOM holds exactly one <g class="cell"> per hm_test_cells entry, each with its
 * data-status, and nyc->chi with data-coverage 0.6000. cmocka assertions. */
void hm_test_check_grid_dom(const char *html);

/* Counts non-overlapping occurrences of needle in hay. */
size_t hm_test_count(const char *hay, const char *needle);

#endif
