/* Parsing the reconciler's rules for this host and writing the counter report. */
#include "throttle_rules.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

int throttle_mode_parse(const cJSON *obj, enum throttle_mode *out, const char *where, char *err,
                        size_t errlen)
{
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "mode"));
    if (mode && strcmp(mode, "enforce") == 0) {
        *out = THROTTLE_ENFORCE;
    } else if (mode && strcmp(mode, "dry_run") == 0) {
        *out = THROTTLE_DRY_RUN;
    } else {
        snprintf(err, errlen, "%s.mode: expected \"enforce\" or \"dry_run\"", where);
        return -1;
    }
    return 0;
}

int throttle_selector_parse(const struct cJSON *obj, struct throttle_selector *out,
                            const char *where, char *err, size_t errlen)
{
    const cJSON *kv = cJSON_IsObject(obj) ? obj->child : NULL;
    if (!kv || kv->next) {
        snprintf(err, errlen,
                 "%s: expected one of {\"workflow\"|\"user\"|\"program\"|"
                 "\"container\": NAME}",
                 where);
        return -1;
    }
    if (throttle_sel_parse(kv->string, &out->kind) != 0) {
        snprintf(err, errlen, "%s.%s: unknown selector (workflow, user, program, container)", where,
                 kv->string);
        return -1;
    }
    if (!cJSON_IsString(kv) || !kv->valuestring[0] ||
        strlen(kv->valuestring) >= sizeof(out->value)) {
        snprintf(err, errlen, "%s.%s: expected a name of 1-%zu bytes", where, kv->string,
                 sizeof(out->value) - 1);
        return -1;
    }
    snprintf(out->value, sizeof(out->value), "%s", kv->valuestring);
    return 0;
}

static int num_field(const cJSON *o, const char *name, bool required, double min, double max,
                     double *out, const char *where, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v && !required)
        return 1;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min ||
        v->valuedouble > max || v->valuedouble != floor(v->valuedouble)) {
        snprintf(err, errlen, "%s.%s: expected an integer %.0f-%.0f", where, name, min, max);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

/* "remote_prefixes": ["10.1.0.0/16", "2001:db8::/32", ...]: the rule is scoped to them. */
static int parse_prefixes(const cJSON *a, struct throttle_rule *r, const char *where, char *err,
                          size_t errlen)
{
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > THROTTLE_MAX_PREFIXES) {
        snprintf(err, errlen, "%s.remote_prefixes: expected a list of at most %d prefixes", where,
                 THROTTLE_MAX_PREFIXES);
        return -1;
    }
    r->scoped = true;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        struct throttle_prefix *p = &r->remote[r->n_remote];
        char buf[64], *slash;
        const char *s = cJSON_GetStringValue(it);
        long len = -1;
        memset(p, 0, sizeof(*p));
        if (s && strlen(s) < sizeof(buf)) {
            snprintf(buf, sizeof(buf), "%s", s);
            slash = strchr(buf, '/');
            char *end = NULL;
            if (slash) {
                *slash = 0;
                len = strtol(slash + 1, &end, 10);
                if (!end || *end || end == slash + 1)
                    len = -1;
            }
            struct in_addr v4;
            if (inet_pton(AF_INET, buf, &v4) == 1) {
                p->addr[10] = p->addr[11] = 0xff;
                memcpy(&p->addr[12], &v4, 4);
                len = !slash ? 32 : len <= 32 ? len : -1;
                if (len >= 0)
                    len += 96;
            } else if (inet_pton(AF_INET6, buf, p->addr) == 1) {
                len = !slash ? 128 : len <= 128 ? len : -1;
            } else {
                len = -1;
            }
        }
        if (len < 0) {
            snprintf(err, errlen, "%s.remote_prefixes[%d]: expected an address/length prefix",
                     where, i);
            return -1;
        }
        p->len = (uint8_t)len;
        r->n_remote++;
        i++;
    }
    return 0;
}

