/* $.throttle: how saturation alerts become throttle proposals (reconciler/throttle_propose.c). */
#include "cfg_internal.h"

#include <stdlib.h>

void cfg_parse_throttle(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    struct cfg_throttle *t = &cfg->throttle;
    const char *p = "$.throttle";
    const cJSON *th = cfg_get_obj(c, root, "throttle", "$", 0);
    t->proposals = 1;
    t->floor_bps = 10e6;
    t->proposal_ttl_seconds = 3600;
    t->wrong_target_share = 0.10;
    t->wrong_target_windows = 3;
    if (!th)
        return;
    static const char *const k[] = {"proposals",
                                    "floor_bps",
                                    "proposal_ttl_seconds",
                                    "auto_enforce_workflows",
                                    "wrong_target_share",
                                    "wrong_target_windows",
                                    NULL};
    cfg_check_keys(c, th, p, k);
    t->proposals = cfg_get_bool(c, th, "proposals", p, 1);
    t->floor_bps = (uint64_t)cfg_get_num(c, th, "floor_bps", p, 1, 1e15, 10e6, 1);
    t->proposal_ttl_seconds =
        (int)cfg_get_num(c, th, "proposal_ttl_seconds", p, 60, 7 * 86400, 3600, 1);
    t->wrong_target_share = cfg_get_num(c, th, "wrong_target_share", p, 0, 1, 0.10, 0);
    t->wrong_target_windows = (int)cfg_get_num(c, th, "wrong_target_windows", p, 1, 1000, 3, 1);
    const cJSON *aw = cfg_get_arr(c, th, "auto_enforce_workflows", p, 0);
    char ap[64];
    t->auto_enforce = cfg_get_str_list(
        c, aw, cfg_jp_key(ap, sizeof(ap), p, "auto_enforce_workflows"), &t->n_auto_enforce);
}
