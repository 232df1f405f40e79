/* The dependency map read side: query, plan, text and JSON (hm_deps.h). */
#include "hm_deps.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hm_fmt.h"
#include "hm_sql.h"
#include "jsonw.h"
#include "timeutil.h"

const char *hm_deps_by_name(enum hm_deps_by by)
{
    return by == HM_DEPS_PROGRAM ? "program" : by == HM_DEPS_USER ? "user" : "workflow";
}

static const char SQL_ROWS_FMT[] = "SELECT " HM_SQL_US(
    "window_start") ", local_site, remote_site, kind, endpoint,"
                    " sum(bytes_out)::bigint, sum(bytes_in)::bigint, sum(connections)::bigint"
                    " FROM dependency_rollup WHERE %s = $1 AND window_start >= " HM_SQL_TS(
                        2) " AND window_start < " HM_SQL_TS(3) " GROUP BY 1, 2, 3, 4, 5 ORDER BY "
                                                               "1, 2, 3, 4, 5";

static const char SQL_CELLS[] =
    "SELECT " HM_SQL_US("c.window_start") ", c.src_site, c.dst_site, c.observed_bytes,"
                                          " c.capacity_bps FROM heatmap_cells c"
                                          " JOIN unnest($3::text[], $4::text[]) AS h(src, dst) ON "
                                          "c.src_site = h.src AND c.dst_site = h.dst"
                                          " WHERE c.window_start >= " HM_SQL_TS(
                                              1) " AND c.window_start < " HM_SQL_TS(2);

static const char *col_of(enum hm_deps_by by)
{
    return by == HM_DEPS_PROGRAM ? "program" : by == HM_DEPS_USER ? "user_name" : "workflow";
}

static int load_rows(PGconn *db, const struct cfg *cfg, struct hm_deps_result *r, char *err,
                     size_t errlen)
{
    char sql[sizeof SQL_ROWS_FMT + 16], a[24], b[24];
    snprintf(sql, sizeof sql, SQL_ROWS_FMT, col_of(r->q.by));
    const char *params[] = {r->q.name, hm_sql_i64_text(r->q.from_us, a),
                            hm_sql_i64_text(r->q.to_us, b)};
    r->rows_r = pgc_query(db, "loading dependency_rollup", sql, 3, params, err, errlen);
    if (!r->rows_r)
        return -1;
    int n = PQntuples(r->rows_r);
    r->rows = calloc((size_t)n + 1, sizeof *r->rows);
    if (!r->rows) {
        snprintf(err, errlen, "deps: out of memory");
        return -1;
    }
    int64_t last_w = INT64_MIN;
    for (int i = 0; i < n; i++) {
        const PGresult *q = r->rows_r;
        int ls = cfg_site_index(cfg, hm_sql_str(q, i, 1));
        int rs = cfg_site_index(cfg, hm_sql_str(q, i, 2));
        if (ls < 0 || rs < 0) {
            r->n_unknown_sites++;
            continue;
        }
        struct hm_dep_row *d = &r->rows[r->n_rows++];
        d->window_us = hm_sql_i64(q, i, 0);
        if (d->window_us != last_w) {
            r->windows++;
            last_w = d->window_us;
        }
        d->local_site = ls;
        d->remote_site = rs;
        d->kind = hm_sql_str(q, i, 3);
        d->endpoint = hm_sql_str(q, i, 4);
        d->bytes_out = (uint64_t)hm_sql_i64(q, i, 5);
        d->bytes_in = (uint64_t)hm_sql_i64(q, i, 6);
        d->connections = (uint64_t)hm_sql_i64(q, i, 7);
    }
    return 0;
}

