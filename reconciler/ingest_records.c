/* The counter samples of pollers (/v1/counters) and the transfer records of services
 * (/v1/transfers) into COPY rows of their staging tables; see ingest.h for the contract and
 * ingest_internal.h for the validators they share with the agent reports of ingest.c. */
#include "ingest_internal.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fluent.h"
#include "srv_limits.h"
#include "timeutil.h"

/* ---- /v1/counters ------------------------------------------------------------------------ */

static void buf_opt_u64(struct ingest_batch *b, bool present, uint64_t v)
{
    if (present)
        ing_buf_u64(b, false, v);
    else
        ing_buf_null(b);
}

static int one_sample(struct vctx *c, const struct jv *smp, long i, const struct jv *poller)
{
    struct loc l = {.arr = "samples", .idx = i};
    const struct jv *device, *iface;
    int64_t at;
    uint64_t bits = 64, uptime = 0, disc = 0, speed = 0, io = 0, oo = 0, ip = 0, op = 0;
    bool has_bits = false, has_uptime = false, has_disc = false, has_speed = false;
    bool has_io = false, has_oo = false, has_ip = false, has_op = false;
    if (ing_want_object(c, smp, l) < 0 ||
        ing_want_name(c, jv_get(smp, "device"), ing_at_key(l, "device"), false, &device) < 0 ||
        ing_want_name(c, jv_get(smp, "interface"), ing_at_key(l, "interface"), false, &iface) < 0 ||
        ing_want_time(c, jv_get(smp, "at"), ing_at_key(l, "at"), &at) < 0 ||
        ing_in_bounds(c, ing_at_key(l, "at"), at) < 0 ||
        ing_day_add(c, ing_at_key(l, "at"), at) < 0 ||
        ing_opt_uint(c, jv_get(smp, "counter_bits"), ing_at_key(l, "counter_bits"), 64, &bits,
                     &has_bits) < 0)
        return -1;
    if (!has_bits)
        bits = 64;
    if (bits != 32 && bits != 64)
        return ing_bad(c, ing_at_key(l, "counter_bits"), "expected 32 or 64, got %" PRIu64, bits);
    uint64_t cmax = bits == 32 ? UINT32_MAX : UINT64_MAX;
    if (ing_opt_uint(c, jv_get(smp, "uptime_cs"), ing_at_key(l, "uptime_cs"), INT64_MAX, &uptime,
                     &has_uptime) < 0 ||
        ing_opt_uint(c, jv_get(smp, "in_octets"), ing_at_key(l, "in_octets"), cmax, &io, &has_io) <
            0 ||
        ing_opt_uint(c, jv_get(smp, "out_octets"), ing_at_key(l, "out_octets"), cmax, &oo,
                     &has_oo) < 0 ||
        ing_opt_uint(c, jv_get(smp, "in_pkts"), ing_at_key(l, "in_pkts"), cmax, &ip, &has_ip) < 0 ||
        ing_opt_uint(c, jv_get(smp, "out_pkts"), ing_at_key(l, "out_pkts"), cmax, &op, &has_op) <
            0 ||
        ing_opt_uint(c, jv_get(smp, "speed_bps"), ing_at_key(l, "speed_bps"), INT64_MAX, &speed,
                     &has_speed) < 0 ||
        ing_opt_uint(c, jv_get(smp, "discontinuity_cs"), ing_at_key(l, "discontinuity_cs"),
                     INT64_MAX, &disc, &has_disc) < 0)
        return -1;
    if (!has_io && !has_oo)
        return ing_bad(c, l, "a sample needs in_octets or out_octets");

    /* device interface at poller uptime_cs in_octets out_octets in_pkts out_pkts speed_bps
     * counter_bits discontinuity_cs */
    struct ingest_batch *b = c->b;
    ing_buf_text(b, device->s, device->n);
    ing_buf_c(b, '\t');
    ing_buf_text(b, iface->s, iface->n);
    ing_buf_c(b, '\t');
    ing_buf_time(b, at);
    ing_buf_c(b, '\t');
    ing_buf_text(b, poller->s, poller->n);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_uptime, uptime);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_io, io);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_oo, oo);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_ip, ip);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_op, op);
    ing_buf_c(b, '\t');
    buf_opt_u64(b, has_speed, speed);
    ing_buf_c(b, '\t');
    ing_buf_u64(b, false, bits);
    ing_buf_c(b, '\t');
    ing_buf_u64(b, false, has_disc ? disc : 0);
    return ing_row_end(c);
}

