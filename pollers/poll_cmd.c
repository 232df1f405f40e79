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

int poll_cmd_poll(const struct cfg *cfg, int argc, char **argv)
{
    struct poll_opts opt;
    int prc = parse_opts(cfg, argc, argv, &opt);
    if (prc >= 0)
        return prc;
    const struct poll_opts *o = &opt;
    bool once = o->once, to_stdout = o->to_stdout;
    const char *spool_dir = o->spool_dir, *tcp = o->tcp, *udp = o->udp;
    char url[1024];
    const char *base_url = cfg->reconciler_url ? cfg->reconciler_url : "";
    size_t bl = strlen(base_url);
    while (bl && base_url[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof(url), "%.*s/v1/counters", (int)bl, base_url);
    const char *token = cfg->tokens.n_poller ? cfg->tokens.poller[0] : NULL;
    if (!to_stdout && !token)
        log_warn(NULL, "no poller token in %s; posting without Authorization",
                 cfg->tokens_file ? cfg->tokens_file : cfg->path);

    signal(SIGPIPE, SIG_IGN);
    int rc = 1;
    char err[512];
    struct event_base *base = event_base_new();
    struct poll_sink *sink = NULL;
    struct snmp_poller *sp = NULL;
    struct gnmi_listen *gl = NULL;
    struct flow_collect *fc = NULL;
    struct event *sig_int = NULL, *sig_term = NULL;
    struct poll_metrics *metrics = NULL;
    if (!base) {
        log_error(NULL, "cannot create the event loop");
        return 1;
    }
    struct poll_sink_opts so = {
        .poller = o->name,
        .out = to_stdout ? stdout : NULL,
        .spool_dir = spool_dir,
        .spool_max_bytes = cfg->spool_max_bytes ? cfg->spool_max_bytes : (256ULL << 20),
        .url = url,
        .token = token,
        .flush_ms = o->flush_ms,
        .delivery = &cfg->delivery,
    };
    sink = poll_sink_new(base, &so, err, sizeof(err));
    if (!sink) {
        log_error(NULL, "%s", err);
        goto done;
    }
    if (!o->no_snmp) {
        struct snmp_poller_opts po = {
            .once = once, .done = on_once_done, .done_arg = base, .max_varbinds = o->max_vb};
        sp = snmp_poller_new(base, cfg, sink, &po, opt.only, o->n_only, err, sizeof(err));
        if (!sp) {
            log_error(NULL, "%s", err);
            rc = 2;
            goto done;
        }
    }
    if (tcp || udp) {
        struct gnmi_listen_opts go = {
            .tcp_addr = tcp, .udp_addr = udp, .delimiter = o->delimiter, .quiet_ms = o->quiet_ms};
        gl = gnmi_listen_new(base, cfg, sink, &go, err, sizeof(err));
        if (!gl) {
            log_error(NULL, "%s", err);
            goto done;
        }
        log_info(NULL, "gnmi: listening for gnmic on%s%s%s%s", tcp ? " tcp " : "", tcp ? tcp : "",
                 udp ? " udp " : "", udp ? udp : "");
    }
    struct flow_collect_opts fo = {.poller = o->name,
                                   .spool_dir = spool_dir,
                                   .spool_max_bytes = so.spool_max_bytes,
                                   .reconciler_url = base_url,
                                   .token = token,
                                   .out = so.out};
    if (!once && flow_collect_devices(cfg) > 0 &&
        !(fc = flow_collect_new(base, cfg, &fo, err, sizeof(err)))) {
        log_error(NULL, "%s", err);
        goto done;
    }
    if (fc) /* the SNMP samples' ifIndexes map flow records to links (flow_link.h) */
        poll_sink_set_tap(sink, flow_collect_learn, fc);
    if ((!sp || snmp_poller_devices(sp) == 0) && !gl && !fc) {
        log_error(NULL, "nothing to poll: no SNMP device selected and no gNMI listener in %s",
                  cfg->path);
        rc = 2;
        goto done;
    }
    if (start_metrics(base, cfg, o, sp, gl, &metrics) != 0) {
        rc = 2;
        goto done;
    }
    sig_int = evsignal_new(base, SIGINT, on_signal, base);
    sig_term = evsignal_new(base, SIGTERM, on_signal, base);
    if (!sig_int || !sig_term)
        goto done;
    evsignal_add(sig_int, NULL);
    evsignal_add(sig_term, NULL);
    if (sp)
        log_info(NULL, "polling %zu SNMP device(s)%s", snmp_poller_devices(sp),
                 once ? " once" : "");
    event_base_dispatch(base);
    rc = 0;
    if (once && sp && snmp_poller_failures(sp) > 0) {
        log_error(NULL, "%zu of %zu device(s) failed", snmp_poller_failures(sp),
                  snmp_poller_devices(sp));
        rc = 1;
    }
done:
    poll_metrics_free(metrics);
    if (sig_int)
        event_free(sig_int);
    if (sig_term)
        event_free(sig_term);
    snmp_poller_free(sp);
    gnmi_listen_free(gl);
    if (sink)
        poll_sink_set_tap(sink, NULL, NULL);
    (void)flow_collect_free(fc, 2000);
    if (sink) {
        size_t left = poll_sink_close(sink, once && !to_stdout);
        if (once && left > 0 && rc == 0) {
            log_error(NULL, "%zu batch(es) not delivered to %s; kept in %s", left, url, spool_dir);
            rc = 1;
        }
    }
    event_base_free(base);
    return rc;
}
