/* GET /api/v1/nas: the NAS view as JSON (hm_nas.h; the members are in docs/design.md "NAS
 * view"). */
#include "hm_nas.h"

#include "jsonw.h"
#include "timeutil.h"

static void put_quantile(struct jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    if (v == UINT64_MAX)
        jw_null(w); /* the overflow bucket: >= 2^24 us, no upper bound */
    else
        jw_u64(w, v);
}

static void put_figures(struct jw *w, const struct hm_nas_figures *f, int64_t seconds)
{
    jw_kv_u64(w, "ops", f->ops);
    jw_kv_u64(w, "bytes", f->bytes);
    jw_kv_u64(w, "errors", f->errors);
    jw_kv_u64(w, "errors_of_ops", f->detail_ops);
    jw_key(w, "iops");
    if (seconds > 0)
        jw_double(w, (double)f->ops / (double)seconds);
    else
        jw_null(w);
    jw_key(w, "bytes_per_second");
    if (seconds > 0)
        jw_double(w, (double)f->bytes / (double)seconds);
    else
        jw_null(w);
    jw_key(w, "latency_us");
    jw_begin_object(w);
    jw_kv_u64(w, "count", f->lat.count);
    if (f->lat.count) {
        put_quantile(w, "p50", f->lat.p50);
        put_quantile(w, "p99", f->lat.p99);
        put_quantile(w, "p999", f->lat.p999);
        put_quantile(w, "max", f->lat.max);
    } else { /* no sample: unknown, never 0 */
        jw_key(w, "p50");
        jw_null(w);
        jw_key(w, "p99");
        jw_null(w);
        jw_key(w, "p999");
        jw_null(w);
        jw_key(w, "max");
        jw_null(w);
    }
    jw_end(w);
}

static void put_instance(struct jw *w, const struct hm_nas_result *r,
                         const struct hm_nas_instance *in)
{
    char ts[TM_RFC3339_LEN];
    jw_begin_object(w);
    jw_kv_str(w, "server", in->server);
    jw_kv_i64(w, "port", in->port);
    jw_kv_str(w, "export", in->export_path);
    put_figures(w, &in->total, r->span_seconds);
    jw_key(w, "by_op");
    jw_begin_array(w);
    const struct hm_nas_figures *ops[2] = {&in->read, &in->write};
    static const char *const names[2] = {"read", "write"};
    for (int k = 0; k < 2; k++) {
        if (!ops[k]->ops)
            continue;
        jw_begin_object(w);
        jw_kv_str(w, "op", names[k]);
        put_figures(w, ops[k], r->span_seconds);
        jw_end(w);
    }
    jw_end(w);
    jw_kv_u64(w, "owners_total", in->n_owners_all);
    jw_key(w, "owners");
    jw_begin_array(w);
    for (size_t i = 0; i < in->n_owners; i++) {
        const struct hm_nas_owner *o = &in->owners[i];
        jw_begin_object(w);
        jw_kv_str(w, "host", o->host);
        jw_kv_str(w, "workflow", o->workflow);
        jw_kv_str(w, "user", o->user);
        jw_kv_str(w, "program", o->program);
        jw_kv_str(w, "namespace", o->namespace_);
        jw_kv_str(w, "pod", o->pod);
        jw_kv_str(w, "container", o->container);
        put_figures(w, &o->f, r->span_seconds);
        jw_end(w);
    }
    jw_end(w);
    jw_key(w, "windows");
    jw_begin_array(w);
    for (size_t i = 0; i < in->n_windows; i++) {
        jw_begin_object(w);
        jw_kv_str(w, "window_start", tm_format_rfc3339(in->windows[i].start_us, ts));
        put_figures(w, &in->windows[i].f, r->window_seconds);
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}

void hm_nas_json(struct evbuffer *out, const struct hm_nas_result *r)
{
    char ts[TM_RFC3339_LEN];
    struct jw w;
    jw_init(&w, out);
    jw_begin_object(&w);
    jw_kv_str(&w, "from", tm_format_rfc3339(r->q.from_us, ts));
    jw_kv_str(&w, "to", tm_format_rfc3339(r->q.to_us, ts));
    jw_kv_i64(&w, "window_seconds", r->window_seconds);
    jw_kv_i64(&w, "span_seconds", r->span_seconds);
    jw_kv_double(&w, "latency_bucket_error", 1.0 / LLHIST_SUB);
    jw_key(&w, "instances");
    jw_begin_array(&w);
    for (size_t i = 0; i < r->n_inst; i++)
        put_instance(&w, r, &r->inst[i]);
    jw_end(&w);
    jw_end(&w);
}
