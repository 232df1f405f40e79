/* `wanledger`: the server-side program. Parses global options, loads and validates the
 * configuration, and dispatches to the subcommands of each component. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "hm_cmd.h"
#include "log.h"
#include "retention.h"
#include "poll_cmd.h"
#include "api_deps.h"
#include "api_nas.h"
#include "recon_cmd.h"
#include "rejects.h"
#include "throttle_cmd.h"
#include "ship.h"
#include "timeutil.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wanledger [--config FILE] [-v] SUBCOMMAND [ARGS]\n"
            "\n"
            "  check-config FILE     validate FILE; print every error (exit 2) or a summary\n"
            "  migrate               apply pending schema migrations, load sites and links\n"
            "  prune [--older-than D] drop rows past retention (config \"retention\"); D\n"
            "                        overrides the raw-input bound (30d, 12h)\n"
            "  reconcile [--once]    serve the ingest API and heatmap, reconcile every tick\n"
            "  poll [--once]         poll switch counters (SNMP, gnmic) and post them\n"
            "  ship FILE...          ship data-transfer service logs to /v1/transfers\n"
            "  heatmap               write the heatmap (svg, html, ansi)\n"
            "  report --week W       the weekly coverage review (md, html)\n"
            "  top --src A --dst B   who used a site pair\n"
            "  deps --workflow W     what a workflow talks to (--move-to SITE: the circuits)\n"
            "  nas [--server A]      which pods and workflows load each NFS server, latency\n"
            "  alerts [--open]       list gap, over and saturation alerts\n"
            "  rejects               list transfer records refused from accepted batches\n"
            "  throttle add|list|proposals|approve|revoke|kill-switch   throttle rules\n"
            "\n"
            "The configuration defaults to $WANLEDGER_CONFIG, else /etc/wanledger/config.json.\n");
}

static struct cfg *load_or_exit(const char *path)
{
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    if (!cfg) {
        cfg_errors_print(NULL, path, &errs, stderr);
        fprintf(stderr, "wanledger: %zu error(s) in %s\n", errs.n, path);
        cfg_errors_free(&errs);
        exit(2);
    }
    return cfg;
}

static int cmd_check_config(const char *path)
{
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    if (!cfg) {
        cfg_errors_print(NULL, path, &errs, stdout);
        printf("%zu error(s)\n", errs.n);
        cfg_errors_free(&errs);
        return 2;
    }
    cfg_print_summary(cfg, stdout);
    cfg_free(cfg);
    return 0;
}

static int cmd_migrate(const struct cfg *cfg)
{
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db) {
        log_error("migrate", "%s", err);
        return 1;
    }
    int applied = 0, rc = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0 ||
        db_sync_config(db, cfg, err, sizeof(err)) != 0 ||
        db_ensure_partitions(db, tm_now_us() - 86400 * TM_USEC_PER_SEC,
                             tm_now_us() + 2 * 86400 * TM_USEC_PER_SEC, err, sizeof(err)) != 0) {
        log_error("migrate", "%s", err);
        rc = 1;
    } else {
        log_info("migrate", "%d migration(s) applied, %u known; %zu sites, %zu links loaded",
                 applied, db_n_migrations, cfg->n_sites, cfg->n_links);
    }
    PQfinish(db);
    return rc;
}

static int cmd_prune(const struct cfg *cfg, int argc, char **argv)
{
    const char *older = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--older-than") == 0 && i + 1 < argc)
            older = argv[++i];
        else if (strncmp(argv[i], "--older-than=", 13) == 0)
            older = argv[i] + 13;
        else {
            fprintf(stderr, "wanledger prune: unknown argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    int64_t dur = 0;
    if (older && tm_parse_duration(older, &dur) != 0) {
        fprintf(stderr, "wanledger prune: expected --older-than DURATION (e.g. 30d, 12h)\n");
        return 2;
    }
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db) {
        log_error("prune", "%s", err);
        return 1;
    }
    int rc = 0;
    struct retention_stats st;
    if (retention_prune(db, cfg, tm_now_us(), older ? tm_now_us() - dur : 0, &st, err,
                        sizeof(err)) != 0) {
        log_error("prune", "%s", err);
        rc = 1;
    } else {
        log_info("prune", "dropped %d raw partition(s) older than %s", st.partitions_dropped,
                 older ? older : "retention.raw_days");
        for (int i = 0; i < RETENTION_TABLES; i++)
            log_info("prune", "%s: %lld row(s) past retention deleted", retention_table_name(i),
                     st.deleted[i]);
    }
    PQfinish(db);
    return rc;
}

int main(int argc, char **argv)
{
    const char *config = getenv("WANLEDGER_CONFIG");
    int verbose = 0;
    int i = 1;
    log_set_program("wanledger");
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "-c") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            config = argv[i];
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            config = argv[i] + 9;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "wanledger: unknown option \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (verbose)
        log_set_level(LOG_LVL_DEBUG);
    const char *sub = argv[i];
    int sargc = argc - i;
    char **sargv = argv + i;
    char prog[64];
    snprintf(prog, sizeof(prog), "wanledger %s", sub);
    log_set_program(prog);

    if (strcmp(sub, "check-config") == 0) {
        const char *path = sargc > 1 ? sargv[1] : config;
        if (!path) {
            fprintf(stderr, "wanledger check-config: expected FILE\n");
            return 2;
        }
        return cmd_check_config(path);
    }
    if (strcmp(sub, "help") == 0) {
        usage(stdout);
        return 0;
    }
    static const char *const known[] = {"migrate",  "prune",   "reconcile", "poll",   "ship",
                                        "heatmap",  "report",  "top",       "alerts", "deps",
                                        "throttle", "rejects", "nas",       NULL};
    int ok = 0;
    for (const char *const *k = known; *k; k++)
        ok |= strcmp(*k, sub) == 0;
    if (!ok) {
        fprintf(stderr, "wanledger: unknown subcommand \"%s\"\n", sub);
        usage(stderr);
        return 2;
    }
    if (!config)
        config = "/etc/wanledger/config.json";
    struct cfg *cfg = load_or_exit(config);
    int rc;
    if (strcmp(sub, "migrate") == 0)
        rc = cmd_migrate(cfg);
    else if (strcmp(sub, "prune") == 0)
        rc = cmd_prune(cfg, sargc, sargv);
    else if (strcmp(sub, "reconcile") == 0)
        rc = recon_cmd_reconcile(cfg, sargc, sargv);
    else if (strcmp(sub, "poll") == 0)
        rc = poll_cmd_poll(cfg, sargc, sargv);
    else if (strcmp(sub, "ship") == 0)
        rc = ship_cmd(cfg, sargc, sargv);
    else if (strcmp(sub, "heatmap") == 0)
        rc = hm_cmd_heatmap(cfg, sargc, sargv);
    else if (strcmp(sub, "report") == 0)
        rc = hm_cmd_report(cfg, sargc, sargv);
    else if (strcmp(sub, "top") == 0)
        rc = recon_cmd_top(cfg, sargc, sargv);
    else if (strcmp(sub, "throttle") == 0)
        rc = thr_cmd(cfg, sargc, sargv);
    else if (strcmp(sub, "deps") == 0)
        rc = api_deps_cmd(cfg, sargc, sargv);
    else if (strcmp(sub, "nas") == 0)
        rc = api_nas_cmd(cfg, sargc, sargv);
    else if (strcmp(sub, "rejects") == 0)
        rc = rj_cmd(cfg, sargc, sargv);
    else
        rc = recon_cmd_alerts(cfg, sargc, sargv);
    cfg_free(cfg);
    return rc;
}
