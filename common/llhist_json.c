/* Log-linear histogram -> JSON (sparse buckets and quantiles). */
#include "llhist_json.h"

static void put_quantile(struct jw *w, const char *key, const struct llhist *h, double q)
{
    uint64_t up = llhist_quantile(h, q, NULL);
    jw_key(w, key);
    if (up == UINT64_MAX)
        jw_null(w);
    else
        jw_u64(w, up);
}

void llhist_write_json(struct jw *w, const struct llhist *h)
{
    jw_begin_object(w);
    jw_kv_u64(w, "count", llhist_total(h));
    put_quantile(w, "p50", h, 0.5);
    put_quantile(w, "p99", h, 0.99);
    put_quantile(w, "p999", h, 0.999);
    put_quantile(w, "max", h, 1.0);
    jw_key(w, "buckets");
    jw_begin_array(w);
    for (size_t i = 0; i < LLHIST_SLOTS; i++) {
        if (!h->c[i])
            continue;
        jw_begin_array(w);
        jw_u64(w, llhist_lower(i));
        jw_u64(w, h->c[i]);
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}
