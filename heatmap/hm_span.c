/* Parsing of ?window= / ?from=&to= and --window / --from --to (see hm_span.h). */
#include "hm_span.h"

#include <stdio.h>

#include "timeutil.h"

static int given(const char *s)
{
    return s && *s;
}

static int parse_time(const char *name, const char *v, int64_t *us, const char **param, char *err,
                      size_t errlen)
{
    if (tm_parse_rfc3339(v, us) == 0)
        return 0;
    *param = name;
    snprintf(err, errlen,
             "%s: expected an RFC 3339 time such as 2026-11-29T18:53:00Z, got \"%.80s\"", name, v);
    return -1;
}

int hm_span_parse(const char *window, const char *from, const char *to, struct hm_span *span,
                  const char **param, char *err, size_t errlen)
{
    struct hm_span s = {.kind = HM_SPAN_LATEST};
    if (given(window) && (given(from) || given(to))) {
        *param = "window";
        snprintf(err, errlen, "window: give either window or from and to, not both");
        return -1;
    }
    if (given(window)) {
        if (parse_time("window", window, &s.window_us, param, err, errlen) < 0)
            return -1;
        s.kind = HM_SPAN_WINDOW;
    } else if (given(from) || given(to)) {
        if (!given(from) || !given(to)) {
            *param = given(from) ? "to" : "from";
            snprintf(err, errlen, "%s: from and to go together; %s is missing", *param, *param);
            return -1;
        }
        if (parse_time("from", from, &s.from_us, param, err, errlen) < 0 ||
            parse_time("to", to, &s.to_us, param, err, errlen) < 0)
            return -1;
        if (s.to_us <= s.from_us) {
            *param = "to";
            snprintf(err, errlen, "to: must be later than from (%.40s .. %.40s)", from, to);
            return -1;
        }
        s.kind = HM_SPAN_RANGE;
    }
    *span = s;
    return 0;
}
