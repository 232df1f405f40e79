/* GET /api/v1/unrecorded (see unrec.h). */
#include "unrec.h"

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "hm_unrec.h"
#include "jsonw.h"
#include "timeutil.h"

int unrec_api(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out)
{
    struct evkeyvalq q;
    if (api_query(query, &q, out) != 0)
        return 400;
    const char *src, *dst;
    const char *device = evhttp_find_header(&q, "device");
    int64_t now = tm_now_us(), from, to;
    const char *msg, *path;
    int status = api_site_pair(&q, cfg, &src, &dst, out);
    if (status) {
        /* the error is in out */
    } else if (api_range(evhttp_find_header(&q, "from"), evhttp_find_header(&q, "to"), now, now,
                         &from, &to, &msg, &path) < 0) {
        jw_error(out, msg, path);
        status = 400;
    } else if (device && (cfg_device_index(cfg, device) < 0 ||
                          !cfg->devices[cfg_device_index(cfg, device)].has_flows)) {
        jw_error(out, "expected a configured device with a \"flows\" section", "device");
        status = 400;
    }
    if (status) {
        evhttp_clear_headers(&q);
        return status;
    }
    struct hm_unrec_row *rows;
    size_t n;
    char err[512];
    if (hm_unrec_query(db, cfg, src, dst, device, from, to, 100, &rows, &n, err, sizeof(err)) < 0) {
        jw_error(out, err, "");
        evhttp_clear_headers(&q);
        return 500;
    }
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    evbuffer_add_printf(out, "{\"src\":");
    jw_str(out, src);
    evbuffer_add_printf(out, ",\"dst\":");
    jw_str(out, dst);
    evbuffer_add_printf(out, ",\"from\":\"%s\",\"to\":\"%s\",\"rows\":[",
                        tm_format_rfc3339(from, a), tm_format_rfc3339(to, b));
    for (size_t i = 0; i < n; i++) {
        const struct hm_unrec_row *r = &rows[i];
        evbuffer_add_printf(
            out,
            "%s{\"src_addr\":\"%s\",\"dst_addr\":\"%s\",\"proto\":%d,\"dst_port\":%d,"
            "\"estimated_bytes\":%.0f,\"low_bytes\":%.0f,\"high_bytes\":%.0f,\"samples\":%llu,"
            "\"recorded_by\":\"%s\",\"recorded_bytes\":%.0f,\"status\":\"%s\","
            "\"service_port\":%s,\"windows\":%d}",
            i ? "," : "", r->src_addr, r->dst_addr, r->proto, r->dst_port, r->estimated_bytes,
            r->low_bytes, r->high_bytes, (unsigned long long)r->samples, r->recorded_by,
            r->recorded_bytes,
            strcmp(r->recorded_by, "none") == 0 ? "unrecorded" : "under_reported",
            r->service_port ? "true" : "false", r->windows);
    }
    evbuffer_add_printf(out, "]}\n");
    free(rows);
    evhttp_clear_headers(&q);
    return 200;
}
