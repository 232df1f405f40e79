/* The flow collector (see flow_collect.h). */
#include "flow_collect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flow_agg.h"
#include "flow_batch.h"
#include "flow_ipfix.h"
#include "flow_link.h"
#include "flow_send.h"
#include "flow_sflow.h"
#include "log.h"
#include "timeutil.h"

#define DGRAM_MAX    65536
#define READS_PER_CB 256 /* datagrams read per readable event before yielding to the loop */
#define BATCH        32  /* datagrams per recvmmsg */
#define MAX_CELLS    (1u << 19)
#define SOCK_RCVBUF  (8 << 20)
#define MAX_IFC      4096 /* sFlow counter samples waiting for the next batch */

struct fdev {
    struct flow_collect *fc;
    uint32_t idx; /* device index in cfg */
    const struct cfg_device *cd;
    evutil_socket_t fd;
    struct event *ev;
    struct flow_ipfix *fx; /* ipfix / netflow9 */
    struct flow_stats st;
    bool logged_malformed;
};

struct flow_collect {
    const struct cfg *cfg;
    struct flow_collect_opts o;
    char *poller;
    struct fdev *devs;
    size_t n_devs;
    struct flow_agg *agg;
    struct flow_send *send;
    struct event *tick;
    uint8_t *bufs; /* BATCH receive buffers of DGRAM_MAX */
    uint8_t *buf;  /* the one being decoded */
    int64_t boot_us;
    uint64_t seq;
    int64_t now_us; /* arrival time of the datagram being decoded */
    uint32_t cur_dev;
    struct flow_links *links;   /* cells to links by device and ifIndex */
    struct flow_batch_ifc *ifc; /* sFlow counter samples for the next batch (device = cfg index) */
    size_t n_ifc;
    uint64_t ifc_dropped; /* beyond MAX_IFC between two batches: counted in agg_dropped */
};

static const char *proto_name(enum cfg_flow_protocol p)
{
    return p == CFG_FLOW_SFLOW ? "sflow" : p == CFG_FLOW_NETFLOW9 ? "netflow9" : "ipfix";
}

size_t flow_collect_devices(const struct cfg *cfg)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_devices; i++)
        n += cfg->devices[i].has_flows;
    return n;
}

static void on_rec(void *arg, const struct flow_rec *r)
{
    struct flow_collect *fc = arg;
    (void)flow_agg_add(fc->agg, fc->cur_dev, r, fc->now_us); /* a full table is counted */
}

/* An sFlow counter sample: kept for the next batch (cumulative counters: a dropped one loses
 * only its point in time, the next sample carries the totals). */
static void on_counters(void *arg, const struct flow_ifcounters *c)
{
    struct flow_collect *fc = arg;
    if (fc->n_ifc >= MAX_IFC) {
        fc->ifc_dropped++;
        return;
    }
    fc->ifc[fc->n_ifc++] =
        (struct flow_batch_ifc){.device = fc->cur_dev, .at_us = fc->now_us, .c = *c};
}

static void exporter_of(const struct sockaddr_storage *ss, struct flow_exporter *ex)
{
    memset(ex, 0, sizeof(*ex));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        ex->addr[10] = ex->addr[11] = 0xff;
        memcpy(ex->addr + 12, &in->sin_addr, 4);
        ex->port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        memcpy(ex->addr, &in6->sin6_addr, 16);
        ex->port = ntohs(in6->sin6_port);
    }
}

static void decode_one(struct fdev *d, const struct sockaddr_storage *from, size_t n)
{
    struct flow_collect *fc = d->fc;
    char err[256];
    int rc;
    fc->cur_dev = d->idx;
    fc->now_us = tm_now_us();
    if (d->cd->flows.protocol == CFG_FLOW_SFLOW) {
        struct flow_sflow_info info;
        rc =
            flow_sflow_decode(fc->buf, n, on_rec, on_counters, fc, &info, &d->st, err, sizeof(err));
    } else {
        struct flow_exporter ex;
        exporter_of(from, &ex);
        unsigned version = n >= 2 ? (unsigned)(fc->buf[0] << 8 | fc->buf[1]) : 0;
        unsigned want = d->cd->flows.protocol == CFG_FLOW_NETFLOW9 ? 9 : 10;
        if (version != want) {
            d->st.datagrams++;
            d->st.malformed++;
            snprintf(err, sizeof(err), "version %u, but the device is configured for %s", version,
                     proto_name(d->cd->flows.protocol));
            rc = -1;
        } else {
            rc = flow_ipfix_decode(d->fx, &ex, fc->buf, n, fc->now_us / 1000, on_rec, fc, &d->st,
                                   err, sizeof(err));
        }
    }
    if (rc < 0 && !d->logged_malformed) {
        /* once per device: a broken exporter would otherwise flood the log; /metrics counts */
        char peer[INET6_ADDRSTRLEN + 8] = "?";
        struct flow_exporter ex;
        exporter_of(from, &ex);
        inet_ntop(AF_INET6, ex.addr, peer, sizeof(peer));
        log_warn(d->cd->name, "flows: dropped a malformed %zu-byte datagram from %s: %s", n, peer,
                 err);
        d->logged_malformed = true;
    }
}

