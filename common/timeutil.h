/* Time in wanledger: int64 microseconds since the Unix epoch, UTC; windows [t, t+W) with t a
 * multiple of W seconds since the epoch. */
#ifndef WL_TIMEUTIL_H
#define WL_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define TM_USEC_PER_SEC 1000000LL
#define TM_RFC3339_LEN  40 /* buffer size for tm_format_rfc3339 */

/* Parses RFC 3339 ("2026-11-29T18:53:00Z", "...00.25+01:00", lower-case t/z, space separator).
 * Returns 0 and sets *us, or -1 on any syntax or range error (leaves *us unchanged). */
int tm_parse_rfc3339(const char *s, int64_t *us) __attribute__((warn_unused_result));
/* Float epoch seconds as text ("1764442380.25"); returns 0 or -1. */
int tm_parse_epoch(const char *s, int64_t *us) __attribute__((warn_unused_result));
/* Epoch seconds given as a double (JSON number): -1 if not finite or out of range. */
int tm_from_epoch_double(double secs, int64_t *us) __attribute__((warn_unused_result));
/* Formats as "2026-11-29T18:53:00Z", or with ".ffffff" when there are sub-second parts.
 * Returns buf. */
char *tm_format_rfc3339(int64_t us, char buf[TM_RFC3339_LEN]);
/* Start of the window holding us (floor, also for times before the epoch). */
int64_t tm_window_start(int64_t us, int window_seconds);
/* 1 when us is a multiple of window_seconds seconds. */
int tm_is_aligned(int64_t us, int window_seconds);
/* Wall clock now. */
int64_t tm_now_us(void);
/* Monotonic clock in ns, for spans. */
int64_t tm_mono_ns(void);
/* Parses a duration "30d", "12h", "90m", "45s", "500ms" or a plain number of seconds into us. */
int tm_parse_duration(const char *s, int64_t *us) __attribute__((warn_unused_result));

#endif
