/* The poller's /metrics (see poll_metrics.h). Every family has HELP and TYPE; counters end in
 * _total; label values are escaped (\\, ", newline) as the text format requires. */
#include "poll_metrics.h"

#include <dirent.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gnmi_listen.h"
#include "growbuf.h"
#include "hostport.h"
#include "snmp_poller.h"

struct poll_metrics {
    struct evhttp *http;
    const struct cfg *cfg;
    const struct snmp_poller *sp;
    const struct gnmi_listen *gl;
    const char *spool_dir;
};

struct out {
    char *p;
    size_t len, cap;
    bool failed;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (o->failed || n < 0) {
        o->failed = true;
        return;
    }
    if (o->len + (size_t)n + 1 > o->cap) {
        char *p = gb_grow(o->p, &o->cap, o->len + (size_t)n + 1, 4096);
        if (!p) {
            o->failed = true;
            return;
        }
        o->p = p;
    }
    va_start(ap, fmt);
    vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

/* A label value, escaped. */
static void put_label(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(o, "\\\\");
        else if (*s == '"')
            put(o, "\\\"");
        else if (*s == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *s);
    }
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void dev_value(struct out *o, const char *name, const char *dev, const char *extra,
                      const char *fmt_value)
{
    put(o, "%s{device=\"", name);
    put_label(o, dev);
    put(o, "\"%s} %s\n", extra ? extra : "", fmt_value);
}

static const char *const reason_names[SNMP_N_FAIL] = {
    [SNMP_FAIL_TIMEOUT] = "timeout",
    [SNMP_FAIL_TRANSPORT] = "transport",
    [SNMP_FAIL_AUTH] = "auth",
    [SNMP_FAIL_AGENT_ERROR] = "agent_error",
    [SNMP_FAIL_NO_INTERFACE] = "no_interface",
};

static void snmp_families(struct out *o, const struct snmp_poller *sp)
{
    size_t n = sp ? snmp_poller_devices(sp) : 0;
    char v[64], extra[96];
    family(o, "wanledger_poller_snmp_last_success_timestamp_seconds", "gauge",
           "Unix time of the last successful SNMP poll of the device (0: none yet).");
    for (size_t i = 0; i < n; i++) {
        const struct snmp_dev_stats *st = snmp_poller_device_stats(sp, i);
        snprintf(v, sizeof(v), "%.6f", (double)st->last_success_us / 1e6);
        dev_value(o, "wanledger_poller_snmp_last_success_timestamp_seconds",
                  snmp_poller_device_name(sp, i), NULL, v);
    }
    family(o, "wanledger_poller_snmp_poll_duration_seconds", "histogram",
           "Duration of successful SNMP polls, first request to last answer.");
    for (size_t i = 0; i < n; i++) {
        const struct snmp_dev_stats *st = snmp_poller_device_stats(sp, i);
        const char *dev = snmp_poller_device_name(sp, i);
        for (size_t b = 0; b < SNMP_N_DURATION_BUCKETS; b++) {
            snprintf(extra, sizeof(extra), ",le=\"%g\"", snmp_duration_buckets[b]);
            snprintf(v, sizeof(v), "%" PRIu64, st->duration_le[b]);
            dev_value(o, "wanledger_poller_snmp_poll_duration_seconds_bucket", dev, extra, v);
        }
        snprintf(v, sizeof(v), "%" PRIu64, st->polls_ok);
        dev_value(o, "wanledger_poller_snmp_poll_duration_seconds_bucket", dev, ",le=\"+Inf\"", v);
        snprintf(v, sizeof(v), "%.6f", st->duration_sum_s);
        dev_value(o, "wanledger_poller_snmp_poll_duration_seconds_sum", dev, NULL, v);
        snprintf(v, sizeof(v), "%" PRIu64, st->polls_ok);
        dev_value(o, "wanledger_poller_snmp_poll_duration_seconds_count", dev, NULL, v);
    }
    family(o, "wanledger_poller_snmp_poll_failures_total", "counter",
           "Failed SNMP polls by reason (timeout, transport, auth, agent_error, no_interface).");
    for (size_t i = 0; i < n; i++) {
        const struct snmp_dev_stats *st = snmp_poller_device_stats(sp, i);
        for (int r = 0; r < SNMP_N_FAIL; r++) {
            snprintf(extra, sizeof(extra), ",reason=\"%s\"", reason_names[r]);
            snprintf(v, sizeof(v), "%" PRIu64, st->failures[r]);
            dev_value(o, "wanledger_poller_snmp_poll_failures_total",
                      snmp_poller_device_name(sp, i), extra, v);
        }
    }
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
        {"wanledger_poller_snmp_invalid_samples_total",
         "Samples marked invalid (ifOperStatus not up): the reconciler discards their intervals.",
         offsetof(struct snmp_dev_stats, invalid_samples)},
        {"wanledger_poller_snmp_session_reopens_total",
         "SNMP sessions reopened after a transport error (agent restarted, connection closed).",
         offsetof(struct snmp_dev_stats, reopens)},
        {"wanledger_poller_snmp_wrap_ambiguous_interfaces_total",
         "Interfaces with 32-bit counters that can wrap more than once per poll interval.",
         offsetof(struct snmp_dev_stats, wrap_ambiguous)},
    };
    for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
        family(o, counters[k].name, "counter", counters[k].help);
        for (size_t i = 0; i < n; i++) {
            const struct snmp_dev_stats *st = snmp_poller_device_stats(sp, i);
            uint64_t x;
            memcpy(&x, (const char *)st + counters[k].off, sizeof(x));
            snprintf(v, sizeof(v), "%" PRIu64, x);
            dev_value(o, counters[k].name, snmp_poller_device_name(sp, i), NULL, v);
        }
    }
}