/* Reads up to READS_PER_CB datagrams, BATCH per system call (recvmmsg: one call per datagram
 * cost more than decoding it). */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct fdev *d = arg;
    struct flow_collect *fc = d->fc;
    for (int done = 0; done < READS_PER_CB;) {
        struct mmsghdr m[BATCH];
        struct iovec iov[BATCH];
        struct sockaddr_storage from[BATCH];
        for (int i = 0; i < BATCH; i++) {
            iov[i] =
                (struct iovec){.iov_base = fc->bufs + (size_t)i * DGRAM_MAX, .iov_len = DGRAM_MAX};
            m[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
                                           .msg_namelen = sizeof(from[i]),
                                           .msg_iov = &iov[i],
                                           .msg_iovlen = 1};
        }
        int n = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++) {
            fc->buf = fc->bufs + (size_t)i * DGRAM_MAX;
            decode_one(d, &from[i], m[i].msg_len);
        }
        done += n;
        if (n < BATCH)
            break;
    }
}

/* Sends cells of windows that started before before_us (every window when INT64_MAX). */
static void send_closed(struct flow_collect *fc, int64_t before_us)
{
    struct flow_cell *cells;
    size_t n;
    if (flow_agg_take(fc->agg, before_us, &cells, &n) < 0) {
        log_error(NULL, "flows: out of memory taking closed windows; retrying next second");
        return;
    }
    struct flow_batch_device *bd = calloc(fc->n_devs ? fc->n_devs : 1, sizeof(*bd));
    if (!bd) {
        free(cells);
        return;
    }
    /* device index in the batch = configuration index: map cells to the compact list */
    uint32_t *map = calloc(fc->cfg->n_devices ? fc->cfg->n_devices : 1, sizeof(*map));
    for (size_t i = 0; i < fc->n_devs; i++) {
        bd[i].name = fc->devs[i].cd->name;
        bd[i].protocol = proto_name(fc->devs[i].cd->flows.protocol);
        bd[i].st = fc->devs[i].st;
        bd[i].agg_dropped = i == 0 ? flow_agg_dropped(fc->agg) + fc->ifc_dropped : 0;
        if (map)
            map[fc->devs[i].idx] = (uint32_t)i;
    }
    for (size_t i = 0; i < n; i++) { /* the link it crossed, else the reconciler uses addresses */
        struct flow_cell *c = &cells[i];
        if (!flow_links_sites(fc->links, c->device, c->in_if, c->out_if, c->family, c->dst,
                              &c->src_site, &c->dst_site))
            c->src_site = c->dst_site = -1;
    }
    const char **sites = calloc(fc->cfg->n_sites ? fc->cfg->n_sites : 1, sizeof(*sites));
    for (size_t i = 0; sites && i < fc->cfg->n_sites; i++)
        sites[i] = fc->cfg->sites[i].name;
    for (size_t i = 0; map && i < n; i++)
        cells[i].device = map[cells[i].device];
    for (size_t i = 0; map && i < fc->n_ifc; i++)
        fc->ifc[i].device = map[fc->ifc[i].device];
    char id[256];
    snprintf(id, sizeof(id), "%s:%lld:%llu", fc->poller, (long long)fc->boot_us,
             (unsigned long long)++fc->seq);
    size_t len = 0;
    char *json = flow_batch_json(fc->poller, id, fc->cfg->window_seconds, bd, fc->n_devs, cells, n,
                                 map ? fc->ifc : NULL, map ? fc->n_ifc : 0, sites,
                                 sites ? fc->cfg->n_sites : 0, &len);
    size_t n_ifc = map ? fc->n_ifc : 0;
    fc->n_ifc = 0; /* encoded (or, without the map, never to be sent with a wrong device) */
    if (!json) {
        log_error(NULL, "flows: out of memory encoding %zu cells; dropped", n);
    } else if (fc->o.out) {
        fprintf(fc->o.out, "%s\n", json);
        fflush(fc->o.out);
    } else if (n > 0 || n_ifc > 0) { /* the collector's own counters alone wait */
        char err[256];
        if (flow_send_push(fc->send, json, len, err, sizeof(err)) < 0)
            log_error(NULL, "flows: batch of %zu cells, %zu counter samples not spooled: %s", n,
                      n_ifc, err);
    }
    free(json);
    free(sites);
    free(map);
    free(bd);
    free(cells);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct flow_collect *fc = arg;
    int64_t now = tm_now_us();
    int64_t before =
        tm_window_start(now - (int64_t)fc->o.close_delay_s * 1000000LL, fc->cfg->window_seconds);
    send_closed(fc, before);
}

