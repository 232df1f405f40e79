/* POST /v1/flowsamples (see flowin.h). */
#include "flowin.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowin_ifc.h"
#include "jsonv.h"
#include "jsonw.h"
#include "timeutil.h"

#define MAX_CELLS (1 << 20)

struct cell {
    const char *window_start, *device, *src, *dst;
    char src_site[128], dst_site[128];
    bool has_src_site, has_dst_site;
    uint64_t proto, port, samples, sampled, estimated, rate_min, rate_max;
    double variance;
};

struct vc {
    const struct cfg *cfg;
    int64_t now_us;
    char msg[200], path[320];
};

static int bad(struct vc *c, const char *path, const char *msg)
{
    snprintf(c->msg, sizeof(c->msg), "%s", msg);
    snprintf(c->path, sizeof(c->path), "%s", path);
    return -1;
}

static int want_u(struct vc *c, const struct jv *o, const char *key, const char *base, uint64_t max,
                  uint64_t *out)
{
    const struct jv *v = jv_get(o, key);
    char p[300];
    snprintf(p, sizeof(p), "%s.%s", base, key);
    if (!v || v->type != JV_NUMBER || !v->is_int || v->neg || v->overflow || v->u > max) {
        char m[120];
        snprintf(m, sizeof(m), "expected an integer 0..%llu", (unsigned long long)max);
        return bad(c, p, m);
    }
    *out = v->u;
    return 0;
}

static int want_s(struct vc *c, const struct jv *o, const char *key, const char *base,
                  const char **out)
{
    const struct jv *v = jv_get(o, key);
    char p[300];
    snprintf(p, sizeof(p), "%s.%s", base, key);
    if (!v || v->type != JV_STRING || v->n == 0 || strlen(v->s) != v->n)
        return bad(c, p, "expected a non-empty string");
    *out = v->s;
    return 0;
}

static int want_addr(struct vc *c, const struct jv *o, const char *key, const char *base,
                     const char **out)
{
    if (want_s(c, o, key, base, out) < 0)
        return -1;
    uint8_t a[16];
    if (inet_pton(AF_INET, *out, a) != 1 && inet_pton(AF_INET6, *out, a) != 1) {
        char p[300];
        snprintf(p, sizeof(p), "%s.%s", base, key);
        return bad(c, p, "expected an IPv4 or IPv6 address");
    }
    return 0;
}

static int flow_device(const struct cfg *cfg, const char *name)
{
    int i = cfg_device_index(cfg, name);
    return i >= 0 && cfg->devices[i].has_flows ? i : -1;
}

static int one_cell(struct vc *c, const struct jv *o, long i, struct cell *out)
{
    char base[64];
    snprintf(base, sizeof(base), "$.cells[%ld]", i);
    if (o->type != JV_OBJECT)
        return bad(c, base, "expected a cell object");
    memset(out, 0, sizeof(*out));
    int64_t ws;
    if (want_s(c, o, "window_start", base, &out->window_start) < 0)
        return -1;
    char p[300];
    snprintf(p, sizeof(p), "%s.window_start", base);
    if (tm_parse_rfc3339(out->window_start, &ws) < 0)
        return bad(c, p, "expected an RFC 3339 time");
    if (!tm_is_aligned(ws, c->cfg->window_seconds))
        return bad(c, p, "not the start of a window of window_seconds");
    if (ws > c->now_us + (int64_t)c->cfg->max_future_seconds * 1000000LL)
        return bad(c, p, "window starts in the future (check the poller's clock)");
    if (want_s(c, o, "device", base, &out->device) < 0)
        return -1;
    if (flow_device(c->cfg, out->device) < 0) {
        snprintf(p, sizeof(p), "%s.device", base);
        return bad(c, p, "not a configured device with a \"flows\" section");
    }
    if (want_addr(c, o, "src_addr", base, &out->src) < 0 ||
        want_addr(c, o, "dst_addr", base, &out->dst) < 0 ||
        want_u(c, o, "proto", base, 255, &out->proto) < 0 ||
        want_u(c, o, "dst_port", base, 65535, &out->port) < 0 ||
        want_u(c, o, "samples", base, INT64_MAX, &out->samples) < 0 ||
        want_u(c, o, "sampled_bytes", base, INT64_MAX, &out->sampled) < 0 ||
        want_u(c, o, "estimated_bytes", base, INT64_MAX, &out->estimated) < 0 ||
        want_u(c, o, "rate_min", base, UINT32_MAX, &out->rate_min) < 0 ||
        want_u(c, o, "rate_max", base, UINT32_MAX, &out->rate_max) < 0)
        return -1;
    if (out->samples == 0 || out->estimated < out->sampled) {
        snprintf(p, sizeof(p), "%s.estimated_bytes", base);
        return bad(c, p, "expected samples >= 1 and estimated_bytes >= sampled_bytes");
    }
    const struct jv *v = jv_get(o, "variance");
    snprintf(p, sizeof(p), "%s.variance", base);
    if (!v || v->type != JV_NUMBER || v->neg || !isfinite(v->d))
        return bad(c, p, "expected a number >= 0");
    out->variance = v->d;
    /* the link the flow crossed, from the exporter's device and interface (pollers/flow_link.h);
     * else the sites of its addresses */
    const struct jv *ss = jv_get(o, "src_site"), *ds = jv_get(o, "dst_site");
    if (ss || ds) {
        int si = ss && ss->type == JV_STRING ? cfg_site_index(c->cfg, ss->s) : -1;
        int di = ds && ds->type == JV_STRING ? cfg_site_index(c->cfg, ds->s) : -1;
        snprintf(p, sizeof(p), "%s.%s", base, si < 0 ? "src_site" : "dst_site");
        if (si < 0 || di < 0)
            return bad(c, p, "expected a configured site (both src_site and dst_site)");
        out->has_src_site = out->has_dst_site = true;
        snprintf(out->src_site, sizeof(out->src_site), "%s", c->cfg->sites[si].name);
        snprintf(out->dst_site, sizeof(out->dst_site), "%s", c->cfg->sites[di].name);
        return 0;
    }
    int s = cfg_site_of_addr(c->cfg, out->src), d = cfg_site_of_addr(c->cfg, out->dst);
    if (s >= 0) {
        out->has_src_site = true;
        snprintf(out->src_site, sizeof(out->src_site), "%s", c->cfg->sites[s].name);
    }
    if (d >= 0) {
        out->has_dst_site = true;
        snprintf(out->dst_site, sizeof(out->dst_site), "%s", c->cfg->sites[d].name);
    }
    return 0;
}

