/* Prometheus text for the agent's counters. */
#include "agentmetrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void agentmetrics_drain_time(struct agentmetrics *m, uint64_t ns)
{
    m->drain_ns[m->n_drain % AGENTMETRICS_DRAIN_SAMPLES] = ns;
    m->n_drain++;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t agentmetrics_drain_quantile(const struct agentmetrics *m, double q, size_t *count)
{
    size_t n = m->n_drain < AGENTMETRICS_DRAIN_SAMPLES ? m->n_drain : AGENTMETRICS_DRAIN_SAMPLES;
    uint64_t v[AGENTMETRICS_DRAIN_SAMPLES];
    *count = n;
    if (n == 0)
        return 0;
    memcpy(v, m->drain_ns, n * sizeof(v[0]));
    qsort(v, n, sizeof(v[0]), cmp_u64);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

char *agentmetrics_render(const struct agentmetrics *m)
{
    size_t cnt;
    uint64_t p50 = agentmetrics_drain_quantile(m, 0.50, &cnt);
    uint64_t p99 = agentmetrics_drain_quantile(m, 0.99, &cnt);
    uint64_t pmax = agentmetrics_drain_quantile(m, 1.0, &cnt);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    fprintf(f,
            "# HELP wanledger_agent_attach_mode Socket probe attach mode in use.\n"
            "# TYPE wanledger_agent_attach_mode gauge\n"
            "wanledger_agent_attach_mode{mode=\"%s\"} 1\n"
            "# HELP wanledger_agent_nfs_probe NFS probe running (1) or not (0).\n"
            "# TYPE wanledger_agent_nfs_probe gauge\n"
            "wanledger_agent_nfs_probe %d\n"
            "# TYPE wanledger_agent_windows_total counter\n"
            "wanledger_agent_windows_total %llu\n"
            "# HELP wanledger_agent_events_total Socket send/receive calls counted.\n"
            "# TYPE wanledger_agent_events_total counter\n"
            "wanledger_agent_events_total %llu\n"
            "# TYPE wanledger_agent_bytes_total counter\n"
            "wanledger_agent_bytes_total{direction=\"tx\"} %llu\n"
            "wanledger_agent_bytes_total{direction=\"rx\"} %llu\n"
            "# HELP wanledger_agent_dropped_events_total Events lost because a map was full.\n"
            "# TYPE wanledger_agent_dropped_events_total counter\n"
            "wanledger_agent_dropped_events_total %llu\n"
            "# TYPE wanledger_agent_flows_seen_total counter\n"
            "wanledger_agent_flows_seen_total %llu\n"
            "# TYPE wanledger_agent_flows_reported_total counter\n"
            "wanledger_agent_flows_reported_total %llu\n"
            "# TYPE wanledger_agent_reports_sent_total counter\n"
            "wanledger_agent_reports_sent_total %llu\n"
            "# TYPE wanledger_agent_reports_rejected_total counter\n"
            "wanledger_agent_reports_rejected_total %llu\n"
            "# TYPE wanledger_agent_send_failures_total counter\n"
            "wanledger_agent_send_failures_total %llu\n"
            "# HELP wanledger_agent_reports_spooled Reports waiting in the spool.\n"
            "# TYPE wanledger_agent_reports_spooled gauge\n"
            "wanledger_agent_reports_spooled %llu\n"
            "# TYPE wanledger_agent_spool_dropped_total counter\n"
            "wanledger_agent_spool_dropped_total %llu\n"
            "# TYPE wanledger_agent_drain_errors_total counter\n"
            "wanledger_agent_drain_errors_total %llu\n"
            "# HELP wanledger_agent_drain_seconds Time to flip, wait and read one map generation, "
            "over the last %zu drains.\n"
            "# TYPE wanledger_agent_drain_seconds summary\n"
            "wanledger_agent_drain_seconds{quantile=\"0.5\"} %.6f\n"
            "wanledger_agent_drain_seconds{quantile=\"0.99\"} %.6f\n"
            "wanledger_agent_drain_seconds{quantile=\"1\"} %.6f\n"
            "wanledger_agent_drain_seconds_count %zu\n",
            m->attach_mode ? m->attach_mode : "none", m->nfs ? 1 : 0,
            (unsigned long long)m->windows, (unsigned long long)m->events,
            (unsigned long long)m->tx_bytes, (unsigned long long)m->rx_bytes,
            (unsigned long long)m->dropped_events, (unsigned long long)m->flows_seen,
            (unsigned long long)m->flows_reported, (unsigned long long)m->reports_sent,
            (unsigned long long)m->reports_rejected, (unsigned long long)m->send_failures,
            (unsigned long long)m->reports_spooled, (unsigned long long)m->spool_dropped,
            (unsigned long long)m->drain_errors, cnt, (double)p50 / 1e9, (double)p99 / 1e9,
            (double)pmax / 1e9, m->n_drain);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
