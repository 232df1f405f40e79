/* `wanledger throttle ...` (see throttle_cmd.h). */
#include "throttle_cmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "httpc.h"

#define TIMEOUT_MS 10000

static void usage(FILE *f)
{
    fprintf(f, "usage: wanledger throttle add (--workflow W|--user U|--program P|--container C)\n"
               "                              --rate 40Mbit --ttl 10m --reason TEXT [--dry-run]\n"
               "                              [--site S] [--host H]... [--canary H] [--total]\n"
               "                              [--by NAME]\n"
               "       wanledger throttle list [--all] [--json]\n"
               "       wanledger throttle proposals [--json]\n"
               "       wanledger throttle approve ID [--by NAME]\n"
               "       wanledger throttle revoke ID [--by NAME]\n"
               "       wanledger throttle widen ID [--by NAME]   (a canary rule to every host)\n"
               "       wanledger throttle kill-switch on|off [--by NAME]\n");
}

int thr_parse_rate(const char *s, uint64_t *bps)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v <= 0)
        return -1;
    double mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1e3, end++;
    else if (*end == 'M')
        mul = 1e6, end++;
    else if (*end == 'G')
        mul = 1e9, end++;
    else if (*end == 'T')
        mul = 1e12, end++;
    if (*end && strcasecmp(end, "bit") != 0 && strcasecmp(end, "bps") != 0 &&
        strcasecmp(end, "bit/s") != 0)
        return -1;
    double r = floor(v * mul);
    if (r < 1 || r > 1e15)
        return -1;
    *bps = (uint64_t)r;
    return 0;
}

int thr_parse_ttl(const char *s, uint64_t *secs)
{
    char *end;
    errno = 0;
    if (!s[0] || s[0] == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0)
        return -1;
    uint64_t mul = 1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    else if (*end == 'd')
        mul = 86400, end++;
    if (*end || v > 7ULL * 86400 / mul)
        return -1;
    *secs = v * mul;
    return 0;
}

struct ctx {
    char base[512];
    const char *token;
};

/* Sends and prints the error of a refused request; returns the parsed body or NULL. */
static cJSON *call(const struct ctx *c, const char *method, const char *path, const char *body,
                   int want)
{
    char url[1200], err[512];
    struct httpc_response resp = {0};
    snprintf(url, sizeof(url), "%s%s", c->base, path);
    int r = strcmp(method, "GET") == 0
                ? httpc_get(url, c->token, TIMEOUT_MS, &resp, err, sizeof(err))
                : httpc_post(url, c->token, body ? body : "{}", body ? strlen(body) : 2, TIMEOUT_MS,
                             &resp, err, sizeof(err));
    if (r != 0) {
        fprintf(stderr, "wanledger throttle: %s %s: %s\n", method, url, err);
        httpc_response_free(&resp);
        return NULL;
    }
    cJSON *j = resp.body ? cJSON_Parse(resp.body) : NULL;
    if (resp.status != want) {
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "error"));
        const char *where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "path"));
        fprintf(stderr, "wanledger throttle: %s %s: HTTP %d: %s%s%s\n", method, path, resp.status,
                msg ? msg : (resp.body ? resp.body : ""), where && where[0] ? " at " : "",
                where && where[0] ? where : "");
        cJSON_Delete(j);
        j = NULL;
    }
    httpc_response_free(&resp);
    return j;
}

static const char *by_default(void)
{
    const char *u = getenv("SUDO_USER");
    if (!u || !u[0])
        u = getenv("USER");
    return u && u[0] ? u : "operator";
}

