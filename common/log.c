/* Levelled logging to stderr: "2026-11-29T18:53:00.123Z wanledger reconcile INFO [ctx] msg". */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum log_level g_level = LOG_LVL_INFO;
static char g_program[64] = "wanledger";

void log_set_level(enum log_level lvl)
{
    g_level = lvl;
}

enum log_level log_get_level(void)
{
    return g_level;
}

void log_set_program(const char *name)
{
    snprintf(g_program, sizeof(g_program), "%s", name);
}

void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
{
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    if (lvl > g_level)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    char line[4096];
    int n = snprintf(line, sizeof(line), "%s.%03ldZ %s %s ", ts, (long)(tv.tv_usec / 1000),
                     g_program, names[lvl]);
    if (ctx && *ctx && n >= 0 && (size_t)n < sizeof(line))
        n += snprintf(line + n, sizeof(line) - n, "[%s] ", ctx);
    if (n >= 0 && (size_t)n < sizeof(line)) {
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* messages quote values clients sent: a newline or escape sequence in them must not
         * start a forged line or drive the terminal, so control characters are written \xNN */
        size_t o = (size_t)n;
        for (const unsigned char *p = (const unsigned char *)msg; *p && o + 5 < sizeof(line); p++) {
            if (*p < 0x20 || *p == 0x7f)
                o += (size_t)snprintf(line + o, sizeof(line) - o, "\\x%02x", *p);
            else
                line[o++] = (char)*p;
        }
        line[o] = 0;
    }
    /* one write per line so concurrent processes do not interleave mid-line */
    fprintf(stderr, "%s\n", line);
}