static int exec_ok(PGconn *db, PGresult *r, char *err, size_t errlen)
{
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        snprintf(err, errlen, "%s", PQerrorMessage(db));
    return ok ? 0 : -1;
}

static const char SQL_BATCH[] =
    "INSERT INTO flow_sample_batches (batch, poller, n_cells) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING RETURNING 1";

static const char SQL_CELL[] =
    "INSERT INTO flow_samples (window_start, window_seconds, device, src_addr, dst_addr, proto,"
    " dst_port, src_site, dst_site, samples, sampled_bytes, estimated_bytes, variance, rate_min,"
    " rate_max) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    " ON CONFLICT (window_start, device, src_addr, dst_addr, proto, dst_port) DO UPDATE SET"
    " samples = flow_samples.samples + EXCLUDED.samples,"
    " sampled_bytes = flow_samples.sampled_bytes + EXCLUDED.sampled_bytes,"
    " estimated_bytes = flow_samples.estimated_bytes + EXCLUDED.estimated_bytes,"
    " variance = flow_samples.variance + EXCLUDED.variance,"
    " rate_min = least(flow_samples.rate_min, EXCLUDED.rate_min),"
    " rate_max = greatest(flow_samples.rate_max, EXCLUDED.rate_max)";

static const char SQL_STATS[] =
    "INSERT INTO flow_collector_stats (poller, device, protocol, datagrams, malformed, records,"
    " unknown_template_sets, undecodable_samples, agg_dropped, updated_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now())"
    " ON CONFLICT (poller, device) DO UPDATE SET protocol = EXCLUDED.protocol,"
    " datagrams = EXCLUDED.datagrams, malformed = EXCLUDED.malformed,"
    " records = EXCLUDED.records, unknown_template_sets = EXCLUDED.unknown_template_sets,"
    " undecodable_samples = EXCLUDED.undecodable_samples, agg_dropped = EXCLUDED.agg_dropped,"
    " updated_at = now()";