static int cmd_add(const struct ctx *c, int argc, char **argv)
{
    const char *kind = NULL, *value = NULL, *rate = NULL, *ttl = NULL, *reason = NULL;
    const char *site = NULL, *canary = NULL, *by = by_default();
    const char *hosts[64];
    int n_hosts = 0;
    bool dry = false, total = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--workflow") || !strcmp(a, "--user") || !strcmp(a, "--program") ||
            !strcmp(a, "--container")) {
            if (!v || kind) {
                fprintf(stderr, "wanledger throttle add: %s: expected one selector NAME\n", a);
                return 2;
            }
            kind = a + 2;
            value = v;
            i++;
        } else if (!strcmp(a, "--rate") && v) {
            rate = argv[++i];
        } else if (!strcmp(a, "--ttl") && v) {
            ttl = argv[++i];
        } else if (!strcmp(a, "--reason") && v) {
            reason = argv[++i];
        } else if (!strcmp(a, "--site") && v) {
            site = argv[++i];
        } else if (!strcmp(a, "--host") && v && n_hosts < 64) {
            hosts[n_hosts++] = argv[++i];
        } else if (!strcmp(a, "--by") && v) {
            by = argv[++i];
        } else if (!strcmp(a, "--canary") && v) {
            canary = argv[++i];
        } else if (!strcmp(a, "--dry-run")) {
            dry = true;
        } else if (!strcmp(a, "--total")) {
            total = true;
        } else {
            fprintf(stderr, "wanledger throttle add: unknown or incomplete option \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    uint64_t bps, secs;
    if (!kind) {
        fprintf(stderr, "wanledger throttle add: expected --workflow, --user, --program or "
                        "--container\n");
        return 2;
    }
    if (!rate || thr_parse_rate(rate, &bps) != 0) {
        fprintf(stderr,
                "wanledger throttle add: --rate: expected a rate such as 40Mbit, got "
                "\"%s\"\n",
                rate ? rate : "");
        return 2;
    }
    if (!ttl || thr_parse_ttl(ttl, &secs) != 0) {
        fprintf(stderr,
                "wanledger throttle add: --ttl: expected a duration up to 7d such as "
                "10m, got \"%s\"\n",
                ttl ? ttl : "");
        return 2;
    }
    if (!reason || !reason[0]) {
        fprintf(stderr, "wanledger throttle add: --reason: every rule needs a reason\n");
        return 2;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *s = cJSON_AddObjectToObject(o, "selector");
    cJSON_AddStringToObject(s, kind, value);
    cJSON_AddNumberToObject(o, "rate_bps", (double)bps);
    cJSON_AddNumberToObject(o, "ttl_seconds", (double)secs);
    cJSON_AddStringToObject(o, "mode", dry ? "dry_run" : "enforce");
    cJSON_AddStringToObject(o, "reason", reason);
    cJSON_AddStringToObject(o, "created_by", by);
    if (total)
        cJSON_AddStringToObject(o, "rate_scope", "total");
    if (canary)
        cJSON_AddStringToObject(o, "canary_host", canary);
    if (site || n_hosts) {
        cJSON *sc = cJSON_AddObjectToObject(o, "scope");
        if (site)
            cJSON_AddStringToObject(sc, "site", site);
        if (n_hosts)
            cJSON_AddItemToObject(sc, "hosts", cJSON_CreateStringArray(hosts, n_hosts));
    }
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON *r = body ? call(c, "POST", "/v1/throttles", body, 201) : NULL;
    free(body);
    if (!r)
        return 1;
    printf("%.0f %s until %s\n", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "id")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "mode")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "expires_at")));
    cJSON_Delete(r);
    return 0;
}

static double nv(const cJSON *o, const char *k)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static const char *sv(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static int cmd_list(const struct ctx *c, int argc, char **argv, bool proposals)
{
    bool json = false, all = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--all") && !proposals) {
            all = true;
        } else {
            fprintf(stderr, "wanledger throttle %s: unknown option \"%s\"\n", argv[0], argv[i]);
            return 2;
        }
    }
    cJSON *r = call(c, "GET",
                    proposals ? "/v1/throttles?proposals=1"
                    : all     ? "/v1/throttles?all=1"
                              : "/v1/throttles",
                    NULL, 200);
    if (!r)
        return 1;
    if (json) {
        char *s = cJSON_PrintUnformatted(r);
        printf("%s\n", s ? s : "");
        free(s);
        cJSON_Delete(r);
        return 0;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "rules"))
    {
        const cJSON *sel = cJSON_GetObjectItemCaseSensitive(e, "selector");
        const char *k = sel && sel->child ? sel->child->string : "?";
        const char *v = sel && sel->child ? cJSON_GetStringValue(sel->child) : "?";
        printf("%.0f %s=%s %.0fbit/s %s %s %s %s until %s hosts=%.0f passed=%.0f "
               "delayed=%.0f dropped=%.0f by=%s reason=%s\n",
               nv(e, "id"), k, v ? v : "?", nv(e, "rate_bps"), sv(e, "rate_scope"), sv(e, "mode"),
               sv(e, "status"), sv(e, "state"), sv(e, "expires_at"), nv(e, "hosts"),
               nv(e, "passed_bytes"), nv(e, "delayed_bytes"), nv(e, "dropped_bytes"),
               sv(e, "created_by"), sv(e, "reason"));
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "kill_switch")))
        fprintf(stderr, "wanledger throttle: the kill switch is on: agents apply no rule\n");
    cJSON_Delete(r);
    return 0;
}

