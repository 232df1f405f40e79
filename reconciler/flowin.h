/* POST /v1/flowsamples (poller role): a batch of per-window sampled-flow cells from `wanledger
 * poll` (format: pollers/flow_batch.h). The whole body is validated first (every error names its
 * JSON path) and then stored in one transaction: the batch id once (a resend is answered as a
 * duplicate and changes nothing), every cell added to its (window, device, host pair, protocol,
 * port) row with the sites of its addresses, the sFlow counter samples ("if_counters",
 * flowin_ifc.h) stored beside the interface counters, and the collector counters replaced. */
#ifndef WL_FLOWIN_H
#define WL_FLOWIN_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Writes the JSON answer ({"received","stored","duplicate"} or {"error","path"}) to out and
 * returns the HTTP status (200, 400, 422, 503). */
int flowin_post(PGconn *db, const struct cfg *cfg, const char *body, size_t len, int64_t now_us,
                struct evbuffer *out);

/* The flow collectors' counters (flow_collector_stats) in the Prometheus text format:
 * wanledger_flow_{datagrams,malformed,records,unknown_template_sets,undecodable_samples,
 * agg_dropped}_total{poller,device,protocol}. Nothing when db is NULL or no collector reported. */
void flowin_metrics(PGconn *db, struct evbuffer *out);

#endif