/* Stores a validated batch; *fresh says whether the id was new. 0 or -1. */
static int store(PGconn *db, const struct cfg *cfg, const char *poller, const char *batch,
                 const struct cell *cells, size_t n, const struct jv *devices, const struct jv *ifc,
                 bool *fresh, char *err, size_t errlen)
{
    PGresult *r = PQexec(db, "BEGIN");
    int rc = exec_ok(db, r, err, errlen);
    PQclear(r);
    if (rc < 0)
        return -1;
    char ncells[24], wsec[16];
    snprintf(ncells, sizeof(ncells), "%zu", n);
    snprintf(wsec, sizeof(wsec), "%d", cfg->window_seconds);
    const char *bp[3] = {batch, poller, ncells};
    r = PQexecParams(db, SQL_BATCH, 3, NULL, bp, NULL, NULL, 0);
    rc = exec_ok(db, r, err, errlen);
    *fresh = rc == 0 && PQntuples(r) == 1;
    PQclear(r);
    for (size_t i = 0; rc == 0 && *fresh && i < n; i++) {
        const struct cell *c = &cells[i];
        char v[8][32];
        snprintf(v[0], 32, "%llu", (unsigned long long)c->proto);
        snprintf(v[1], 32, "%llu", (unsigned long long)c->port);
        snprintf(v[2], 32, "%llu", (unsigned long long)c->samples);
        snprintf(v[3], 32, "%llu", (unsigned long long)c->sampled);
        snprintf(v[4], 32, "%llu", (unsigned long long)c->estimated);
        snprintf(v[5], 32, "%.17g", c->variance);
        snprintf(v[6], 32, "%llu", (unsigned long long)c->rate_min);
        snprintf(v[7], 32, "%llu", (unsigned long long)c->rate_max);
        const char *p[15] = {c->window_start,
                             wsec,
                             c->device,
                             c->src,
                             c->dst,
                             v[0],
                             v[1],
                             c->has_src_site ? c->src_site : NULL,
                             c->has_dst_site ? c->dst_site : NULL,
                             v[2],
                             v[3],
                             v[4],
                             v[5],
                             v[6],
                             v[7]};
        r = PQexecParams(db, SQL_CELL, 15, NULL, p, NULL, NULL, 0);
        rc = exec_ok(db, r, err, errlen);
        PQclear(r);
    }
    if (rc == 0 && *fresh) /* sFlow counter samples: beside the counters (flowin_ifc.h) */
        rc = flowin_ifc_store(db, poller, ifc, err, errlen);
    for (const struct jv *d = devices ? devices->child : NULL; rc == 0 && d; d = d->next) {
        const struct jv *name = jv_get(d, "device"), *proto = jv_get(d, "protocol");
        const char *keys[6] = {
            "datagrams",           "malformed",  "records", "unknown_template_sets",
            "undecodable_samples", "agg_dropped"};
        char v[6][24];
        const char *p[9] = {poller, name->s, proto->s};
        for (int k = 0; k < 6; k++) {
            snprintf(v[k], sizeof(v[k]), "%llu", (unsigned long long)jv_get(d, keys[k])->u);
            p[3 + k] = v[k];
        }
        r = PQexecParams(db, SQL_STATS, 9, NULL, p, NULL, NULL, 0);
        rc = exec_ok(db, r, err, errlen);
        PQclear(r);
    }
    r = PQexec(db, rc == 0 ? "COMMIT" : "ROLLBACK");
    if (rc == 0)
        rc = exec_ok(db, r, err, errlen);
    PQclear(r);
    return rc;
}

/* Checks $.devices: every entry names a flows device and has the six counters. */
static int check_devices(struct vc *c, const struct jv *devs)
{
    if (!devs)
        return 0;
    if (devs->type != JV_ARRAY)
        return bad(c, "$.devices", "expected an array");
    long i = 0;
    for (const struct jv *d = devs->child; d; d = d->next, i++) {
        char base[64];
        snprintf(base, sizeof(base), "$.devices[%ld]", i);
        if (d->type != JV_OBJECT)
            return bad(c, base, "expected an object");
        const char *name, *proto;
        uint64_t u;
        if (want_s(c, d, "device", base, &name) < 0 || want_s(c, d, "protocol", base, &proto) < 0)
            return -1;
        if (flow_device(c->cfg, name) < 0) {
            char p[300];
            snprintf(p, sizeof(p), "%s.device", base);
            return bad(c, p, "not a configured device with a \"flows\" section");
        }
        const char *keys[6] = {
            "datagrams",           "malformed",  "records", "unknown_template_sets",
            "undecodable_samples", "agg_dropped"};
        for (int k = 0; k < 6; k++)
            if (want_u(c, d, keys[k], base, INT64_MAX, &u) < 0)
                return -1;
    }
    return 0;
}

