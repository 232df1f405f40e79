/* Loading one window's raw rows: the counter samples in and around it (with each interface's
 * neighbours outside it) and the transfers overlapping it; its flow records: recon_db_flows.c. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hugealloc.h"
#include "pgc.h"
#include "recon_db_internal.h"

int recon_db_neighbour_span_seconds(const struct cfg *cfg)
{
    int ten = 10 * cfg->window_seconds;
    return ten > 3600 ? ten : 3600;
}

int rdb_set_budget(PGconn *db, int64_t ws, long long *n_flows, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], sql[256];
    rdb_fmt_ts(from, ws);
    const char *p[] = {from};
    PGresult *r = rdb_q(db, "counting the window's flow records", err, errlen,
                        "SELECT coalesce(sum(n_flows), 0)::bigint FROM flow_reports"
                        " WHERE window_start = $1::timestamptz",
                        1, p);
    if (!r)
        return -1;
    *n_flows = rdb_val_i64(r, 0, 0, 0);
    PQclear(r);
    long long ms = (long long)PGC_STATEMENT_TIMEOUT_S * 1000;
    if (*n_flows > ms * 1000 / RDB_BUDGET_US_PER_FLOW)
        ms = *n_flows * RDB_BUDGET_US_PER_FLOW / 1000;
    /* and memory for the window's hash joins and aggregates over its own rows (4 MB, the
     * default, spills a 1 M window's anti-joins to disk) */
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            snprintf(sql, sizeof sql, "SET LOCAL statement_timeout = %lld", ms);
        else
            snprintf(sql, sizeof sql, "SET LOCAL work_mem = '%s'",
                     *n_flows > 200000 ? RDB_BIG_WINDOW_WORK_MEM : "16MB");
        r = rdb_q(db, "setting the window's statement budget", err, errlen, sql, 0, NULL);
        if (!r)
            return -1;
        PQclear(r);
    }
    return 0;
}

void rdb_inputs_free(struct rdb_inputs *in)
{
    PQclear(in->samples_r);
    PQclear(in->transfers_r);
    free(in->samples);
    huge_free(in->flows); /* huge_alloc'd on the split and ClickHouse loads, else malloc'd */
    huge_free(in->order);
    huge_free(in->rank);
    rdb_strtab_free(in->strs);
    free(in->transfers);
}

static int link_of(const struct cfg *cfg, const char *device, const char *interface)
{
    for (size_t i = 0; i < cfg->n_links; i++)
        if (strcmp(cfg->links[i].device, device) == 0 &&
            strcmp(cfg->links[i].interface, interface) == 0)
            return (int)i;
    return -1;
}

static const char sample_cols[] =
    "s.device, s.interface, (extract(epoch from s.at) * 1000000)::bigint, s.uptime_cs, "
    "s.discontinuity_cs, s.counter_bits, "
    "s.in_octets::text, s.out_octets::text, s.in_pkts::text, s.out_pkts::text, s.speed_bps";

