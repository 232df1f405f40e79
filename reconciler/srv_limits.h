/* The reconciler's hardening limits with their defaults: a configuration member of 0 means
 * "the default named here" (common/config.h, "hardening"). */
#ifndef WL_SRV_LIMITS_H
#define WL_SRV_LIMITS_H

#include <stdint.h>

#include "config.h"
#include "timeutil.h"

#define LIM_DEFAULT_PAST_DAYS        30 /* = the raw-data retention of `prune --older-than 30d` */
#define LIM_DEFAULT_TRANSFER_SECONDS (7 * 86400)
#define LIM_DEFAULT_CONNECTIONS      512
#define LIM_DEFAULT_HEADER_TIMEOUT   10
#define LIM_DEFAULT_BODY_TIMEOUT     60

#define LIM_HEADER_BYTES (64 * 1024)

/* Oldest accepted time, in µs since the epoch, at wall-clock now_us. */
static inline int64_t lim_past_us(const struct cfg *cfg, int64_t now_us)
{
    int64_t days = cfg->max_past_days > 0 ? cfg->max_past_days : LIM_DEFAULT_PAST_DAYS;
    return now_us - days * 86400 * TM_USEC_PER_SEC;
}

static inline int lim_past_days(const struct cfg *cfg)
{
    return cfg->max_past_days > 0 ? cfg->max_past_days : LIM_DEFAULT_PAST_DAYS;
}

static inline int64_t lim_transfer_seconds(const struct cfg *cfg)
{
    return cfg->max_transfer_seconds > 0 ? cfg->max_transfer_seconds : LIM_DEFAULT_TRANSFER_SECONDS;
}

/* Body bound of a role (srv_role order: agent, poller, service, reader). Readers send no body. */
static inline uint64_t lim_body_bytes(const struct cfg *cfg, int role)
{
    static const uint64_t dflt[4] = {16u << 20, 16u << 20, 64u << 20, 64u << 10};
    uint64_t v = role >= 0 && role < 4 && cfg->max_body_role[role]
                     ? cfg->max_body_role[role]
                     : (role >= 0 && role < 4 ? dflt[role] : 64u << 10);
    return v < cfg->max_body_bytes || !cfg->max_body_bytes ? v : cfg->max_body_bytes;
}

static inline int lim_connections(const struct cfg *cfg)
{
    return cfg->max_connections > 0 ? cfg->max_connections : LIM_DEFAULT_CONNECTIONS;
}

static inline int lim_header_timeout(const struct cfg *cfg)
{
    return cfg->header_timeout_seconds > 0 ? cfg->header_timeout_seconds
                                           : LIM_DEFAULT_HEADER_TIMEOUT;
}

static inline int lim_body_timeout(const struct cfg *cfg)
{
    return cfg->body_timeout_seconds > 0 ? cfg->body_timeout_seconds : LIM_DEFAULT_BODY_TIMEOUT;
}

#endif
