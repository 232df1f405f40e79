/* `wanledger poll`: SNMP polling of every configured device and the gNMI (gnmic) listener on one
 * libevent loop, samples batched to the reconciler through the on-disk spool. */
#include "poll_cmd.h"

#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flow_collect.h"
#include "gnmi_listen.h"
#include "log.h"
#include "poll_metrics.h"
#include "poll_sink.h"
#include "snmp_poller.h"

#define MAX_ONLY 256

static void usage(FILE *f)
{
    fprintf(f, "usage: wanledger [--config FILE] poll [options]\n"
               "  --once            poll every SNMP device once, deliver (or print), exit\n"
               "  --stdout          print sample batches as JSON lines instead of posting\n"
               "  --spool DIR       spool directory (default: spool_dir of the config)\n"
               "  --name NAME       poller name in each batch (default: host name)\n"
               "  --device NAME     poll only this SNMP device (repeatable)\n"
               "  --gnmi-tcp H:P    listen for gnmic's tcp output (default: gnmi_tcp_listen)\n"
               "  --gnmi-udp H:P    listen for gnmic's udp output (default: gnmi_udp_listen)\n"
               "  --gnmi-delimiter S  gnmic tcp output's `delimiter` (default: gnmi_delimiter)\n"
               "  --gnmi-quiet-ms N  emit a gNMI sample after N ms without events (default 500)\n"
               "  --no-snmp         do not poll SNMP devices (gNMI listener only)\n"
               "  --metrics H:P     serve /metrics here (default: metrics_listen, "
               "else " POLL_METRICS_DEFAULT ")\n"
               "  --flush-ms N      batch samples for N ms before spooling (default 1000)\n"
               "  --max-varbinds N  varbinds per SNMP GET to start with (default 100)\n");
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    log_info(NULL, "signal %d: stopping", (int)sig);
    event_base_loopbreak(arg);
}

static void on_once_done(void *arg)
{
    event_base_loopbreak(arg);
}

struct poll_opts {
    bool once, to_stdout, no_snmp;
    const char *spool_dir, *tcp, *udp, *name, *delimiter, *metrics_addr;
    char host[256];
    char *only[MAX_ONLY];
    size_t n_only;
    int flush_ms, max_vb, quiet_ms;
};

/* The command line over the config's defaults: -1 to go on, else the exit code. */
static int parse_opts(const struct cfg *cfg, int argc, char **argv, struct poll_opts *o)
{
    static const struct option opts[] = {
        {"once", no_argument, NULL, 'o'},
        {"stdout", no_argument, NULL, 's'},
        {"spool", required_argument, NULL, 'S'},
        {"name", required_argument, NULL, 'n'},
        {"device", required_argument, NULL, 'd'},
        {"gnmi-tcp", required_argument, NULL, 't'},
        {"gnmi-udp", required_argument, NULL, 'u'},
        {"no-snmp", no_argument, NULL, 'N'},
        {"flush-ms", required_argument, NULL, 'f'},
        {"max-varbinds", required_argument, NULL, 'm'},
        {"gnmi-delimiter", required_argument, NULL, 'D'},
        {"gnmi-quiet-ms", required_argument, NULL, 'q'},
        {"metrics", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct poll_opts){.spool_dir = cfg->spool_dir,
                            .tcp = cfg->gnmi_tcp_listen,
                            .udp = cfg->gnmi_udp_listen,
                            .delimiter = cfg->gnmi_delimiter,
                            .metrics_addr = cfg->metrics_listen,
                            .flush_ms = 1000,
                            .max_vb = 100,
                            .quiet_ms = GNMI_QUIET_MS_DEFAULT};
    snprintf(o->host, sizeof(o->host), "poller");
    gethostname(o->host, sizeof(o->host) - 1);
    o->name = o->host;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->once = true;
            break;
        case 's':
            o->to_stdout = true;
            break;
        case 'S':
            o->spool_dir = optarg;
            break;
        case 'n':
            o->name = optarg;
            break;
        case 'd':
            if (o->n_only == MAX_ONLY) {
                fprintf(stderr, "wanledger poll: at most %d --device options\n", MAX_ONLY);
                return 2;
            }
            if (cfg_device_index(cfg, optarg) < 0) {
                fprintf(stderr, "wanledger poll: --device %s: no such device in %s\n", optarg,
                        cfg->path);
                return 2;
            }
            o->only[o->n_only++] = optarg;
            break;
        case 't':
            o->tcp = optarg;
            break;
        case 'u':
            o->udp = optarg;
            break;
        case 'N':
            o->no_snmp = true;
            break;
        case 'D':
            o->delimiter = optarg;
            break;
        case 'M':
            o->metrics_addr = optarg;
            break;
        case 'f':
        case 'm':
        case 'q': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v <= 0 || v > 1000000) {
                fprintf(stderr, "wanledger poll: --%s %s: expected a positive integer\n",
                        c == 'f'   ? "flush-ms"
                        : c == 'm' ? "max-varbinds"
                                   : "gnmi-quiet-ms",
                        optarg);
                return 2;
            }
            *(c == 'f' ? &o->flush_ms : c == 'm' ? &o->max_vb : &o->quiet_ms) = (int)v;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wanledger poll: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (o->once) {
        o->tcp = o->udp = NULL; /* --once is one SNMP poll */
        if (o->no_snmp) {
            fprintf(stderr, "wanledger poll: --once polls SNMP devices; drop --no-snmp\n");
            return 2;
        }
    }
    if (!o->to_stdout && !o->spool_dir) {
        fprintf(stderr, "wanledger poll: no spool directory (spool_dir or --spool)\n");
        return 2;
    }
    return -1;
}

