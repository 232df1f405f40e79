/* `wanledger nas`: the NAS view for a terminal (hm_nas.h): instances, then per instance its
 * owners (namespace/pod/container, workflow, user, program, host) with IOPS, throughput and
 * latency. Names go through hm_esc_term (no control characters reach the terminal). */
#include <inttypes.h>
#include <stdio.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_nas.h"
#include "timeutil.h"

static void put_us(struct evbuffer *out, uint64_t us)
{
    if (us == UINT64_MAX)
        evbuffer_add_printf(out, "%9s", ">=16.8s");
    else if (us < 10000)
        evbuffer_add_printf(out, "%7" PRIu64 "us", us);
    else
        evbuffer_add_printf(out, "%7.1fms", (double)us / 1e3);
}

static void figures(struct evbuffer *out, const struct hm_nas_figures *f, int64_t seconds)
{
    char b[HM_FMT_LEN];
    double s = seconds > 0 ? (double)seconds : 1;
    evbuffer_add_printf(out, "%9.1f %10s/s ", (double)f->ops / s,
                        hm_fmt_bytes((int64_t)((double)f->bytes / s), b));
    if (f->lat.count) {
        put_us(out, f->lat.p50);
        put_us(out, f->lat.p99);
        put_us(out, f->lat.p999);
        put_us(out, f->lat.max);
        evbuffer_add_printf(out, " %8" PRIu64, f->lat.count);
    } else {
        evbuffer_add_printf(out, "%36s %8d", "no latency reported", 0);
    }
    if (f->detail_ops)
        evbuffer_add_printf(out, " %" PRIu64 "/%" PRIu64 " errors", f->errors, f->detail_ops);
    evbuffer_add_printf(out, "\n");
}

static const char HEAD[] = "     IOPS throughput       p50      p99     p999      max  samples\n";

void hm_nas_print(struct evbuffer *out, const struct hm_nas_result *r)
{
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    evbuffer_add_printf(out,
                        "NFS servers, windows %s .. %s (%" PRId64
                        " s); rates over the span, latency = upper bound of the bucket "
                        "(<= 6.25%% above)\n",
                        tm_format_rfc3339(r->q.from_us, a), tm_format_rfc3339(r->q.to_us, b),
                        r->span_seconds);
    if (!r->n_inst)
        evbuffer_add_printf(out, "no NFS traffic recorded in this span\n");
    for (size_t i = 0; i < r->n_inst; i++) {
        const struct hm_nas_instance *in = &r->inst[i];
        evbuffer_add_printf(out, "\n");
        hm_esc_term(out, in->server);
        evbuffer_add_printf(out, ":%d ", in->port);
        hm_esc_term(out, in->export_path);
        evbuffer_add_printf(out, "\n  %-46s%s  %-46s", "", HEAD, "all");
        figures(out, &in->total, r->span_seconds);
        if (in->read.ops) {
            evbuffer_add_printf(out, "  %-46s", "read");
            figures(out, &in->read, r->span_seconds);
        }
        if (in->write.ops) {
            evbuffer_add_printf(out, "  %-46s", "write");
            figures(out, &in->write, r->span_seconds);
        }
        evbuffer_add_printf(out,
                            "  owners (namespace/pod/container workflow user program @host), "
                            "%zu of %zu:\n",
                            in->n_owners, in->n_owners_all);
        for (size_t k = 0; k < in->n_owners; k++) {
            const struct hm_nas_owner *o = &in->owners[k];
            evbuffer_add_printf(out, "    ");
            if (o->pod[0]) {
                hm_esc_term(out, o->namespace_);
                evbuffer_add_printf(out, "/");
                hm_esc_term(out, o->pod);
                evbuffer_add_printf(out, "/");
                hm_esc_term(out, o->container);
            } else {
                evbuffer_add_printf(out, "(no pod)");
            }
            const char *parts[4] = {o->workflow, o->user, o->program, o->host};
            for (int p = 0; p < 4; p++) {
                evbuffer_add_printf(out, p == 3 ? " @" : " ");
                hm_esc_term(out, parts[p][0] ? parts[p] : "-");
            }
            evbuffer_add_printf(out, "\n  %-46s", "");
            figures(out, &o->f, r->span_seconds);
        }
    }
}
