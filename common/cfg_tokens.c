/* $.tokens_file: the bearer tokens per role, read from their own file. */
#include "cfg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok_ref {
    const char *tok;
    int role;
    size_t idx;
};

static int cmp_tok(const void *a, const void *b)
{
    const struct tok_ref *x = a, *y = b;
    int d = strcmp(x->tok, y->tok);
    return d ? d : x->role - y->role;
}

/* One token under two roles would give its holder whichever role the server checks first: refuse
 * it (sorted, so 100k tokens cost n log n; the token itself is never printed). */
static void refuse_shared_tokens(struct cfg_pctx *c, const char *base)
{
    static const char *const roles[] = {"agent", "poller", "service", "reader"};
    const struct cfg_tokens *t = &c->cfg->tokens;
    char **ls[4] = {t->agent, t->poller, t->service, t->reader};
    size_t ns[4] = {t->n_agent, t->n_poller, t->n_service, t->n_reader};
    size_t n = ns[0] + ns[1] + ns[2] + ns[3], k = 0;
    struct tok_ref *refs = calloc(n ? n : 1, sizeof(*refs));
    if (!refs)
        return;
    for (int r = 0; r < 4; r++)
        for (size_t i = 0; i < ns[r]; i++)
            refs[k++] = (struct tok_ref){ls[r][i], r, i};
    qsort(refs, n, sizeof(*refs), cmp_tok);
    char p[600], pk[600];
    for (size_t i = 1; i < n; i++)
        if (strcmp(refs[i].tok, refs[i - 1].tok) == 0 && refs[i].role != refs[i - 1].role)
            cfg_err(c,
                    cfg_jp_idx(p, sizeof(p), cfg_jp_key(pk, sizeof(pk), base, roles[refs[i].role]),
                               (int)refs[i].idx),
                    "the same token is also listed under %s[%zu]: one token, one role",
                    roles[refs[i - 1].role], refs[i - 1].idx);
    free(refs);
}

/* "agent_hosts": {"HOST": [tokens]}: agent tokens bound to one host each (the throttle API
 * gives them that host's rules only), appended to the agent tokens. */
static void parse_agent_hosts(struct cfg_pctx *c, const cJSON *j, const char *base)
{
    struct cfg_tokens *t = &c->cfg->tokens;
    const cJSON *ah = cfg_get_obj(c, j, "agent_hosts", base, 0);
    const cJSON *h;
    char p[600], pk[600];
    cJSON_ArrayForEach(h, ah)
    {
        cfg_jp_key(p, sizeof(p), base, "agent_hosts");
        cfg_jp_key(pk, sizeof(pk), p, h->string);
        size_t n = 0;
        char **toks = cfg_get_str_list(c, h, pk, &n);
        if (!h->string[0] || !cJSON_IsArray(h)) {
            cfg_err(c, pk, "expected a host name and a list of its tokens");
            n = 0;
        }
        char **a = n ? realloc(t->agent, (t->n_agent + n) * sizeof(*a)) : t->agent;
        char **hs = n ? realloc(t->agent_host, (t->n_agent + n) * sizeof(*hs)) : t->agent_host;
        if (a)
            t->agent = a;
        if (hs) {
            /* entries for the unbound tokens before these */
            if (!t->agent_host)
                memset(hs, 0, t->n_agent * sizeof(*hs));
            t->agent_host = hs;
        }
        for (size_t k = 0; k < n && a && hs; k++) {
            if (strlen(toks[k]) < 16)
                cfg_err(c, cfg_jp_idx(p, sizeof(p), pk, (int)k),
                        "tokens must be at least 16 characters");
            a[t->n_agent] = toks[k];
            hs[t->n_agent++] = strdup(h->string);
            toks[k] = NULL;
        }
        for (size_t k = 0; k < n; k++)
            free(toks[k]);
        free(toks);
    }
}

void cfg_parse_tokens(struct cfg_pctx *c)
{
    struct cfg *cfg = c->cfg;
    char *full = cfg_resolve_path(c, cfg->tokens_file);
    free(cfg->tokens_file);
    cfg->tokens_file = full;
    char why[300];
    char *text = cfg_read_file(full, CFG_SECRET_MAX_BYTES, 1, why, sizeof(why));
    if (!text) {
        cfg_err(c, "$.tokens_file", "cannot read tokens file %s: %s", full, why);
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
    static const char *const keys[] = {"agent",    "poller",      "service", "reader",
                                       "operator", "agent_hosts", NULL};
    char base[512];
    snprintf(base, sizeof(base), "%s: $", full);
    cfg_check_keys(&tc, j, base, keys);
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
    parse_agent_hosts(&tc, j, base);
    cJSON_Delete(j);
    refuse_shared_tokens(&tc, base);
}
