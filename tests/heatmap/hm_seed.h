/* Shared by the heatmap tests: a configuration for the seeded sites, SQL execution with a
 * failing assertion, file reading, and the in-process HTTP server (libevent evhttp) that serves
 * hm_page_heatmap / hm_page_cell the way `wanledger reconcile` routes them. */
#ifndef WL_TEST_HM_SEED_H
#define WL_TEST_HM_SEED_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"

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

/* Counts non-overlapping occurrences of needle in hay. */
size_t hm_test_count(const char *hay, const char *needle);

#endif