static int cmd_change(const struct ctx *c, int argc, char **argv)
{
    const char *by = by_default();
    const char *id = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--by") && i + 1 < argc)
            by = argv[++i];
        else if (!id && argv[i][0] && strspn(argv[i], "0123456789") == strlen(argv[i]))
            id = argv[i];
        else {
            fprintf(stderr, "wanledger throttle %s: expected ID [--by NAME], got \"%s\"\n", argv[0],
                    argv[i]);
            return 2;
        }
    }
    if (!id) {
        fprintf(stderr, "wanledger throttle %s: expected a rule ID\n", argv[0]);
        return 2;
    }
    char path[256];
    char esc[128];
    size_t n = 0;
    for (const char *p = by; *p && n + 4 < sizeof(esc); p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.')
            esc[n++] = *p;
    esc[n] = 0;
    snprintf(path, sizeof(path), "/v1/throttles/%s/%s?by=%s", id, argv[0], esc);
    cJSON *r = call(c, "POST", path, "{}", 200);
    if (!r)
        return 1;
    printf("%s %s\n", id, sv(r, "state"));
    cJSON_Delete(r);
    return 0;
}

static int cmd_kill(const struct ctx *c, int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
        fprintf(stderr, "wanledger throttle kill-switch: expected on or off\n");
        return 2;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "on", strcmp(argv[1], "on") == 0);
    cJSON_AddStringToObject(o, "by", argc > 3 && !strcmp(argv[2], "--by") ? argv[3] : by_default());
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON *r = body ? call(c, "POST", "/v1/throttles/kill_switch", body, 200) : NULL;
    free(body);
    if (!r)
        return 1;
    printf("kill switch %s\n", argv[1]);
    cJSON_Delete(r);
    return 0;
}

int thr_cmd(const struct cfg *cfg, int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    struct ctx c;
    if (cfg->tokens.n_operator == 0) {
        fprintf(stderr,
                "wanledger throttle: no operator token in %s (add \"operator\": "
                "[TOKEN])\n",
                cfg->tokens_file ? cfg->tokens_file : "the tokens file");
        return 2;
    }
    c.token = cfg->tokens.operator[0];
    const char *u = cfg->reconciler_url ? cfg->reconciler_url : "http://127.0.0.1:7070";
    size_t n = strlen(u);
    while (n && u[n - 1] == '/')
        n--;
    snprintf(c.base, sizeof(c.base), "%.*s", (int)n, u);
    const char *sub = argv[1];
    if (!strcmp(sub, "add"))
        return cmd_add(&c, argc - 1, argv + 1);
    if (!strcmp(sub, "list"))
        return cmd_list(&c, argc - 1, argv + 1, false);
    if (!strcmp(sub, "proposals"))
        return cmd_list(&c, argc - 1, argv + 1, true);
    if (!strcmp(sub, "approve") || !strcmp(sub, "revoke") || !strcmp(sub, "widen"))
        return cmd_change(&c, argc - 1, argv + 1);
    if (!strcmp(sub, "kill-switch"))
        return cmd_kill(&c, argc - 1, argv + 1);
    fprintf(stderr, "wanledger throttle: unknown command \"%s\"\n", sub);
    usage(stderr);
    return 2;
}
