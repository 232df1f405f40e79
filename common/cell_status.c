/* The cell statuses and their rule (see cell_status.h). */
#include "cell_status.h"

#include <string.h>

static const char *const names[CELL_N_STATUS] = {
    [CELL_OK] = "ok",
    [CELL_WARN] = "warn",
    [CELL_RED] = "red",
    [CELL_OVER] = "over",
    [CELL_IDLE] = "idle",
    [CELL_INCOMPLETE] = "incomplete",
    [CELL_NO_COUNTER] = "no_counter",
};

const char *cell_status_name(enum cell_status s)
{
    if ((unsigned)s >= CELL_N_STATUS)
        return "?";
    return names[s];
}

enum cell_status cell_status_parse(const char *s)
{
    for (int i = 0; s && i < CELL_N_STATUS; i++)
        if (strcmp(s, names[i]) == 0)
            return (enum cell_status)i;
    return CELL_NONE;
}

double cell_th_green(const struct cfg *cfg)
{
    return cfg ? cfg->green : CELL_DEFAULT_GREEN;
}

double cell_th_red(const struct cfg *cfg)
{
    return cfg ? cfg->red : CELL_DEFAULT_RED;
}

double cell_th_over(const struct cfg *cfg)
{
    return cfg ? cfg->over : CELL_DEFAULT_OVER;
}

uint64_t cell_th_min_gap_bytes(const struct cfg *cfg)
{
    return cfg ? cfg->min_gap_bytes : CELL_DEFAULT_MIN_GAP_BYTES;
}

enum cell_status cell_status_of(const struct cfg *cfg, double valid_fraction,
                                uint64_t observed_payload_bytes, bool has_coverage, double coverage)
{
    if (valid_fraction < CELL_MIN_VALID_FRACTION)
        return CELL_INCOMPLETE;
    if (observed_payload_bytes < cell_th_min_gap_bytes(cfg) || !has_coverage)
        return CELL_IDLE;
    if (coverage > cell_th_over(cfg))
        return CELL_OVER;
    if (coverage >= cell_th_green(cfg))
        return CELL_OK;
    if (coverage >= cell_th_red(cfg))
        return CELL_WARN;
    return CELL_RED;
}