/* /metrics, except in --once: the default port taken (a second poller on this host) is a
 * warning, a configured address that cannot be bound an error (-1). */
static int start_metrics(struct event_base *base, const struct cfg *cfg, const struct poll_opts *o,
                         const struct snmp_poller *sp, const struct gnmi_listen *gl,
                         struct poll_metrics **out)
{
    char err[512];
    const char *addr = o->metrics_addr ? o->metrics_addr : POLL_METRICS_DEFAULT;
    *out = NULL;
    if (o->once)
        return 0;
    *out = poll_metrics_new(base, addr, cfg, sp, gl, o->to_stdout ? NULL : o->spool_dir, err,
                            sizeof(err));
    if (!*out && o->metrics_addr) {
        log_error(NULL, "%s", err);
        return -1;
    }
    if (!*out)
        log_warn(NULL, "%s; running without /metrics", err);
    else
        log_info(NULL, "metrics on http://%s/metrics", addr);
    return 0;
}

/* What one run holds; poll_run_free releases whatever was made. */
struct poll_run {
    struct event_base *base;
    struct poll_sink *sink;
    struct snmp_poller *sp;
    struct gnmi_listen *gl;
    struct flow_collect *fc;
    struct event *sig_int, *sig_term;
    struct poll_metrics *metrics;
    char url[1024];
    const char *base_url, *token;
};

/* The sink, the SNMP poller, the gNMI listener and the flow collectors: 0, or the exit code. */
static int start_sources(struct poll_run *r, const struct cfg *cfg, struct poll_opts *o)
{
    char err[512];
    struct poll_sink_opts so = {
        .poller = o->name,
        .out = o->to_stdout ? stdout : NULL,
        .spool_dir = o->spool_dir,
        .spool_max_bytes = cfg->spool_max_bytes ? cfg->spool_max_bytes : (256ULL << 20),
        .url = r->url,
        .token = r->token,
        .flush_ms = o->flush_ms,
        .delivery = &cfg->delivery,
    };
    r->sink = poll_sink_new(r->base, &so, err, sizeof(err));
    if (!r->sink) {
        log_error(NULL, "%s", err);
        return 1;
    }
    if (!o->no_snmp) {
        struct snmp_poller_opts po = {
            .once = o->once, .done = on_once_done, .done_arg = r->base, .max_varbinds = o->max_vb};
        r->sp = snmp_poller_new(r->base, cfg, r->sink, &po, o->only, o->n_only, err, sizeof(err));
        if (!r->sp) {
            log_error(NULL, "%s", err);
            return 2;
        }
    }
    const char *tcp = o->tcp, *udp = o->udp;
    if (tcp || udp) {
        struct gnmi_listen_opts go = {
            .tcp_addr = tcp, .udp_addr = udp, .delimiter = o->delimiter, .quiet_ms = o->quiet_ms};
        r->gl = gnmi_listen_new(r->base, cfg, r->sink, &go, err, sizeof(err));
        if (!r->gl) {
            log_error(NULL, "%s", err);
            return 1;
        }
        log_info(NULL, "gnmi: listening for gnmic on%s%s%s%s", tcp ? " tcp " : "", tcp ? tcp : "",
                 udp ? " udp " : "", udp ? udp : "");
    }
    struct flow_collect_opts fo = {.poller = o->name,
                                   .spool_dir = o->spool_dir,
                                   .spool_max_bytes = so.spool_max_bytes,
                                   .reconciler_url = r->base_url,
                                   .token = r->token,
                                   .out = so.out};
    if (!o->once && flow_collect_devices(cfg) > 0 &&
        !(r->fc = flow_collect_new(r->base, cfg, &fo, err, sizeof(err)))) {
        log_error(NULL, "%s", err);
        return 1;
    }
    if (r->fc) /* the SNMP samples' ifIndexes map flow records to links (flow_link.h) */
        poll_sink_set_tap(r->sink, flow_collect_learn, r->fc);
    if ((!r->sp || snmp_poller_devices(r->sp) == 0) && !r->gl && !r->fc) {
        log_error(NULL, "nothing to poll: no SNMP device selected and no gNMI listener in %s",
                  cfg->path);
        return 2;
    }
    return 0;
}