static int parse_rule(const cJSON *o, int64_t now_us, struct throttle_rule *r, const char *where,
                      char *err, size_t errlen)
{
    double id, rate, host_rate, ttl;
    char w[96];
    memset(r, 0, sizeof(*r));
    if (!cJSON_IsObject(o)) {
        snprintf(err, errlen, "%s: expected an object", where);
        return -1;
    }
    if (num_field(o, "id", true, 1, 9e15, &id, where, err, errlen) != 0 ||
        num_field(o, "rate_bps", true, 1, 1e15, &rate, where, err, errlen) != 0 ||
        num_field(o, "expires_in_s", true, 0, 366.0 * 86400, &ttl, where, err, errlen) != 0)
        return -1;
    int h = num_field(o, "host_rate_bps", false, 1, 1e15, &host_rate, where, err, errlen);
    if (h < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.selector", where);
    if (throttle_selector_parse(cJSON_GetObjectItemCaseSensitive(o, "selector"), &r->sel, w, err,
                                errlen) != 0)
        return -1;
    if (throttle_mode_parse(o, &r->mode, where, err, errlen) != 0)
        return -1;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(o, "remote_prefixes");
    if (rp && parse_prefixes(rp, r, where, err, errlen) != 0)
        return -1;
    r->id = (int64_t)id;
    r->rate_bps = (uint64_t)(h == 0 ? host_rate : rate);
    r->expires_at_us = now_us + (int64_t)ttl * 1000000;
    return 0;
}

int throttle_rules_parse(const char *json, int64_t now_us, struct throttle_rules *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof(*out));
    cJSON *root = cJSON_Parse(json);
    int rc = -1;
    char where[64];
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "$: expected a JSON object");
        goto done;
    }
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(root, "allow");
    const cJSON *kill = cJSON_GetObjectItemCaseSensitive(root, "kill_switch");
    if (!cJSON_IsArray(rules) || (allow && !cJSON_IsArray(allow)) ||
        (kill && !cJSON_IsBool(kill))) {
        snprintf(err, errlen,
                 "$: expected \"rules\" (and \"allow\") lists, \"kill_switch\" true "
                 "or false");
        goto done;
    }
    out->kill_switch = cJSON_IsTrue(kill);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, rules)
    {
        snprintf(where, sizeof(where), "$.rules[%d]", i++);
        if (out->n == THROTTLE_MAX_RULES) {
            snprintf(err, errlen, "%s: more than %d rules", where, THROTTLE_MAX_RULES);
            goto done;
        }
        if (parse_rule(it, now_us, &out->rule[out->n], where, err, errlen) != 0)
            goto done;
        out->n++;
    }
    i = 0;
    cJSON_ArrayForEach(it, allow)
    {
        snprintf(where, sizeof(where), "$.allow[%d]", i++);
        if (out->n_allow == THROTTLE_MAX_ALLOW) {
            snprintf(err, errlen, "%s: more than %d entries", where, THROTTLE_MAX_ALLOW);
            goto done;
        }
        if (throttle_selector_parse(it, &out->allow[out->n_allow], where, err, errlen) != 0)
            goto done;
        out->n_allow++;
    }
    if (throttle_peers_parse(cJSON_GetObjectItemCaseSensitive(root, "peers"), now_us, &out->peers,
                             err, errlen) != 0)
        goto done;
    rc = 0;
done:
    if (rc != 0) {
        out->n = 0;
        out->n_allow = 0;
        out->peers.n = 0;
        out->peers.n_sock = 0;
    }
    cJSON_Delete(root);
    return rc;
}

char *throttle_rules_report(const char *host, const char *agent_id,
                            const struct throttle_rule_stat *st, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "rules") : NULL;
    if (!arr || !cJSON_AddStringToObject(root, "host", host) ||
        !cJSON_AddStringToObject(root, "agent_id", agent_id ? agent_id : "")) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(root);
            return NULL;
        }
        const struct throttle_counts *c = &st[i].c;
        /* integers below 2^53: exact in cJSON's double */
        cJSON_AddNumberToObject(o, "id", (double)st[i].id);
        cJSON_AddStringToObject(o, "mode", st[i].mode == THROTTLE_DRY_RUN ? "dry_run" : "enforce");
        cJSON_AddNumberToObject(o, "rate_bps", (double)st[i].rate_bps);
        cJSON_AddNumberToObject(o, "processes", (double)st[i].processes);
        cJSON_AddNumberToObject(o, "passed_bytes", (double)c->pass_bytes);
        cJSON_AddNumberToObject(o, "passed_packets", (double)c->pass_pkts);
        cJSON_AddNumberToObject(o, "marked_packets", (double)c->mark_pkts);
        cJSON_AddNumberToObject(o, "delayed_bytes", (double)c->delay_bytes);
        cJSON_AddNumberToObject(o, "delayed_packets", (double)c->delay_pkts);
        cJSON_AddNumberToObject(o, "dropped_bytes", (double)c->drop_bytes);
        cJSON_AddNumberToObject(o, "dropped_packets", (double)c->drop_pkts);
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}
