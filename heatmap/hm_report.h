/* The weekly coverage review (`wanledger report --week 2026-W48`): per pair observed, attributed,
 * coverage and its change from the previous week, hours red and incomplete, alerts and how long
 * they stayed open; the largest unexplained gaps; the largest workflows; over-attribution
 * anomalies; coverage by day. Markdown for a review document, HTML (with an SVG chart) to read. */
#ifndef WL_HM_REPORT_H
#define WL_HM_REPORT_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "config.h"

enum hm_report_format { HM_REPORT_MD, HM_REPORT_HTML };

/* "2026-W48" -> Monday 00:00 UTC of that ISO week, in us. 0 or -1 (bad syntax, week 0, or a
 * week 53 the year does not have). */
int hm_report_parse_week(const char *s, int64_t *week_us) __attribute__((warn_unused_result));
/* "2026-W48" of the ISO week holding us. */
void hm_report_week_label(int64_t us, char buf[16]);

/* Renders the report of the week starting at week_us. 0 or -1 with err (database error). */
int hm_report_render(struct evbuffer *out, PGconn *db, const struct cfg *cfg, int64_t week_us,
                     enum hm_report_format fmt, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