/* The cells of every hop the plan touches, for the peak check. */
static int load_cells(PGconn *db, const struct cfg *cfg, struct hm_deps_result *r,
                      struct hm_dep_cell **cells, size_t *n_cells, char *err, size_t errlen)
{
    struct evbuffer *src = evbuffer_new(), *dst = evbuffer_new();
    int rc = -1;
    PGresult *q = NULL;
    if (!src || !dst)
        goto cleanup;
    evbuffer_add(src, "{", 1);
    evbuffer_add(dst, "{", 1);
    for (size_t i = 0; i < r->plan.n_circuits; i++) {
        const char *sep = i ? "," : "";
        evbuffer_add_printf(src, "%s\"%s\"", sep, cfg->sites[r->plan.circuits[i].src_site].name);
        evbuffer_add_printf(dst, "%s\"%s\"", sep, cfg->sites[r->plan.circuits[i].dst_site].name);
    }
    evbuffer_add(src, "}", 2);
    evbuffer_add(dst, "}", 2);
    char a[24], b[24];
    /* site names are configuration names: validated identifiers, no quotes or backslashes */
    const char *params[] = {hm_sql_i64_text(r->q.from_us, a), hm_sql_i64_text(r->q.to_us, b),
                            (const char *)evbuffer_pullup(src, -1),
                            (const char *)evbuffer_pullup(dst, -1)};
    q = pgc_query(db, "loading heatmap_cells", SQL_CELLS, 4, params, err, errlen);
    if (!q)
        goto cleanup;
    int n = PQntuples(q);
    *cells = calloc((size_t)n + 1, sizeof **cells);
    if (!*cells) {
        snprintf(err, errlen, "deps: out of memory");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        struct hm_dep_cell *c = &(*cells)[(*n_cells)++];
        c->window_us = hm_sql_i64(q, i, 0);
        c->src_site = cfg_site_index(cfg, hm_sql_str(q, i, 1));
        c->dst_site = cfg_site_index(cfg, hm_sql_str(q, i, 2));
        c->has_observed = !hm_sql_null(q, i, 3);
        c->observed_bytes = (uint64_t)hm_sql_i64(q, i, 3);
        c->capacity_bps = (uint64_t)hm_sql_i64(q, i, 4);
    }
    rc = 0;
cleanup:
    if (rc && !*err)
        snprintf(err, errlen, "deps: out of memory");
    PQclear(q);
    if (src)
        evbuffer_free(src);
    if (dst)
        evbuffer_free(dst);
    return rc;
}

int hm_deps_run(PGconn *db, const struct cfg *cfg, const struct hm_deps_query *q,
                struct hm_deps_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->q = *q;
    struct hm_dep_cell *cells = NULL;
    size_t n_cells = 0;
    err[0] = '\0';
    int began = hm_sql_read_begin(db), rc = -1;
    if (load_rows(db, cfg, r, err, errlen))
        goto cleanup;
    /* a first plan finds the hops; the second adds the cells' peaks */
    if (hm_deps_plan(cfg, r->rows, r->n_rows, NULL, 0, q->move_to, &r->plan, err, errlen))
        goto cleanup;
    if (r->plan.n_circuits) {
        if (load_cells(db, cfg, r, &cells, &n_cells, err, errlen))
            goto cleanup;
        hm_deps_plan_free(&r->plan);
        if (hm_deps_plan(cfg, r->rows, r->n_rows, cells, n_cells, q->move_to, &r->plan, err,
                         errlen))
            goto cleanup;
    }
    rc = 0;
cleanup:
    hm_sql_read_end(db, began);
    free(cells);
    return rc;
}

void hm_deps_result_free(struct hm_deps_result *r)
{
    hm_deps_plan_free(&r->plan);
    free(r->rows);
    PQclear(r->rows_r);
    memset(r, 0, sizeof *r);
}

static const char *site(const struct cfg *cfg, int i)
{
    return i >= 0 && (size_t)i < cfg->n_sites ? cfg->sites[i].name : "?";
}