int ing_parse_counters(struct vctx *c, const struct jv *root)
{
    struct loc top = {.idx = -1};
    const struct jv *poller;
    if (ing_want_object(c, root, top) < 0 || ing_want_version(c, root, 1, NULL) < 0 ||
        ing_want_name(c, jv_get(root, "poller"), ing_at_key(top, "poller"), false, &poller) < 0)
        return -1;
    const struct jv *samples = jv_get(root, "samples");
    if (!samples)
        return ing_bad(c, ing_at_key(top, "samples"), "missing: expected an array of samples");
    if (samples->type != JV_ARRAY)
        return ing_bad(c, ing_at_key(top, "samples"), "expected an array, got %s",
                       jv_type_name(samples));
    long i = 0;
    for (const struct jv *s = samples->child; s; s = s->next, i++)
        if (one_sample(c, s, i, poller) < 0)
            return -1;
    return 0;
}

/* ---- /v1/transfers ----------------------------------------------------------------------- */

/* src/dst: an IP address or a configured site name. */
static int want_place(struct vctx *c, const struct jv *v, struct loc l, const struct jv **out)
{
    unsigned char bin[16];
    if (ing_want_name(c, v, l, false, out) < 0)
        return -1;
    const char *s = (*out)->s;
    if (inet_pton(AF_INET, s, bin) == 1 || inet_pton(AF_INET6, s, bin) == 1 ||
        cfg_site_index(c->cfg, s) >= 0)
        return 0;
    return ing_bad(c, l, "expected an IP address or a configured site name, got \"%.80s\"", s);
}

/* The end of a record without "end": the record time its shipper added (fluent.h), looked for
 * in the record, then in the record it was unwrapped from. */
static int shipper_time(struct vctx *c, const struct jv *t, const struct jv *outer, struct loc l,
                        int64_t *us, const char **key)
{
    int r = fl_record_time(t, key, us);
    if (r == 1 && outer != t)
        r = fl_record_time(outer, key, us);
    if (r == 1)
        return ing_bad(c, ing_at_key(l, "end"),
                       "missing: expected an RFC 3339 time or epoch seconds");
    if (r < 0)
        return ing_bad(c, ing_at_key(l, *key),
                       "expected epoch seconds, ms, us or ns, RFC 3339, or \"YYYY-MM-DD HH:MM:SS\" "
                       "(UTC)");
    return 0;
}

