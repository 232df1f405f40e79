/* The "retention" section: how long each kind of table keeps its rows (common/retention.h). */
#include "cfg_internal.h"

void cfg_parse_retention(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *re = cfg_get_obj(c, root, "retention", "$", 0);
    static const char *const k[] = {"raw_days", "results_days", "alerts_days", "gaps_days", NULL};
    if (re)
        cfg_check_keys(c, re, "$.retention", k);
    cfg->retention_raw_days = (int)cfg_get_num(c, re, "raw_days", "$.retention", 1, 36500, 30, 1);
    cfg->retention_results_days =
        (int)cfg_get_num(c, re, "results_days", "$.retention", 1, 36500, 400, 1);
    cfg->retention_alerts_days =
        (int)cfg_get_num(c, re, "alerts_days", "$.retention", 1, 36500, 400, 1);
    cfg->retention_gaps_days =
        (int)cfg_get_num(c, re, "gaps_days", "$.retention", 1, 36500, 400, 1);
}