void hm_deps_print(FILE *f, const struct cfg *cfg, const struct hm_deps_result *r)
{
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN], v1[HM_FMT_LEN], v2[HM_FMT_LEN], v3[HM_FMT_LEN];
    const struct hm_dep_plan *p = &r->plan;
    fprintf(f, "%s %s, windows %s .. %s (%" PRIu64 " windows with traffic): %s both ways\n",
            hm_deps_by_name(r->q.by), r->q.name, tm_format_rfc3339(r->q.from_us, a),
            tm_format_rfc3339(r->q.to_us, b), r->windows,
            hm_fmt_bytes((int64_t)(p->total_bytes), v1));
    fprintf(f, "\nendpoints (bytes over the span; out = from the owner's site)\n");
    fprintf(f, "  %-6s %-6s %-9s %-36s %12s %12s %6s %8s\n", "local", "remote", "kind", "endpoint",
            "out", "in", "share", "conns");
    for (size_t i = 0; i < p->n_endpoints; i++) {
        const struct hm_dep_endpoint *e = &p->endpoints[i];
        fprintf(f, "  %-6s %-6s %-9s %-36s %12s %12s %5.1f%% %8" PRIu64 "\n",
                site(cfg, e->local_site), site(cfg, e->remote_site), e->kind, e->endpoint,
                hm_fmt_bytes((int64_t)(e->bytes_out), v1), hm_fmt_bytes((int64_t)(e->bytes_in), v2),
                e->share * 100, e->connections);
    }
    if (p->unrouted_bytes)
        fprintf(f, "  (%s between sites with no circuit path)\n",
                hm_fmt_bytes((int64_t)(p->unrouted_bytes), v1));
    fprintf(f, "\ncircuit directions crossed%s%s\n", p->move_to >= 0 ? ", if it ran at " : "",
            p->move_to >= 0 ? site(cfg, p->move_to) : "");
    for (size_t i = 0; i < p->n_circuits; i++) {
        const struct hm_dep_circuit *c = &p->circuits[i];
        fprintf(f, "  %s->%s  today %s", site(cfg, c->src_site), site(cfg, c->dst_site),
                hm_fmt_bytes((int64_t)(c->bytes_now), v1));
        if (p->move_to >= 0) {
            int64_t d = (int64_t)c->bytes_moved - (int64_t)c->bytes_now;
            fprintf(f, "  moved %s  change %s%s", hm_fmt_bytes((int64_t)(c->bytes_moved), v2),
                    d < 0 ? "-" : "+",
                    hm_fmt_bytes((int64_t)(d < 0 ? (uint64_t)-d : (uint64_t)d), v3));
        }
        if (c->has_util) {
            fprintf(f, "  peak %.1f%%", c->peak_util_now * 100);
            if (p->move_to >= 0)
                fprintf(f, " -> %.1f%%", c->peak_util_moved * 100);
            fprintf(f, " of %s", hm_fmt_bps((double)c->capacity_bps, v1));
            if (p->move_to >= 0 ? c->exceeds_moved : c->exceeds_now)
                fprintf(f, "  ABOVE saturation (%.0f%%)", cfg->saturation * 100);
        } else {
            fprintf(f, "  (no counters)");
        }
        fputc('\n', f);
    }
}

