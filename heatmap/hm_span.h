/* Which windows a heatmap shows: the latest reconciled window, one chosen window, or an aggregate
 * over [from, to). Parsed the same way from page query parameters and command-line options. */
#ifndef WL_HM_SPAN_H
#define WL_HM_SPAN_H

#include <stddef.h>
#include <stdint.h>

enum hm_span_kind { HM_SPAN_LATEST, HM_SPAN_WINDOW, HM_SPAN_RANGE };

struct hm_span {
    enum hm_span_kind kind;
    int64_t window_us;      /* HM_SPAN_WINDOW */
    int64_t from_us, to_us; /* HM_SPAN_RANGE, from < to */
};

/* Any argument may be NULL or "" (absent). window and from/to exclude each other; from needs to.
 * Times are RFC 3339. On error returns -1, names the offending parameter in *param and explains
 * in err; span is then unchanged. */
int hm_span_parse(const char *window, const char *from, const char *to, struct hm_span *span,
                  const char **param, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
