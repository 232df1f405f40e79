/* $.server (connections, deadlines, TLS) and the hardening members of $.limits (time bounds,
 * transfer span, body bound per role): read here, used by reconciler/srv_limits.h and gate.c. */
#include "cfg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ROLE_KEYS[3] = {"max_body_agent", "max_body_poller", "max_body_service"};

void cfg_parse_limits_hardening(struct cfg_pctx *c, const cJSON *li)
{
    struct cfg *cfg = c->cfg;
    static const uint64_t dflt[3] = {16u << 20, 16u << 20, 64u << 20};
    cfg->max_past_days = 0; /* unset: the raw-data retention (cfg_parse_root, after $.retention) */
    cfg->max_transfer_seconds = 7 * 86400;
    for (int r = 0; r < 3; r++)
        cfg->max_body_role[r] = dflt[r];
    cfg->max_body_role[3] = 64u << 10;
    if (!li)
        return;
    if (cJSON_GetObjectItemCaseSensitive(li, "max_past_days"))
        cfg->max_past_days = (int)cfg_get_num(c, li, "max_past_days", "$.limits", 1, 36500, 30, 1);
    cfg->max_transfer_seconds =
        (int)cfg_get_num(c, li, "max_transfer_seconds", "$.limits", 1, 366 * 86400, 7 * 86400, 1);
    for (int r = 0; r < 3; r++)
        cfg->max_body_role[r] = (uint64_t)cfg_get_num(c, li, ROLE_KEYS[r], "$.limits", 1024,
                                                      4294967296.0, (double)dflt[r], 1);
}

void cfg_parse_server(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *sv = cfg_get_obj(c, root, "server", "$", 0);
    cfg->max_connections = 512;
    cfg->header_timeout_seconds = 10;
    cfg->body_timeout_seconds = 60;
    if (sv) {
        static const char *const k[] = {"max_connections",
                                        "header_timeout_seconds",
                                        "body_timeout_seconds",
                                        "allow_plain_http",
                                        "tls",
                                        NULL};
        cfg_check_keys(c, sv, "$.server", k);
        cfg->max_connections =
            (int)cfg_get_num(c, sv, "max_connections", "$.server", 1, 1000000, 512, 1);
        cfg->header_timeout_seconds =
            (int)cfg_get_num(c, sv, "header_timeout_seconds", "$.server", 1, 3600, 10, 1);
        cfg->body_timeout_seconds =
            (int)cfg_get_num(c, sv, "body_timeout_seconds", "$.server", 1, 86400, 60, 1);
        cfg->allow_plain_http = cfg_get_bool(c, sv, "allow_plain_http", "$.server", 0);
        const cJSON *tls = cfg_get_obj(c, sv, "tls", "$.server", 0);
        if (tls) {
            static const char *const tk[] = {"cert_file", "key_file", "client_ca_file", NULL};
            cfg_check_keys(c, tls, "$.server.tls", tk);
            char *cert = cfg_get_str(c, tls, "cert_file", "$.server.tls", 1, NULL);
            char *key = cfg_get_str(c, tls, "key_file", "$.server.tls", 1, NULL);
            char *ca = cfg_get_str(c, tls, "client_ca_file", "$.server.tls", 0, NULL);
            cfg->tls_cert = cfg_resolve_path(c, cert);
            cfg->tls_key = cfg_resolve_path(c, key);
            cfg->tls_client_ca = cfg_resolve_path(c, ca);
            free(cert);
            free(key);
            free(ca);
        }
    }
}

void cfg_dump_server(const struct cfg *cfg, cJSON *root, cJSON *limits)
{
    cJSON_AddNumberToObject(limits, "max_past_days", cfg->max_past_days);
    cJSON_AddNumberToObject(limits, "max_transfer_seconds", cfg->max_transfer_seconds);
    for (int r = 0; r < 3; r++)
        cJSON_AddNumberToObject(limits, ROLE_KEYS[r], (double)cfg->max_body_role[r]);
    cJSON *sv = cJSON_AddObjectToObject(root, "server");
    cJSON_AddNumberToObject(sv, "max_connections", cfg->max_connections);
    cJSON_AddNumberToObject(sv, "header_timeout_seconds", cfg->header_timeout_seconds);
    cJSON_AddNumberToObject(sv, "body_timeout_seconds", cfg->body_timeout_seconds);
    cJSON_AddBoolToObject(sv, "allow_plain_http", cfg->allow_plain_http);
    if (cfg->tls_cert) {
        cJSON *t = cJSON_AddObjectToObject(sv, "tls");
        cJSON_AddStringToObject(t, "cert_file", cfg->tls_cert);
        if (cfg->tls_key)
            cJSON_AddStringToObject(t, "key_file", cfg->tls_key);
        if (cfg->tls_client_ca)
            cJSON_AddStringToObject(t, "client_ca_file", cfg->tls_client_ca);
    }
}

void cfg_free_server(struct cfg *cfg)
{
    free(cfg->tls_cert);
    free(cfg->tls_key);
    free(cfg->tls_client_ca);
}