static void sample_family(struct out *o, const struct poll_metrics *m)
{
    char v[64];
    family(o, "wanledger_poller_samples_total", "counter",
           "Counter samples emitted towards the reconciler, by device and source (snmp, gnmi).");
    size_t n = m->sp ? snmp_poller_devices(m->sp) : 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(v, sizeof(v), "%" PRIu64, snmp_poller_device_stats(m->sp, i)->samples);
        dev_value(o, "wanledger_poller_samples_total", snmp_poller_device_name(m->sp, i),
                  ",source=\"snmp\"", v);
    }
    if (m->gl)
        for (size_t i = 0; i < m->cfg->n_devices; i++) {
            if (!m->cfg->devices[i].has_gnmi)
                continue;
            snprintf(v, sizeof(v), "%" PRIu64, gnmi_listen_device_samples(m->gl, i));
            dev_value(o, "wanledger_poller_samples_total", m->cfg->devices[i].name,
                      ",source=\"gnmi\"", v);
        }
}

static void gnmi_families(struct out *o, const struct gnmi_listen *gl)
{
    if (!gl)
        return;
    const struct gnmi_listen_stats *st = gnmi_listen_stats(gl);
    family(o, "wanledger_poller_gnmi_connections_total", "counter",
           "TCP connections accepted from gnmic.");
    put(o, "wanledger_poller_gnmi_connections_total %" PRIu64 "\n", st->connections);
    family(o, "wanledger_poller_gnmi_messages_total", "counter",
           "gnmic messages received (TCP and UDP).");
    put(o, "wanledger_poller_gnmi_messages_total %" PRIu64 "\n", st->messages);
    family(o, "wanledger_poller_gnmi_refused_total", "counter",
           "gnmic messages refused: malformed, or format json (set format: event in gnmic).");
    put(o, "wanledger_poller_gnmi_refused_total{reason=\"malformed\"} %" PRIu64 "\n", st->rejected);
    put(o, "wanledger_poller_gnmi_refused_total{reason=\"format_json\"} %" PRIu64 "\n",
        st->format_json);
    family(o, "wanledger_poller_gnmi_events_skipped_total", "counter",
           "gnmic events not used: unknown link, stale timestamp, subinterface, future "
           "timestamp, a timestamp without both octet counters.");
    const struct {
        const char *why;
        uint64_t n;
    } sk[] = {{"unknown", st->ignored},
              {"stale", st->stale},
              {"subinterface", st->subinterface},
              {"future", st->future},
              {"partial", st->partial}};
    for (size_t i = 0; i < sizeof(sk) / sizeof(sk[0]); i++)
        put(o, "wanledger_poller_gnmi_events_skipped_total{reason=\"%s\"} %" PRIu64 "\n", sk[i].why,
            sk[i].n);
}

/* Batches waiting in the spool: its files are named by a 20-digit sequence (common/spool.h),
 * with ".json"; read from the directory so the delivery code needs no hook. */
static void spool_families(struct out *o, const char *dir)
{
    if (!dir)
        return;
    uint64_t n = 0, bytes = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strspn(e->d_name, "0123456789") != 20 ||
            (e->d_name[20] && strcmp(e->d_name + 20, ".json") != 0))
            continue;
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            n++;
            bytes += (uint64_t)sb.st_size;
        }
    }
    if (d)
        closedir(d);
    family(o, "wanledger_poller_spool_batches", "gauge",
           "Sample batches in the spool, waiting for the reconciler.");
    put(o, "wanledger_poller_spool_batches %" PRIu64 "\n", n);
    family(o, "wanledger_poller_spool_bytes", "gauge", "Bytes of the batches in the spool.");
    put(o, "wanledger_poller_spool_bytes %" PRIu64 "\n", bytes);
}

char *poll_metrics_text(const struct poll_metrics *m)
{
    struct out o = {0};
    snmp_families(&o, m->sp);
    sample_family(&o, m);
    gnmi_families(&o, m->gl);
    spool_families(&o, m->spool_dir);
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

static void handle(struct evhttp_request *req, void *arg)
{
    const struct poll_metrics *m = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_send_error(req, 405, "GET only");
        return;
    }
    char *text = poll_metrics_text(m);
    struct evbuffer *b = evbuffer_new();
    if (!text || !b) {
        free(text);
        if (b)
            evbuffer_free(b);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add(b, text, strlen(text));
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

struct poll_metrics *poll_metrics_new(struct event_base *base, const char *addr,
                                      const struct cfg *cfg, const struct snmp_poller *sp,
                                      const struct gnmi_listen *gl, const char *spool_dir,
                                      char *err, size_t errlen)
{
    struct poll_metrics *m = calloc(1, sizeof(*m));
    struct hostport hp;
    char herr[300];
    if (!m || hostport_parse(addr, strlen(addr), 0, &hp, herr, sizeof(herr)) != 0) {
        snprintf(err, errlen, "metrics listen address %s", m ? herr : "out of memory");
        free(m);
        return NULL;
    }
    m->cfg = cfg;
    m->sp = sp;
    m->gl = gl;
    m->spool_dir = spool_dir;
    m->http = evhttp_new(base);
    if (!m->http || evhttp_bind_socket(m->http, hp.host, hp.port) != 0) {
        snprintf(err, errlen, "metrics: cannot listen on %s", addr);
        poll_metrics_free(m);
        return NULL;
    }
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
    evhttp_set_cb(m->http, "/metrics", handle, m);
    return m;
}

void poll_metrics_free(struct poll_metrics *m)
{
    if (!m)
        return;
    if (m->http)
        evhttp_free(m->http);
    free(m);
}
