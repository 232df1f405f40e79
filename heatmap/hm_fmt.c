/* Number, volume and time formatting for the pages, the terminal view and the report. */
#include "hm_fmt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

static char *fmt_si(double v, const char *const *units, size_t n_units, char buf[HM_FMT_LEN])
{
    double a = fabs(v);
    size_t u = 0;
    while (a >= 999.5 && u + 1 < n_units) {
        a /= 1000.0;
        v /= 1000.0;
        u++;
    }
    if (u == 0 || a >= 99.95)
        snprintf(buf, HM_FMT_LEN, "%.0f %s", v, units[u]);
    else if (a >= 9.995)
        snprintf(buf, HM_FMT_LEN, "%.1f %s", v, units[u]);
    else
        snprintf(buf, HM_FMT_LEN, "%.2f %s", v, units[u]);
    return buf;
}

char *hm_fmt_bytes(int64_t bytes, char buf[HM_FMT_LEN])
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    return fmt_si((double)bytes, units, sizeof units / sizeof units[0], buf);
}

char *hm_fmt_bps(double bps, char buf[HM_FMT_LEN])
{
    static const char *const units[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
    return fmt_si(bps, units, sizeof units / sizeof units[0], buf);
}

char *hm_fmt_pct(double ratio, char buf[HM_FMT_LEN])
{
    if (isnan(ratio) || isinf(ratio))
        snprintf(buf, HM_FMT_LEN, "n/a");
    else
        snprintf(buf, HM_FMT_LEN, "%.1f %%", ratio * 100.0);
    return buf;
}

char *hm_fmt_duration(int64_t s, char buf[HM_FMT_LEN])
{
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, HM_FMT_LEN, "%" PRId64 " s", s);
    else if (s < 3600)
        snprintf(buf, HM_FMT_LEN, "%" PRId64 " min", s / 60);
    else if (s < 86400)
        snprintf(buf, HM_FMT_LEN, "%" PRId64 " h %" PRId64 " min", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, HM_FMT_LEN, "%" PRId64 " d %" PRId64 " h", s / 86400, s % 86400 / 3600);
    return buf;
}

static void utc(int64_t us, struct tm *tm)
{
    time_t t = (time_t)(us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000));
    gmtime_r(&t, tm);
}

char *hm_fmt_time(int64_t us, char buf[HM_FMT_LEN])
{
    struct tm tm;
    utc(us, &tm);
    if (tm.tm_sec)
        strftime(buf, HM_FMT_LEN, "%Y-%m-%d %H:%M:%S UTC", &tm);
    else
        strftime(buf, HM_FMT_LEN, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
}

char *hm_fmt_hhmm(int64_t us, char buf[HM_FMT_LEN])
{
    struct tm tm;
    utc(us, &tm);
    strftime(buf, HM_FMT_LEN, "%H:%M", &tm);
    return buf;
}

char *hm_fmt_rfc3339(int64_t us, char buf[HM_FMT_LEN])
{
    struct tm tm;
    utc(us, &tm);
    strftime(buf, HM_FMT_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}
