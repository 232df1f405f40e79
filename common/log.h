/* Levelled logging to stderr with a context prefix (device/interface, host+seq, request id). */
#ifndef WL_LOG_H
#define WL_LOG_H

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN = 1, LOG_LVL_INFO = 2, LOG_LVL_DEBUG = 3 };

/* Programs set this once from -v; libraries never do. Default LOG_LVL_INFO. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* "wanledger reconcile" or "wanledger-agent": printed at the start of every line. */
void log_set_program(const char *name);

/* ctx may be NULL; it is printed in brackets, e.g. "[nyc-border-1 et-0/0/1]". */
void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(ctx, ...) log_msg(LOG_LVL_ERROR, ctx, __VA_ARGS__)
#define log_warn(ctx, ...)  log_msg(LOG_LVL_WARN, ctx, __VA_ARGS__)
#define log_info(ctx, ...)  log_msg(LOG_LVL_INFO, ctx, __VA_ARGS__)
#define log_debug(ctx, ...) log_msg(LOG_LVL_DEBUG, ctx, __VA_ARGS__)

#endif
