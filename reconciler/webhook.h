/* Delivery of gap/over/saturation alerts to every configured webhook in Alertmanager API v2
 * form (POST of a JSON array of alerts): an alert is sent when it opens, re-sent every
 * resend_seconds while open with endsAt = now + 4 x resend_seconds (Prometheus' convention, so
 * Alertmanager keeps it active across three lost re-sends whatever its resolve_timeout), and sent
 * once more with its endsAt when it resolves. A failing receiver is retried with exponential
 * backoff. A batch refused with 400/422 (Alertmanager refuses a whole batch for one invalid
 * alert, after storing the valid ones) is sent again one alert at a time; an alert refused on
 * its own is logged with its JSON and not re-sent for WEBHOOK_REFUSED_RETRY_S (a refused
 * resolution counts as delivered: it never will be), so no resolution waits behind it. Everything
 * is non-blocking on the caller's event base (evhttp client connections), so the reconcile loop is
 * never held up; gap_alerts is polled once a second and its last_sent_at / resolved_sent columns
 * record deliveries. */
#ifndef WL_WEBHOOK_H
#define WL_WEBHOOK_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"
#include "store.h"

#define WEBHOOK_BACKOFF_MIN_S   1
#define WEBHOOK_BACKOFF_MAX_S   60
#define WEBHOOK_ENDS_RESENDS    4    /* open alerts: endsAt = now + this many resend intervals */
#define WEBHOOK_REFUSED_RETRY_S 3600 /* an open alert refused alone is offered again after this */

struct webhook;

/* NULL with err filled when a webhook URL is not http://HOST[:PORT]/PATH. With no webhooks
 * configured the result does nothing. store gives the database connection (borrowed). */
struct webhook *webhook_new(struct event_base *base, const struct cfg *cfg, struct store *store,
                            struct metrics *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void webhook_free(struct webhook *w);
/* Looks at gap_alerts now and posts whatever is due (the module's timer does this every second). */
void webhook_poll(struct webhook *w);
/* POSTs still waiting for an answer, plus targets waiting to retry a failure. */
size_t webhook_busy(const struct webhook *w);

/* One alert as Alertmanager API v2 expects it, for the payload and for tests. */
struct webhook_alert {
    int64_t id;
    const char *kind, *src_site, *dst_site, *circuit, *summary;
    int resolved;
    int64_t opened_at_us, resolved_at_us, first_window_us, last_window_us;
    int64_t peak_unattributed_bytes; /* -1: unknown */
    double peak_ratio;               /* < 0: unknown */
};
void webhook_alert_json(struct evbuffer *out, const struct cfg *cfg, const struct webhook_alert *a);

#endif