/* Everything the run made, in reverse; rc becomes 1 when --once leaves batches undelivered. */
static int poll_run_free(struct poll_run *r, const struct poll_opts *o, int rc)
{
    poll_metrics_free(r->metrics);
    if (r->sig_int)
        event_free(r->sig_int);
    if (r->sig_term)
        event_free(r->sig_term);
    snmp_poller_free(r->sp);
    gnmi_listen_free(r->gl);
    if (r->sink)
        poll_sink_set_tap(r->sink, NULL, NULL);
    (void)flow_collect_free(r->fc, 2000);
    if (r->sink) {
        size_t left = poll_sink_close(r->sink, o->once && !o->to_stdout);
        if (o->once && left > 0 && rc == 0) {
            log_error(NULL, "%zu batch(es) not delivered to %s; kept in %s", left, r->url,
                      o->spool_dir);
            rc = 1;
        }
    }
    event_base_free(r->base);
    return rc;
}

int poll_cmd_poll(const struct cfg *cfg, int argc, char **argv)
{
    struct poll_opts opt;
    int prc = parse_opts(cfg, argc, argv, &opt);
    if (prc >= 0)
        return prc;
    const struct poll_opts *o = &opt;
    struct poll_run r = {.base_url = cfg->reconciler_url ? cfg->reconciler_url : ""};
    size_t bl = strlen(r.base_url);
    while (bl && r.base_url[bl - 1] == '/')
        bl--;
    snprintf(r.url, sizeof(r.url), "%.*s/v1/counters", (int)bl, r.base_url);
    r.token = cfg->tokens.n_poller ? cfg->tokens.poller[0] : NULL;
    if (!o->to_stdout && !r.token)
        log_warn(NULL, "no poller token in %s; posting without Authorization",
                 cfg->tokens_file ? cfg->tokens_file : cfg->path);

    signal(SIGPIPE, SIG_IGN);
    r.base = event_base_new();
    if (!r.base) {
        log_error(NULL, "cannot create the event loop");
        return 1;
    }
    int rc = start_sources(&r, cfg, &opt);
    if (rc != 0)
        return poll_run_free(&r, o, rc);
    if (start_metrics(r.base, cfg, o, r.sp, r.gl, &r.metrics) != 0)
        return poll_run_free(&r, o, 2);
    r.sig_int = evsignal_new(r.base, SIGINT, on_signal, r.base);
    r.sig_term = evsignal_new(r.base, SIGTERM, on_signal, r.base);
    if (!r.sig_int || !r.sig_term)
        return poll_run_free(&r, o, 1);
    evsignal_add(r.sig_int, NULL);
    evsignal_add(r.sig_term, NULL);
    if (r.sp)
        log_info(NULL, "polling %zu SNMP device(s)%s", snmp_poller_devices(r.sp),
                 o->once ? " once" : "");
    event_base_dispatch(r.base);
    rc = 0;
    if (o->once && r.sp && snmp_poller_failures(r.sp) > 0) {
        log_error(NULL, "%zu of %zu device(s) failed", snmp_poller_failures(r.sp),
                  snmp_poller_devices(r.sp));
        rc = 1;
    }
    return poll_run_free(&r, o, rc);
}