static int open_socket(struct fdev *d, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    int sl = (int)sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    const char *listen = d->cd->flows.listen;
    if (evutil_parse_sockaddr_port(listen, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, errlen, "device %s: flows.listen \"%s\": expected HOST:PORT", d->cd->name,
                 listen);
        return -1;
    }
    d->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, rcv = SOCK_RCVBUF;
    if (d->fd >= 0) {
        setsockopt(d->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(d->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    }
    if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&ss, (socklen_t)sl) != 0) {
        snprintf(err, errlen, "device %s: cannot listen for flows on udp %s: %s", d->cd->name,
                 listen, strerror(errno));
        return -1;
    }
    return 0;
}

struct flow_collect *flow_collect_new(struct event_base *base, const struct cfg *cfg,
                                      const struct flow_collect_opts *o, char *err, size_t errlen)
{
    struct flow_collect *fc = calloc(1, sizeof(*fc));
    if (!fc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    fc->cfg = cfg;
    fc->o = *o;
    if (fc->o.close_delay_s <= 0)
        fc->o.close_delay_s = 5;
    fc->poller = strdup(o->poller ? o->poller : "poller");
    fc->boot_us = tm_now_us();
    fc->bufs = malloc((size_t)BATCH * DGRAM_MAX);
    fc->buf = fc->bufs;
    fc->agg = flow_agg_new(cfg->window_seconds, MAX_CELLS);
    fc->devs = calloc(cfg->n_devices ? cfg->n_devices : 1, sizeof(*fc->devs));
    fc->ifc = calloc(MAX_IFC, sizeof(*fc->ifc));
    fc->links = flow_links_new(cfg);
    if (!fc->poller || !fc->bufs || !fc->agg || !fc->devs || !fc->ifc || !fc->links) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < cfg->n_devices; i++) {
        const struct cfg_device *cd = &cfg->devices[i];
        if (!cd->has_flows)
            continue;
        struct fdev *d = &fc->devs[fc->n_devs++];
        d->fc = fc;
        d->idx = (uint32_t)i;
        d->cd = cd;
        d->fd = -1;
        if (cd->flows.protocol != CFG_FLOW_SFLOW && !(d->fx = flow_ipfix_new())) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (open_socket(d, err, errlen) < 0)
            goto fail;
        d->ev = event_new(base, d->fd, EV_READ | EV_PERSIST, on_readable, d);
        if (!d->ev || event_add(d->ev, NULL) != 0) {
            snprintf(err, errlen, "cannot watch the flow socket");
            goto fail;
        }
        log_info(cd->name, "flows: listening for %s on udp %s", proto_name(cd->flows.protocol),
                 cd->flows.listen);
    }
    if (!o->out) {
        char url[1024];
        const char *base_url = o->reconciler_url ? o->reconciler_url : "";
        size_t bl = strlen(base_url);
        while (bl && base_url[bl - 1] == '/')
            bl--;
        snprintf(url, sizeof(url), "%.*s/v1/flowsamples", (int)bl, base_url);
        if (!o->spool_dir) {
            snprintf(err, errlen, "flows: no spool directory (spool_dir or --spool)");
            goto fail;
        }
        fc->send =
            flow_send_new(o->spool_dir, o->spool_max_bytes ? o->spool_max_bytes : (64ULL << 20),
                          url, o->token, &cfg->delivery, err, errlen);
        if (!fc->send)
            goto fail;
    }
    fc->tick = event_new(base, -1, EV_PERSIST, on_tick, fc);
    struct timeval one = {1, 0};
    if (!fc->tick || event_add(fc->tick, &one) != 0) {
        snprintf(err, errlen, "cannot start the flow timer");
        goto fail;
    }
    return fc;
fail:
    (void)flow_collect_free(fc, 0);
    return NULL;
}

void flow_collect_learn(void *arg, const struct poll_sample *s)
{
    struct flow_collect *fc = arg;
    if (fc)
        flow_links_learn(fc->links, s->device, s->interface, poll_sample_ifindex(s));
}

size_t flow_collect_free(struct flow_collect *fc, int drain_ms)
{
    if (!fc)
        return 0;
    if (fc->agg && (fc->send || fc->o.out))
        send_closed(fc, INT64_MAX); /* open windows too: a later batch would add to them */
    for (size_t i = 0; i < fc->n_devs; i++) {
        struct fdev *d = &fc->devs[i];
        if (d->ev)
            event_free(d->ev);
        if (d->fd >= 0)
            close(d->fd);
        flow_ipfix_free(d->fx);
    }
    if (fc->tick)
        event_free(fc->tick);
    size_t left = flow_send_close(fc->send, drain_ms);
    flow_agg_free(fc->agg);
    free(fc->devs);
    free(fc->ifc);
    flow_links_free(fc->links);
    free(fc->bufs);
    free(fc->poller);
    free(fc);
    return left;
}
