/* $.devices: each switch, its site and how it is polled (SNMP v1/v2c/v3 or gNMI). */
#include "cfg_internal.h"

#include <stdlib.h>
#include <string.h>

static void parse_snmp(struct cfg_pctx *c, const cJSON *o, const char *p, struct cfg_snmp *sn)
{
    static const char *const keys[] = {"address",
                                       "version",
                                       "community_file",
                                       "user",
                                       "auth_protocol",
                                       "auth_password_file",
                                       "priv_protocol",
                                       "priv_password_file",
                                       "security_level",
                                       "interval_seconds",
                                       "timeout_ms",
                                       "retries",
                                       NULL};
    char pp[256];
    cfg_check_keys(c, o, p, keys);
    sn->address = cfg_get_str(c, o, "address", p, 1, NULL);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
    cfg_jp_key(pp, sizeof(pp), p, "version");
    sn->version = 2;
    if (ver) {
        const char *vs = cJSON_IsString(ver) ? ver->valuestring : NULL;
        if (vs && (strcmp(vs, "1") == 0))
            sn->version = 1;
        else if (vs && (strcmp(vs, "2c") == 0 || strcmp(vs, "2") == 0))
            sn->version = 2;
        else if (vs && strcmp(vs, "3") == 0)
            sn->version = 3;
        else
            cfg_err(c, pp, "expected \"1\", \"2c\" or \"3\"");
    }
    sn->interval_seconds = (int)cfg_get_num(c, o, "interval_seconds", p, 1, 86400, 30, 1);
    sn->timeout_ms = (int)cfg_get_num(c, o, "timeout_ms", p, 10, 600000, 2000, 1);
    sn->retries = (int)cfg_get_num(c, o, "retries", p, 0, 10, 1, 1);
    if (sn->version < 3) {
        sn->community = cfg_load_secret(c, o, "community_file", p, &sn->community_file);
        if (!sn->community_file) {
            const char *env = getenv("WANLEDGER_SNMP_COMMUNITY");
            if (env && *env)
                sn->community = strdup(env);
            else
                cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "community_file"),
                        "missing: SNMP v1/v2c needs a community file (or "
                        "$WANLEDGER_SNMP_COMMUNITY)");
        }
        return;
    }
    sn->user = cfg_get_str(c, o, "user", p, 1, NULL);
    sn->security_level = cfg_get_str(c, o, "security_level", p, 0, "authPriv");
    sn->auth_protocol = cfg_get_str(c, o, "auth_protocol", p, 0, "SHA");
    sn->priv_protocol = cfg_get_str(c, o, "priv_protocol", p, 0, "AES");
    static const char *const auths[] = {"MD5",     "SHA",     "SHA-224", "SHA-256",
                                        "SHA-384", "SHA-512", NULL};
    static const char *const privs[] = {"DES", "AES", "AES-192", "AES-256", NULL};
    int ok = 0;
    for (const char *const *a = auths; *a; a++)
        ok |= strcmp(*a, sn->auth_protocol) == 0;
    if (!ok)
        cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "auth_protocol"),
                "expected one of MD5, SHA, SHA-224, SHA-256, SHA-384, SHA-512");
    ok = 0;
    for (const char *const *a = privs; *a; a++)
        ok |= strcmp(*a, sn->priv_protocol) == 0;
    if (!ok)
        cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "priv_protocol"),
                "expected one of DES, AES, AES-192, AES-256");
    int lvl = strcmp(sn->security_level, "noAuthNoPriv") == 0 ? 0
              : strcmp(sn->security_level, "authNoPriv") == 0 ? 1
              : strcmp(sn->security_level, "authPriv") == 0   ? 2
                                                              : -1;
    if (lvl < 0)
        cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "security_level"),
                "expected \"noAuthNoPriv\", \"authNoPriv\" or \"authPriv\"");
    if (lvl >= 1) {
        sn->auth_password = cfg_load_secret(c, o, "auth_password_file", p, &sn->auth_password_file);
        if (!sn->auth_password_file)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "auth_password_file"),
                    "missing: %s needs an authentication password file", sn->security_level);
        else if (sn->auth_password && strlen(sn->auth_password) < 8)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "auth_password_file"),
                    "SNMPv3 passwords must be at least 8 characters");
    }
    if (lvl == 2) {
        sn->priv_password = cfg_load_secret(c, o, "priv_password_file", p, &sn->priv_password_file);
        if (!sn->priv_password_file)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "priv_password_file"),
                    "missing: authPriv needs a privacy password file");
        else if (sn->priv_password && strlen(sn->priv_password) < 8)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "priv_password_file"),
                    "SNMPv3 passwords must be at least 8 characters");
    }
}

void cfg_parse_devices(struct cfg_pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->devices = calloc(n ? n : 1, sizeof(*cfg->devices));
    static const char *const keys[] = {"name", "site", "snmp", "gnmi", "flows", NULL};
    char p[256], pp[256];
    int i = 0;
    for (const cJSON *d = arr->child; d; d = d->next, i++) {
        cfg_jp_idx(p, sizeof(p), "$.devices", i);
        if (!cJSON_IsObject(d)) {
            cfg_err(c, p, "expected a device object, got %s", cfg_type_name(d));
            continue;
        }
        cfg_check_keys(c, d, p, keys);
        struct cfg_device *dev = &cfg->devices[cfg->n_devices];
        dev->name = cfg_get_str(c, d, "name", p, 1, NULL);
        dev->site = cfg_get_str(c, d, "site", p, 1, NULL);
        dev->site_idx = -1;
        if (!dev->name || !dev->site) {
            free(dev->name);
            free(dev->site);
            memset(dev, 0, sizeof(*dev));
            continue;
        }
        for (size_t j = 0; j < cfg->n_devices; j++)
            if (strcmp(cfg->devices[j].name, dev->name) == 0)
                cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "name"),
                        "duplicate device name \"%s\" (also $.devices[%zu])", dev->name, j);
        dev->site_idx = cfg_site_index(cfg, dev->site);
        if (dev->site_idx < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "site"),
                    "expected a site name from $.sites, got "
                    "\"%s\"",
                    dev->site);
        const cJSON *sn = cfg_get_obj(c, d, "snmp", p, 0);
        if (sn) {
            dev->has_snmp = true;
            parse_snmp(c, sn, cfg_jp_key(pp, sizeof(pp), p, "snmp"), &dev->snmp);
        }
        const cJSON *gn = cfg_get_obj(c, d, "gnmi", p, 0);
        if (gn) {
            static const char *const gkeys[] = {"source", NULL};
            cfg_jp_key(pp, sizeof(pp), p, "gnmi");
            cfg_check_keys(c, gn, pp, gkeys);
            dev->has_gnmi = true;
            dev->gnmi_source = cfg_get_str(c, gn, "source", pp, 0, dev->name);
        }
        const cJSON *fl = cfg_get_obj(c, d, "flows", p, 0);
        if (fl) {
            dev->has_flows = true;
            cfg_parse_device_flows(c, fl, cfg_jp_key(pp, sizeof(pp), p, "flows"), &dev->flows);
        }
        if (!dev->has_snmp && !dev->has_gnmi && !dev->has_flows &&
            cJSON_GetObjectItemCaseSensitive(d, "snmp") == NULL &&
            cJSON_GetObjectItemCaseSensitive(d, "gnmi") == NULL &&
            cJSON_GetObjectItemCaseSensitive(d, "flows") == NULL)
            cfg_err(c, p,
                    "expected an \"snmp\", \"gnmi\" or \"flows\" object: how is this device "
                    "polled?");
        cfg->n_devices++;
    }
}