/* One record t; outer is the record it was unwrapped from (fluent.h), or t itself. */
static int transfer_record(struct vctx *c, const struct jv *t, const struct jv *outer, long i)
{
    struct loc l = {.idx = i};
    const struct jv *service, *id, *requester, *workflow, *src, *dst;
    int64_t start, end;
    uint64_t bytes;
    char idnum[24];
    if (ing_want_object(c, t, l) < 0 ||
        ing_want_name(c, jv_get(t, "service"), ing_at_key(l, "service"), false, &service) < 0)
        return -1;
    const struct jv *idv = jv_get(t, "id");
    if (idv && idv->type == JV_NUMBER && idv->is_int && !idv->neg && !idv->overflow) {
        snprintf(idnum, sizeof(idnum), "%" PRIu64, idv->u);
        id = NULL;
    } else if (ing_want_name(c, idv, ing_at_key(l, "id"), false, &id) < 0) {
        return -1;
    }
    if (ing_want_name(c, jv_get(t, "requester"), ing_at_key(l, "requester"), true, &requester) <
            0 ||
        ing_want_name(c, jv_get(t, "workflow"), ing_at_key(l, "workflow"), true, &workflow) < 0 ||
        want_place(c, jv_get(t, "src"), ing_at_key(l, "src"), &src) < 0 ||
        want_place(c, jv_get(t, "dst"), ing_at_key(l, "dst"), &dst) < 0 ||
        ing_want_time(c, jv_get(t, "start"), ing_at_key(l, "start"), &start) < 0 ||
        ing_in_bounds(c, ing_at_key(l, "start"), start) < 0 ||
        ing_day_add(c, ing_at_key(l, "start"), start) < 0)
        return -1;
    /* a missing "end" is the record time a shipper added (fluent.h: Fluent Bit's date key in
     * every json_date_format, Vector's timestamp), in the record or around it */
    const struct jv *endv = jv_get(t, "end");
    const char *end_key = "end";
    if (endv) {
        if (ing_want_time(c, endv, ing_at_key(l, end_key), &end) < 0)
            return -1;
    } else if (shipper_time(c, t, outer, l, &end, &end_key) < 0) {
        return -1;
    }
    if (end < start)
        return ing_bad(c, ing_at_key(l, end_key), "the transfer ends before it starts");
    if (ing_in_bounds(c, ing_at_key(l, end_key), end) < 0)
        return -1;
    /* both ends are within the time bounds, so end - start cannot overflow */
    int64_t span_us;
    if (__builtin_sub_overflow(end, start, &span_us) ||
        span_us > lim_transfer_seconds(c->cfg) * TM_USEC_PER_SEC)
        return ing_bad(c, ing_at_key(l, end_key),
                       "the transfer spans more than %" PRId64 " s (max_transfer_seconds)",
                       lim_transfer_seconds(c->cfg));
    uint64_t span_s = (uint64_t)((span_us + TM_USEC_PER_SEC - 1) / TM_USEC_PER_SEC);
    if (span_s < (uint64_t)c->cfg->window_seconds)
        span_s = (uint64_t)c->cfg->window_seconds;
    const struct jv *bv = jv_get(t, "bytes");
    uint64_t bmax = ing_max_bytes_over(c->cfg, span_s);
    if (bv && bv->type == JV_STRING) { /* numeric text, as shippers without a parser send it */
        if (!fl_uint(bv, &bytes))
            return ing_bad(c, ing_at_key(l, "bytes"),
                           "expected a non-negative integer, got \"%.40s\"", bv->s);
        if (bytes > bmax)
            return ing_bad(c, ing_at_key(l, "bytes"),
                           "%" PRIu64 " is larger than the maximum %" PRIu64, bytes, bmax);
    } else if (ing_want_uint(c, bv, ing_at_key(l, "bytes"), bmax, &bytes) < 0) {
        return -1;
    }

    /* service id requester workflow src dst bytes start_at end_at */
    struct ingest_batch *b = c->b;
    ing_buf_text(b, service->s, service->n);
    ing_buf_c(b, '\t');
    if (id)
        ing_buf_text(b, id->s, id->n);
    else
        ing_buf_put(b, idnum, strlen(idnum));
    ing_buf_c(b, '\t');
    ing_buf_str_or_null(b, requester);
    ing_buf_c(b, '\t');
    ing_buf_str_or_null(b, workflow);
    ing_buf_c(b, '\t');
    ing_buf_text(b, src->s, src->n);
    ing_buf_c(b, '\t');
    ing_buf_text(b, dst->s, dst->n);
    ing_buf_c(b, '\t');
    ing_buf_u64(b, false, bytes);
    ing_buf_c(b, '\t');
    ing_buf_time(b, start);
    ing_buf_c(b, '\t');
    ing_buf_time(b, end);
    return ing_row_end(c);
}

/* A record, or the JSON line a tail input left under "log"/"message" (fluent.h). Errors inside
 * that line are addressed through it: "$[2].log.bytes". */
int ing_one_transfer(struct vctx *c, const struct jv *t, long i)
{
    struct jv_doc *doc;
    const struct jv *rec;
    const char *key;
    char msg[160];
    const char *why = fl_unsupported(t);
    if (why)
        return ing_bad(c, (struct loc){.idx = i}, "%s", why);
    if (fl_unwrap(t, &doc, &rec, &key, msg, sizeof(msg)) < 0)
        return ing_bad(c, (struct loc){.idx = i, .key = key ? key : "log"}, "%s", msg);
    int rc = transfer_record(c, rec, t, i);
    jv_doc_free(doc);
    if (rc < 0 && key && strchr(c->e->path, ']')) {
        char *after = strchr(c->e->path, ']') + 1;
        char tail[256];
        snprintf(tail, sizeof(tail), "%s", after);
        /* the outer record's own members (its date) keep their path */
        if (strncmp(tail, ".date", 5) != 0 && strncmp(tail, ".timestamp", 10) != 0)
            snprintf(after, sizeof(c->e->path) - (size_t)(after - c->e->path), ".%s%s", key, tail);
    }
    return rc;
}
