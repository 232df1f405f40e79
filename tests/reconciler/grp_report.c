/* Agent reports for the grouped-commit tests (see grp_report.h). */
#include "grp_report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "timeutil.h"

void grp_report(struct grp_report *r, const struct cfg *cfg, const char *agent, long seq,
                int64_t ws_us, size_t flows, long long base, long long special, int64_t now_us)
{
    size_t cap = 256 + flows * 200, n = 0;
    char *body = malloc(cap), t[TM_RFC3339_LEN];
    assert_non_null(body);
    n += (size_t)snprintf(body + n, cap - n,
                          "{\"version\":1,\"host\":\"%s\",\"agent_id\":\"%s\",\"seq\":%ld,"
                          "\"window_start\":\"%s\",\"flows\":[",
                          agent, agent, seq, tm_format_rfc3339(ws_us, t));
    memset(r, 0, sizeof *r);
    for (size_t k = 0; k < flows; k++) {
        long long tx = k == 0 && special > 0 ? special : base + (long long)k;
        n += (size_t)snprintf(
            body + n, cap - n,
            "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.0.1.%zu:%zu\","
            "\"remote\":\"10.0.2.7:5201\",\"role\":\"client\",\"tx_bytes\":%lld,"
            "\"rx_bytes\":%zu}",
            k ? "," : "", 1 + k % 200, 20000 + k, tx, k);
        r->tx_sum += tx;
        r->rx_sum += (long long)k;
    }
    n += (size_t)snprintf(body + n, cap - n, "]}");
    assert_true(n < cap);
    struct ingest_error e;
    if (ingest_parse(cfg, INGEST_ATTRIBUTIONS, body, n, now_us, &r->b, &e) != 0)
        fail_msg("%s seq %ld: %s at %s", agent, seq, e.msg, e.path);
    free(body);
    r->flows = flows;
}

void grp_report_free(struct grp_report *r)
{
    ingest_batch_free(&r->b);
}
