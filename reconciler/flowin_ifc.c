/* sFlow counter samples of a flow-sample batch (see flowin_ifc.h). */
#include "flowin_ifc.h"

#include <stdio.h>
#include <string.h>

#include "timeutil.h"

static int fail(char *msg, size_t msglen, char *path, size_t pathlen, const char *p, const char *m)
{
    snprintf(msg, msglen, "%s", m);
    snprintf(path, pathlen, "%s", p);
    return -1;
}

static const struct jv *uint_member(const struct jv *o, const char *key, uint64_t max)
{
    const struct jv *v = jv_get(o, key);
    return v && v->type == JV_NUMBER && v->is_int && !v->neg && !v->overflow && v->u <= max ? v
                                                                                            : NULL;
}

int flowin_ifc_check(const struct cfg *cfg, const struct jv *arr, int64_t now_us, char *msg,
                     size_t msglen, char *path, size_t pathlen)
{
    if (!arr)
        return 0;
    if (arr->type != JV_ARRAY || arr->n > FLOWIN_IFC_MAX)
        return fail(msg, msglen, path, pathlen, "$.if_counters",
                    "expected an array of at most 65536 counter samples");
    long i = 0;
    for (const struct jv *o = arr->child; o; o = o->next, i++) {
        char base[64], p[128];
        snprintf(base, sizeof(base), "$.if_counters[%ld]", i);
        if (o->type != JV_OBJECT)
            return fail(msg, msglen, path, pathlen, base, "expected a counter sample object");
        const struct jv *dev = jv_get(o, "device"), *at = jv_get(o, "at");
        int d = dev && dev->type == JV_STRING ? cfg_device_index(cfg, dev->s) : -1;
        if (d < 0 || !cfg->devices[d].has_flows) {
            snprintf(p, sizeof(p), "%s.device", base);
            return fail(msg, msglen, path, pathlen, p,
                        "not a configured device with a \"flows\" section");
        }
        int64_t at_us;
        snprintf(p, sizeof(p), "%s.at", base);
        if (!at || at->type != JV_STRING || tm_parse_rfc3339(at->s, &at_us) < 0)
            return fail(msg, msglen, path, pathlen, p, "expected an RFC 3339 time");
        if (at_us > now_us + (int64_t)cfg->max_future_seconds * TM_USEC_PER_SEC)
            return fail(msg, msglen, path, pathlen, p,
                        "ahead of the reconciler's clock (max_future_seconds)");
        if (at_us < now_us - (int64_t)cfg->max_past_days * 86400 * TM_USEC_PER_SEC)
            return fail(msg, msglen, path, pathlen, p,
                        "before the oldest accepted time (max_past_days)");
        static const char *const keys[] = {"if_index", "in_octets", "out_octets", "in_pkts",
                                           "out_pkts"};
        static const uint64_t max[] = {UINT32_MAX, UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT32_MAX};
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            if (!uint_member(o, keys[k], max[k])) {
                char m[64];
                snprintf(p, sizeof(p), "%s.%s", base, keys[k]);
                snprintf(m, sizeof(m), "expected an integer 0..%llu", (unsigned long long)max[k]);
                return fail(msg, msglen, path, pathlen, p, m);
            }
    }
    return 0;
}

static const char SQL_IFC[] =
    "INSERT INTO flow_if_counters (device, if_index, at, poller, in_octets, out_octets, in_pkts,"
    " out_pkts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING";

int flowin_ifc_store(PGconn *db, const char *poller, const struct jv *arr, char *err, size_t errlen)
{
    for (const struct jv *o = arr ? arr->child : NULL; o; o = o->next) {
        static const char *const keys[] = {"if_index", "in_octets", "out_octets", "in_pkts",
                                           "out_pkts"};
        char v[5][24];
        const char *p[8] = {
            jv_get(o, "device")->s, v[0], jv_get(o, "at")->s, poller, v[1], v[2], v[3], v[4]};
        for (int k = 0; k < 5; k++)
            snprintf(v[k], sizeof(v[k]), "%llu", (unsigned long long)jv_get(o, keys[k])->u);
        PGresult *r = PQexecParams(db, SQL_IFC, 8, NULL, p, NULL, NULL, 0);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(err, errlen, "%s", PQerrorMessage(db));
        PQclear(r);
        if (!ok)
            return -1;
    }
    return 0;
}
