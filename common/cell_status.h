/* The seven statuses of a heatmap cell and the rule that gives one: the one definition the
 * reconciler (which stores heatmap_cells.status) and the heatmap (which aggregates and explains
 * them) share, with the configured thresholds (struct cfg, $.thresholds). */
#ifndef WL_CELL_STATUS_H
#define WL_CELL_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

enum cell_status {
    CELL_OK = 0,
    CELL_WARN,
    CELL_RED,
    CELL_OVER,
    CELL_IDLE,
    CELL_INCOMPLETE,
    CELL_NO_COUNTER,
    CELL_N_STATUS,
    CELL_NONE = -1 /* no status: no row, or an unknown name */
};

/* A window whose counters are valid for less than this fraction of it is `incomplete`. */
#define CELL_MIN_VALID_FRACTION 0.90

/* The defaults of $.thresholds (the parser and a NULL cfg use them). */
#define CELL_DEFAULT_GREEN         0.95
#define CELL_DEFAULT_RED           0.80
#define CELL_DEFAULT_OVER          1.05
#define CELL_DEFAULT_MIN_GAP_BYTES 100000000

/* "ok", "warn", "red", "over", "idle", "incomplete", "no_counter" as stored in
 * heatmap_cells.status; "?" for anything else. */
const char *cell_status_name(enum cell_status s);
/* The status named s, or CELL_NONE. */
enum cell_status cell_status_parse(const char *s);

/* The rule: incomplete when valid_fraction < CELL_MIN_VALID_FRACTION; idle when fewer than
 * min_gap_bytes payload bytes were observed or coverage is unknown; else over when coverage >
 * over, ok when >= green, warn when >= red, red below. cfg NULL: the default thresholds. */
enum cell_status cell_status_of(const struct cfg *cfg, double valid_fraction,
                                uint64_t observed_payload_bytes, bool has_coverage,
                                double coverage);

/* The thresholds in effect (cfg's, or the defaults for a NULL cfg). */
double cell_th_green(const struct cfg *cfg);
double cell_th_red(const struct cfg *cfg);
double cell_th_over(const struct cfg *cfg);
uint64_t cell_th_min_gap_bytes(const struct cfg *cfg);

#endif