/* Sankey: owner -> local site -> remote site -> endpoint; every node's in = out. */
static void json_sankey(struct jw *w, const struct cfg *cfg, const struct hm_deps_result *r)
{
    const struct hm_dep_plan *p = &r->plan;
    size_t ns = cfg->n_sites;
    /* node ids: 0 owner, 1..ns local sites, ns+1..2ns remote sites, then endpoints */
    jw_key(w, "sankey");
    jw_begin_object(w);
    jw_key(w, "nodes");
    jw_begin_array(w);
    jw_begin_object(w);
    jw_kv_u64(w, "id", 0);
    jw_kv_str(w, "name", r->q.name);
    jw_kv_str(w, "kind", hm_deps_by_name(r->q.by));
    jw_end(w);
    for (int side = 0; side < 2; side++)
        for (size_t s = 0; s < ns; s++) {
            bool used = false;
            for (size_t i = 0; i < p->n_endpoints && !used; i++)
                used = (side ? p->endpoints[i].remote_site : p->endpoints[i].local_site) == (int)s;
            if (!used)
                continue;
            jw_begin_object(w);
            jw_kv_u64(w, "id", 1 + side * ns + s);
            jw_kv_str(w, "name", cfg->sites[s].name);
            jw_kv_str(w, "kind", side ? "remote_site" : "local_site");
            jw_end(w);
        }
    for (size_t i = 0; i < p->n_endpoints; i++) {
        jw_begin_object(w);
        jw_kv_u64(w, "id", 1 + 2 * ns + i);
        jw_kv_str(w, "name", p->endpoints[i].endpoint);
        jw_kv_str(w, "kind", p->endpoints[i].kind);
        jw_end(w);
    }
    jw_end(w);
    jw_key(w, "links");
    jw_begin_array(w);
    for (size_t s = 0; s < ns; s++) { /* owner -> local site */
        uint64_t bytes = hm_deps_site_bytes(p, (int)s, -1);
        if (!bytes)
            continue;
        jw_begin_object(w);
        jw_kv_u64(w, "source", 0);
        jw_kv_u64(w, "target", 1 + s);
        jw_kv_u64(w, "bytes", bytes);
        jw_end(w);
    }
    for (size_t a = 0; a < ns; a++) /* local site -> remote site */
        for (size_t b = 0; b < ns; b++) {
            uint64_t bytes = hm_deps_site_bytes(p, (int)a, (int)b);
            if (!bytes)
                continue;
            jw_begin_object(w);
            jw_kv_u64(w, "source", 1 + a);
            jw_kv_u64(w, "target", 1 + ns + b);
            jw_kv_u64(w, "bytes", bytes);
            jw_end(w);
        }
    for (size_t i = 0; i < p->n_endpoints; i++) { /* remote site -> endpoint */
        jw_begin_object(w);
        jw_kv_u64(w, "source", 1 + ns + (size_t)p->endpoints[i].remote_site);
        jw_kv_u64(w, "target", 1 + 2 * ns + i);
        jw_kv_u64(w, "bytes", p->endpoints[i].bytes_out + p->endpoints[i].bytes_in);
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}

void hm_deps_json(struct evbuffer *out, const struct cfg *cfg, const struct hm_deps_result *r)
{
    const struct hm_dep_plan *p = &r->plan;
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    struct jw w;
    jw_init(&w, out);
    jw_begin_object(&w);
    jw_kv_str(&w, "by", hm_deps_by_name(r->q.by));
    jw_kv_str(&w, "name", r->q.name);
    jw_kv_str(&w, "from", tm_format_rfc3339(r->q.from_us, a));
    jw_kv_str(&w, "to", tm_format_rfc3339(r->q.to_us, b));
    jw_kv_u64(&w, "window_seconds", (uint64_t)cfg->window_seconds);
    jw_kv_u64(&w, "windows", r->windows);
    jw_kv_u64(&w, "total_bytes", p->total_bytes);
    jw_kv_u64(&w, "unrouted_bytes", p->unrouted_bytes);
    jw_key(&w, "move_to");
    jw_string(&w, p->move_to >= 0 ? site(cfg, p->move_to) : NULL);
    jw_key(&w, "endpoints");
    jw_begin_array(&w);
    for (size_t i = 0; i < p->n_endpoints; i++) {
        const struct hm_dep_endpoint *e = &p->endpoints[i];
        jw_begin_object(&w);
        jw_kv_str(&w, "local_site", site(cfg, e->local_site));
        jw_kv_str(&w, "remote_site", site(cfg, e->remote_site));
        jw_kv_str(&w, "kind", e->kind);
        jw_kv_str(&w, "endpoint", e->endpoint);
        jw_kv_u64(&w, "bytes_out", e->bytes_out);
        jw_kv_u64(&w, "bytes_in", e->bytes_in);
        jw_kv_u64(&w, "connections", e->connections);
        jw_kv_double(&w, "share", e->share);
        jw_kv_u64(&w, "peak_out_bps", e->peak_out_bps);
        jw_kv_u64(&w, "peak_in_bps", e->peak_in_bps);
        jw_end(&w);
    }
    jw_end(&w);
    jw_key(&w, "circuits");
    jw_begin_array(&w);
    for (size_t i = 0; i < p->n_circuits; i++) {
        const struct hm_dep_circuit *c = &p->circuits[i];
        jw_begin_object(&w);
        jw_kv_str(&w, "src_site", site(cfg, c->src_site));
        jw_kv_str(&w, "dst_site", site(cfg, c->dst_site));
        jw_kv_u64(&w, "bytes_now", c->bytes_now);
        if (p->move_to >= 0) {
            jw_kv_u64(&w, "bytes_moved", c->bytes_moved);
            jw_kv_i64(&w, "delta_bytes", (int64_t)c->bytes_moved - (int64_t)c->bytes_now);
        }
        jw_kv_u64(&w, "capacity_bps", c->capacity_bps);
        jw_key(&w, "peak_utilization_now");
        if (c->has_util)
            jw_double(&w, c->peak_util_now);
        else
            jw_null(&w);
        if (p->move_to >= 0) {
            jw_key(&w, "peak_utilization_moved");
            if (c->has_util)
                jw_double(&w, c->peak_util_moved);
            else
                jw_null(&w);
            jw_key(&w, "exceeds_saturation_moved");
            jw_bool(&w, c->exceeds_moved);
        }
        jw_key(&w, "exceeds_saturation_now");
        jw_bool(&w, c->exceeds_now);
        jw_end(&w);
    }
    jw_end(&w);
    json_sankey(&w, cfg, r);
    jw_end(&w);
    evbuffer_add(out, "\n", 1);
}
