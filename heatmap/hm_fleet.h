/* The heatmap page at fleet size (hundreds of sites): instead of the site x site matrix, a matrix
 * of site groups (the name's prefix) and a list of the pairs that have a circuit or rows in the
 * span, worst first, filtered by site name and group, with a bounded number of rows. */
#ifndef WL_HM_FLEET_H
#define WL_HM_FLEET_H

#include <event2/buffer.h>
#include <stddef.h>

#include "config.h"
#include "hm_grid.h"

/* More sites than this: the page shows groups and a pair list, not the matrix. */
#define HM_FLEET_MATRIX_MAX_SITES 40
#define HM_FLEET_MAX_GROUPS       40  /* groups drawn in the group matrix */
#define HM_FLEET_MAX_ROWS         200 /* pair rows listed; the rest counted */

struct hm_fleet_opts {
    const char *site;  /* only pairs with a site whose name contains this; NULL/"": all */
    const char *group; /* only pairs with a site in this group; NULL/"": all */
    int group_chars;   /* group = the first N characters of the name; 0: up to the first '-',
                          '_' or '.' (the whole name without one, unless longer than 3: then the
                          name without its last 2 characters, "s123" -> "s1") */
};

/* The group of a site under opts' rule, written to buf. */
const char *hm_fleet_group(const char *site, int group_chars, char *buf, size_t len);

/* Whether the page should use the fleet view: more sites than HM_FLEET_MATRIX_MAX_SITES, or a
 * filter asked for. */
int hm_fleet_wanted(const struct hm_grid *g, const struct hm_fleet_opts *o);

/* The group matrix and the pair list (an HTML fragment); base as hm_heatmap_html's. */
void hm_fleet_html(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                   const char *base, const struct hm_fleet_opts *o);

#endif