int rdb_load_samples(PGconn *db, const struct cfg *cfg, int64_t ws, struct rdb_inputs *in,
                     char *err, size_t errlen)
{
    if (cfg->n_links == 0)
        return 0;
    struct rdb_sbuf devs = {0}, ifs = {0};
    rdb_sb_add(&devs, "{", 1);
    rdb_sb_add(&ifs, "{", 1);
    for (size_t i = 0; i < cfg->n_links; i++) {
        rdb_sb_array_elem(&devs, cfg->links[i].device, i == 0);
        rdb_sb_array_elem(&ifs, cfg->links[i].interface, i == 0);
    }
    rdb_sb_add(&devs, "}", 1);
    rdb_sb_add(&ifs, "}", 1);
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN], back[TM_RFC3339_LEN], ahead[TM_RFC3339_LEN];
    int64_t we = ws + (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    rdb_fmt_ts(from, ws);
    rdb_fmt_ts(to, we);
    rdb_fmt_ts(back, ws - ((int64_t)recon_db_neighbour_span_seconds(cfg) * TM_USEC_PER_SEC));
    rdb_fmt_ts(ahead, we + ((int64_t)recon_db_neighbour_span_seconds(cfg) * TM_USEC_PER_SEC));
    const char *params[] = {devs.p, ifs.p, from, to, back, ahead};
    static const char sql[] =
        "WITH l(device, interface) AS (SELECT * FROM unnest($1::text[], $2::text[]))"
        " SELECT * FROM ("
        "  SELECT %1$s FROM counter_samples s JOIN l USING (device, interface)"
        "  WHERE s.at >= $3::timestamptz AND s.at <= $4::timestamptz) w"
        " UNION ALL SELECT p.* FROM l CROSS JOIN LATERAL ("
        "  SELECT %1$s FROM counter_samples s"
        "  WHERE s.device = l.device AND s.interface = l.interface"
        "   AND s.at < $3::timestamptz AND s.at >= $5::timestamptz"
        "  ORDER BY s.at DESC LIMIT 1) p"
        " UNION ALL SELECT n.* FROM l CROSS JOIN LATERAL ("
        "  SELECT %1$s FROM counter_samples s"
        "  WHERE s.device = l.device AND s.interface = l.interface"
        "   AND s.at > $4::timestamptz AND s.at <= $6::timestamptz"
        "  ORDER BY s.at LIMIT 1) n";
    char full[4096];
    snprintf(full, sizeof full, sql, sample_cols);
    int rc = -1;
    if (devs.oom || ifs.oom) {
        snprintf(err, errlen, "loading counter samples: out of memory");
        goto cleanup;
    }
    in->samples_r = rdb_q(db, "loading counter samples", err, errlen, full, 6, params);
    if (!in->samples_r)
        goto cleanup;
    int n = PQntuples(in->samples_r);
    in->samples = calloc((size_t)n + 1, sizeof *in->samples);
    if (!in->samples) {
        snprintf(err, errlen, "loading counter samples: out of memory");
        goto cleanup;
    }
    const PGresult *r = in->samples_r;
    for (int i = 0; i < n; i++) {
        int link = link_of(cfg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
        if (link < 0)
            continue;
        struct recon_sample *s = &in->samples[in->n_samples++];
        s->link = link;
        s->at_us = rdb_val_i64(r, i, 2, 0);
        s->uptime_cs = rdb_val_i64(r, i, 3, -1);
        s->discontinuity_cs = rdb_val_i64(r, i, 4, 0);
        s->counter_bits = (int)rdb_val_i64(r, i, 5, 64);
        s->in_octets = rdb_val_u64(r, i, 6, &s->has_in_octets);
        s->out_octets = rdb_val_u64(r, i, 7, &s->has_out_octets);
        s->in_pkts = rdb_val_u64(r, i, 8, &s->has_in_pkts);
        s->out_pkts = rdb_val_u64(r, i, 9, &s->has_out_pkts);
        int64_t speed = rdb_val_i64(r, i, 10, 0);
        s->speed_bps = speed > 0 ? (uint64_t)speed : 0;
    }
    rc = 0;
cleanup:
    free(devs.p);
    free(ifs.p);
    return rc;
}

void rdb_flow_kinds(struct recon_flow *f, const char *source, const char *proto, const char *role,
                    const char *nfs_op)
{
    if (source && strcmp(source, "nfs") == 0) {
        f->source = RECON_FLOW_NFS;
        f->nfs_op = nfs_op && strcmp(nfs_op, "write") == 0 ? RECON_NFS_WRITE : RECON_NFS_READ;
        return;
    }
    f->source = RECON_FLOW_SOCKET;
    f->proto = proto && strcmp(proto, "udp") == 0 ? IPPROTO_UDP : IPPROTO_TCP;
    f->role = !role                         ? RECON_ROLE_UNKNOWN
              : strcmp(role, "client") == 0 ? RECON_ROLE_CLIENT
              : strcmp(role, "server") == 0 ? RECON_ROLE_SERVER
                                            : RECON_ROLE_UNKNOWN;
}

int rdb_load_transfers(PGconn *db, const struct cfg *cfg, int64_t ws, struct rdb_inputs *in,
                       char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    rdb_fmt_ts(to, ws + (int64_t)cfg->window_seconds * TM_USEC_PER_SEC);
    const char *params[] = {from, to};
    static const char sql[] =
        "SELECT service, requester, workflow, src, dst, bytes,"
        " (extract(epoch FROM start_at) * 1000000)::bigint,"
        " (extract(epoch FROM end_at) * 1000000)::bigint"
        " FROM transfers WHERE start_at < $2::timestamptz AND end_at >= $1::timestamptz";
    in->transfers_r = rdb_q(db, "loading transfers", err, errlen, sql, 2, params);
    if (!in->transfers_r)
        return -1;
    const PGresult *r = in->transfers_r;
    int n = PQntuples(r);
    in->transfers = calloc((size_t)n + 1, sizeof *in->transfers);
    if (!in->transfers) {
        snprintf(err, errlen, "loading transfers: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct recon_transfer *t = &in->transfers[in->n_transfers++];
        t->service = rdb_val(r, i, 0);
        t->requester = rdb_val(r, i, 1);
        t->workflow = rdb_val(r, i, 2);
        t->src = rdb_val(r, i, 3);
        t->dst = rdb_val(r, i, 4);
        int64_t b = rdb_val_i64(r, i, 5, 0);
        t->bytes = b > 0 ? (uint64_t)b : 0;
        t->start_us = rdb_val_i64(r, i, 6, 0);
        t->end_us = rdb_val_i64(r, i, 7, 0);
    }
    return 0;
}
