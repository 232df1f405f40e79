/* Delivery of gap/over/saturation alerts to every configured webhook in Alertmanager API v2
 * form (POST of a JSON array of alerts): an alert is sent when it opens, re-sent every
 * resend_seconds while open with endsAt = now + 4 x resend_seconds (Prometheus' convention, so
 * Alertmanager keeps it active across three lost re-sends whatever its resolve_timeout), and sent
 * once more with its endsAt when it resolves. A failing receiver is retried with exponential
 * backoff. A batch refused with 400/422 (Alertmanager refuses a whole batch for one invalid
 * alert, after storing the valid ones) is sent again one alert at a time; an alert refused on
 * its own is logged with its JSON and not re-sent for WEBHOOK_REFUSED_RETRY_S (a refused
 * resolution counts as delivered: it never will be), so no resolution waits behind it. Everything
 * is non-blocking on the caller's event base (evhttp client connections; the database on a thread
 * of its own), so the event loop that answers agents is never held up; gap_alerts is polled once a
 * second and its last_sent_at / resolved_sent columns record deliveries. */
#ifndef WL_WEBHOOK_H
#define WL_WEBHOOK_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"

#define WEBHOOK_BACKOFF_MIN_S   1
#define WEBHOOK_BACKOFF_MAX_S   60
#define WEBHOOK_ENDS_RESENDS    4    /* open alerts: endsAt = now + this many resend intervals */
#define WEBHOOK_REFUSED_RETRY_S 3600 /* an open alert refused alone is offered again after this */

struct webhook;

/* NULL with err filled when a webhook URL is not http://HOST[:PORT]/PATH. With no webhooks
 * configured the result does nothing. Its database work (the poll, the delivery marks) runs on a
 * thread of its own with its own connection to cfg->database: the base must have been created
 * after evthread_use_pthreads(). */
struct webhook *webhook_new(struct event_base *base, const struct cfg *cfg, struct metrics *m,
                            char *err, size_t errlen) __attribute__((warn_unused_result));
void webhook_free(struct webhook *w);
/* Asks the database for gap_alerts now (unless a read is already under way) and posts whatever is
 * due when the answer comes (the module's timer does this every second). */
void webhook_poll(struct webhook *w);
/* Makes delivery depend on leading (leader.h); NULL: always deliver. */
struct leader;
void webhook_set_leader(struct webhook *w, const struct leader *ld);
/* POSTs still waiting for an answer, targets waiting to retry a failure, and database reads and
 * marks not yet done. */
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
