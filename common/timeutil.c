/* RFC 3339 and epoch time parsing/formatting and window alignment, all in int64 microseconds. */
#include "timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int tm_parse_rfc3339(const char *s, int64_t *us)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!s)
        return -1;
    const char *p = s;
    int Y, M, D, h, mi, sec;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || h > 23 || mi > 59 || sec > 60)
        return -1;
    int maxd = mdays[M - 1] + (M == 2 && is_leap(Y));
    if (D > maxd)
        return -1;
    if (sec == 60) /* leap second: POSIX time has none; clamp to :59.999999 */
        sec = 59;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p)) {
            if (nd < 6) {
                frac = frac * 10 + (*p - '0');
                nd++;
            }
            p++; /* digits beyond microseconds are truncated */
        }
        while (nd++ < 6)
            frac *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        p++;
        int oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 3600LL + om * 60LL);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    int64_t days = days_from_civil(Y, (unsigned)M, (unsigned)D);
    int64_t secs = days * 86400 + h * 3600LL + mi * 60LL + sec - off;
    *us = secs * TM_USEC_PER_SEC + frac;
    return 0;
}

/* RFC 3339's years 0000..9999: beyond them no text form exists and PostgreSQL refuses some. */
#define EPOCH_MIN_S (-62167219200.0) /* 0000-01-01T00:00:00Z */
#define EPOCH_MAX_S 253402300799.0   /* 9999-12-31T23:59:59Z */

int tm_from_epoch_double(double secs, int64_t *us)
{
    if (!isfinite(secs) || secs < EPOCH_MIN_S || secs > EPOCH_MAX_S + 1)
        return -1;
    *us = (int64_t)llround(secs * 1e6);
    return 0;
}

int tm_parse_epoch(const char *s, int64_t *us)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end != '\0' || end == s)
        return -1;
    for (const char *q = s; q < end; q++) /* plain decimal only: no hex, inf, nan, exponent */
        if (!(isdigit((unsigned char)*q) || *q == '.' || *q == '-' || *q == '+'))
            return -1;
    return tm_from_epoch_double(v, us);
}

char *tm_format_rfc3339(int64_t us, char buf[TM_RFC3339_LEN])
{
    int64_t secs = us / TM_USEC_PER_SEC;
    int64_t frac = us % TM_USEC_PER_SEC;
    if (frac < 0) {
        frac += TM_USEC_PER_SEC;
        secs -= 1;
    }
    int64_t days = secs / 86400;
    int64_t rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    int n = snprintf(buf, TM_RFC3339_LEN, "%04lld-%02u-%02uT%02d:%02d:%02d", (long long)y, m, d,
                     (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    if (frac)
        snprintf(buf + n, TM_RFC3339_LEN - n, ".%06lldZ", (long long)frac);
    else
        snprintf(buf + n, TM_RFC3339_LEN - n, "Z");
    return buf;
}

int64_t tm_window_start(int64_t us, int window_seconds)
{
    int64_t w = (int64_t)window_seconds * TM_USEC_PER_SEC;
    if (w <= 0)
        return us;
    int64_t r = us % w;
    if (r < 0)
        r += w;
    int64_t out;
    if (__builtin_sub_overflow(us, r, &out)) /* below the first whole window: saturate */
        return INT64_MIN;
    return out;
}

int tm_is_aligned(int64_t us, int window_seconds)
{
    return tm_window_start(us, window_seconds) == us;
}

int64_t tm_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * TM_USEC_PER_SEC + ts.tv_nsec / 1000;
}

int64_t tm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int tm_parse_duration(const char *s, int64_t *us)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || !isfinite(v) || v < 0)
        return -1;
    double mult;
    if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
        mult = 1e6;
    else if (strcmp(end, "ms") == 0)
        mult = 1e3;
    else if (strcmp(end, "m") == 0)
        mult = 60e6;
    else if (strcmp(end, "h") == 0)
        mult = 3600e6;
    else if (strcmp(end, "d") == 0)
        mult = 86400e6;
    else if (strcmp(end, "w") == 0)
        mult = 7 * 86400e6;
    else
        return -1;
    if (v * mult > 9.0e18) /* also keeps now - duration clear of INT64_MIN */
        return -1;
    *us = (int64_t)llround(v * mult);
    return 0;
}