int flowin_post(PGconn *db, const struct cfg *cfg, const char *body, size_t len, int64_t now_us,
                struct evbuffer *out)
{
    struct jv *root;
    size_t nv;
    struct jv_error je;
    struct jv_doc *doc = jv_parse(body, len, false, &root, &nv, &je);
    if (!doc) {
        char m[240];
        snprintf(m, sizeof(m), "%s (byte %zu)", je.msg, je.offset);
        jw_error(out, m, je.path);
        return 400;
    }
    struct vc c = {.cfg = cfg, .now_us = now_us};
    struct cell *cells = NULL;
    size_t n = 0;
    const char *poller = NULL, *batch = NULL;
    uint64_t version = 0, wsec = 0;
    int status = 422;
    const struct jv *arr = NULL, *devs = NULL, *ifc = NULL;
    if (root->type != JV_OBJECT) {
        bad(&c, "$", "expected a batch object");
        goto done;
    }
    if (want_u(&c, root, "version", "$", 1, &version) < 0 || version != 1) {
        bad(&c, "$.version", "expected 1");
        goto done;
    }
    if (want_s(&c, root, "poller", "$", &poller) < 0 ||
        want_s(&c, root, "batch", "$", &batch) < 0 ||
        want_u(&c, root, "window_seconds", "$", 86400, &wsec) < 0)
        goto done;
    if ((int)wsec != cfg->window_seconds) {
        bad(&c, "$.window_seconds", "differs from the reconciler's window_seconds");
        goto done;
    }
    devs = jv_get(root, "devices");
    if (check_devices(&c, devs) < 0)
        goto done;
    ifc = jv_get(root, "if_counters");
    if (flowin_ifc_check(cfg, ifc, now_us, c.msg, sizeof(c.msg), c.path, sizeof(c.path)) < 0)
        goto done;
    arr = jv_get(root, "cells");
    if (!arr || arr->type != JV_ARRAY || arr->n > MAX_CELLS) {
        bad(&c, "$.cells", "expected an array of at most 1048576 cells");
        goto done;
    }
    cells = calloc(arr->n ? arr->n : 1, sizeof(*cells));
    if (!cells) {
        bad(&c, "$", "out of memory");
        status = 503;
        goto done;
    }
    long i = 0;
    for (const struct jv *o = arr->child; o; o = o->next, i++)
        if (one_cell(&c, o, i, &cells[n++]) < 0)
            goto done;
    bool fresh = false;
    char err[512];
    if (!db) {
        bad(&c, "$", "database unreachable");
        status = 503;
        goto done;
    }
    if (store(db, cfg, poller, batch, cells, n, devs, ifc, &fresh, err, sizeof(err)) < 0) {
        snprintf(c.msg, sizeof(c.msg), "not stored: %.180s", err);
        snprintf(c.path, sizeof(c.path), "$");
        status = 503;
        goto done;
    }
    evbuffer_add_printf(out, "{\"received\":%zu,\"stored\":%zu,\"duplicate\":%zu}\n", n,
                        fresh ? n : 0, fresh ? 0 : n);
    status = 200;
done:
    if (status != 200)
        jw_error(out, c.msg, c.path);
    free(cells);
    jv_doc_free(doc);
    return status;
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void label_value(struct evbuffer *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            evbuffer_add_printf(out, "\\%c", *s);
        else if (*s == '\n')
            evbuffer_add(out, "\\n", 2);
        else
            evbuffer_add(out, s, 1);
    }
}

void flowin_metrics(PGconn *db, struct evbuffer *out)
{
    if (!db || PQstatus(db) != CONNECTION_OK)
        return;
    static const char *const cols[][2] = {
        {"datagrams", "Flow export datagrams received"},
        {"malformed", "Flow export datagrams dropped as malformed"},
        {"records", "Flow records and samples decoded"},
        {"unknown_template_sets", "IPFIX/NetFlow v9 data sets dropped: no template yet"},
        {"undecodable_samples", "sFlow samples without an IP packet"},
        {"agg_dropped", "Flow records dropped: the collector's table was full"},
    };
    PGresult *r = PQexec(db, "SELECT poller, device, protocol, datagrams, malformed, records,"
                             " unknown_template_sets, undecodable_samples, agg_dropped"
                             " FROM flow_collector_stats ORDER BY 1, 2");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
        for (int c = 0; c < 6; c++) {
            evbuffer_add_printf(out,
                                "# HELP wanledger_flow_%s_total %s (as last reported by each "
                                "poller, since it started).\n# TYPE wanledger_flow_%s_total "
                                "counter\n",
                                cols[c][0], cols[c][1], cols[c][0]);
            for (int i = 0; i < PQntuples(r); i++) {
                evbuffer_add_printf(out, "wanledger_flow_%s_total{poller=\"", cols[c][0]);
                label_value(out, PQgetvalue(r, i, 0));
                evbuffer_add_printf(out, "\",device=\"");
                label_value(out, PQgetvalue(r, i, 1));
                evbuffer_add_printf(out, "\",protocol=\"");
                label_value(out, PQgetvalue(r, i, 2));
                evbuffer_add_printf(out, "\"} %s\n", PQgetvalue(r, i, 3 + c));
            }
        }
    }
    PQclear(r);
}
