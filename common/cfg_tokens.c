/* $.tokens_file: the bearer tokens per role, read from their own file. */
#include "cfg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_parse_tokens(struct cfg_pctx *c)
{
    struct cfg *cfg = c->cfg;
    char *full = cfg_resolve_path(c, cfg->tokens_file);
    free(cfg->tokens_file);
    cfg->tokens_file = full;
    char *text = cfg_read_secret(full);
    if (!text) {
        cfg_err(c, "$.tokens_file", "cannot read tokens file %s: %s", full, strerror(errno));
        return;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        cfg_err(c, "$.tokens_file", "tokens file %s: expected a JSON object of role -> [tokens]",
                full);
        cJSON_Delete(j);
        return;
    }
    struct cfg_pctx tc = *c; /* errors inside the tokens file name the file and its own paths */
    static const char *const roles[] = {"agent", "poller", "service", "reader", "operator", NULL};
    char base[512];
    snprintf(base, sizeof(base), "%s: $", full);
    cfg_check_keys(&tc, j, base, roles);
    char p[600], pk[600];
    size_t *ns[] = {&cfg->tokens.n_agent, &cfg->tokens.n_poller, &cfg->tokens.n_service,
                    &cfg->tokens.n_reader, &cfg->tokens.n_operator};
    char ***ls[] = {&cfg->tokens.agent, &cfg->tokens.poller, &cfg->tokens.service,
                    &cfg->tokens.reader, &cfg->tokens.operator};
    for (int r = 0; roles[r]; r++) {
        const cJSON *a = cfg_get_arr(&tc, j, roles[r], base, 0);
        *ls[r] = cfg_get_str_list(&tc, a, cfg_jp_key(p, sizeof(p), base, roles[r]), ns[r]);
        for (size_t k = 0; k < *ns[r]; k++)
            if (strlen((*ls[r])[k]) < 16)
                cfg_err(
                    &tc,
                    cfg_jp_idx(pk, sizeof(pk), cfg_jp_key(p, sizeof(p), base, roles[r]), (int)k),
                    "tokens must be at least 16 characters");
    }
    cJSON_Delete(j);
}
