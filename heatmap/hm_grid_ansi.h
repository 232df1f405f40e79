/* The heatmap grid for a terminal (on-call over ssh): each cell in its status colour, with the
 * status letter, coverage and volumes, then the 24-hour strips, the legend and the open alerts.
 * Without colour the same text stands alone (letters carry the status). */
#ifndef WL_HM_GRID_ANSI_H
#define WL_HM_GRID_ANSI_H

#include <event2/buffer.h>
#include <stdbool.h>

#include "config.h"
#include "hm_grid.h"

void hm_grid_ansi(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                  bool colour);

#endif
