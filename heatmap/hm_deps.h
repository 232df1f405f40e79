/* The dependency map read side (docs/design.md "Dependency map"): `wanledger deps`,
 * GET /api/v1/deps and the /deps page. Loads a selector's dependency_rollup rows and the cells
 * of the hops they cross, plans (hm_deps_plan.h), and prints text or JSON (with the nodes and
 * links a Sankey view draws). */
#ifndef WL_HM_DEPS_H
#define WL_HM_DEPS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "hm_deps_plan.h"

enum hm_deps_by { HM_DEPS_WORKFLOW, HM_DEPS_PROGRAM, HM_DEPS_USER };

struct hm_deps_query {
    enum hm_deps_by by;
    const char *name;
    int64_t from_us, to_us; /* window starts in [from, to) */
    int move_to;            /* site index or -1 */
};

struct hm_deps_result {
    struct hm_deps_query q;
    PGresult *rows_r; /* owns the strings the plan borrows */
    struct hm_dep_row *rows;
    size_t n_rows;
    size_t n_unknown_sites; /* rows naming a site the configuration no longer has */
    uint64_t windows;       /* distinct windows with rows */
    struct hm_dep_plan plan;
};

/* "workflow", "program", "user". */
const char *hm_deps_by_name(enum hm_deps_by by);
/* Runs the query and the plan. 0, or -1 with err. */
int hm_deps_run(PGconn *db, const struct cfg *cfg, const struct hm_deps_query *q,
                struct hm_deps_result *r, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void hm_deps_result_free(struct hm_deps_result *r);
void hm_deps_print(FILE *f, const struct cfg *cfg, const struct hm_deps_result *r);
void hm_deps_json(struct evbuffer *out, const struct cfg *cfg, const struct hm_deps_result *r);
/* The /deps page: endpoints table, circuits table and an SVG Sankey (no JavaScript). */
void hm_deps_page(struct evbuffer *out, const struct cfg *cfg, const struct hm_deps_result *r);

#endif
