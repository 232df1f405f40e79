/* Database helpers: connect, migrate (embedded sql/NNN_*.sql), daily partitions of the raw tables,
 * prune, and the sites/links tables from the configuration. */
#include "db.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

PGconn *db_connect_str(const char *conninfo, char *err, size_t errlen)
{
    return pgc_connect(conninfo, NULL, err, errlen);
}

PGconn *db_connect(const struct cfg *cfg, char *err, size_t errlen)
{
    if (!cfg->database_password_file)
        return db_connect_str(cfg->database, err, errlen);
    char *pw = cfg_read_secret(cfg->database_password_file);
    if (!pw) {
        snprintf(err, errlen, "cannot read database password file %s", cfg->database_password_file);
        return NULL;
    }
    /* conninfo strings take single-quoted values with \\ and \' escaped */
    size_t n = strlen(cfg->database) + 2 * strlen(pw) + 32;
    char *ci = malloc(n);
    size_t o = (size_t)snprintf(ci, n, "%s password='", cfg->database);
    for (const char *p = pw; *p; p++) {
        if (*p == '\\' || *p == '\'')
            ci[o++] = '\\';
        ci[o++] = *p;
    }
    ci[o++] = '\'';
    ci[o] = '\0';
    char shown[1024]; /* never the password in logs */
    snprintf(shown, sizeof(shown), "%s, password from %s", cfg->database,
             cfg->database_password_file);
    PGconn *db = pgc_connect(ci, shown, err, errlen);
    memset(pw, 0, strlen(pw));
    free(pw);
    free(ci);
    return db;
}

int db_migrate(PGconn *db, int *applied, char *err, size_t errlen)
{
    *applied = 0;
    /* a session-level advisory lock serialises concurrent migrate runs */
    if (pgc_exec(db, "SELECT pg_advisory_lock(hashtext('wanledger.migrate'))", err, errlen) != 0)
        return -1;
    int rc = -1;
    if (pgc_exec(db,
                 "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, "
                 "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                 err, errlen) != 0)
        goto cleanup;
    for (unsigned i = 0; i < db_n_migrations; i++) {
        const struct db_migration *m = &db_migrations[i];
        int version = atoi(m->name);
        char vs[16];
        snprintf(vs, sizeof(vs), "%d", version);
        const char *params[2] = {vs, m->name};
        PGresult *r = PQexecParams(db, "SELECT 1 FROM schema_migrations WHERE version = $1", 1,
                                   NULL, params, NULL, NULL, 0);
        int done = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
        int bad = PQresultStatus(r) != PGRES_TUPLES_OK;
        if (bad)
            snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        if (bad)
            goto cleanup;
        if (done)
            continue;
        if (pgc_exec(db, "BEGIN", err, errlen) != 0)
            goto cleanup;
        char e2[1024];
        if (pgc_exec(db, m->sql, e2, sizeof(e2)) != 0) {
            snprintf(err, errlen, "migration %s failed: %s", m->name, e2);
            pgc_exec(db, "ROLLBACK", e2, sizeof(e2));
            goto cleanup;
        }
        r = PQexecParams(db, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
                         NULL, params, NULL, NULL, 0);
        bad = PQresultStatus(r) != PGRES_COMMAND_OK;
        if (bad)
            snprintf(err, errlen, "recording migration %s: %s", m->name, PQresultErrorMessage(r));
        PQclear(r);
        if (bad) {
            pgc_exec(db, "ROLLBACK", e2, sizeof(e2));
            goto cleanup;
        }
        if (pgc_exec(db, "COMMIT", err, errlen) != 0)
            goto cleanup;
        (*applied)++;
    }
    rc = 0;
cleanup:;
    char e3[256];
    pgc_exec(db, "SELECT pg_advisory_unlock(hashtext('wanledger.migrate'))", e3, sizeof(e3));
    return rc;
}

/* Days already ensured by this process (partitions persist, so one cache serves every
 * connection); ingest workers call in from several threads. */
static int64_t g_made_from = INT64_MAX, g_made_to = INT64_MIN;
static pthread_mutex_t g_made_lock = PTHREAD_MUTEX_INITIALIZER;

int db_ensure_partitions(PGconn *db, int64_t from_us, int64_t to_us, char *err, size_t errlen)
{
    int64_t d0 = tm_window_start(from_us, 86400) / (86400 * TM_USEC_PER_SEC);
    int64_t d1 = tm_window_start(to_us, 86400) / (86400 * TM_USEC_PER_SEC);
    pthread_mutex_lock(&g_made_lock);
    int cached = d0 >= g_made_from && d1 <= g_made_to;
    pthread_mutex_unlock(&g_made_lock);
    if (cached)
        return 0;
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    tm_format_rfc3339(d0 * 86400 * TM_USEC_PER_SEC, a);
    tm_format_rfc3339(d1 * 86400 * TM_USEC_PER_SEC, b);
    a[10] = b[10] = '\0';
    const char *params[2] = {a, b};
    PGresult *r = PQexecParams(db, "SELECT wl_ensure_partitions($1::date, $2::date)", 2, NULL,
                               params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "creating partitions %s..%s: %s", a, b, PQresultErrorMessage(r));
        rc = -1;
    } else if (PQtransactionStatus(db) == PQTRANS_IDLE) {
        pthread_mutex_lock(&g_made_lock);
        /* only cache once committed: inside a caller's transaction a rollback would undo it;
         * the cache is one contiguous range of days */
        if (g_made_from > g_made_to || d1 + 1 < g_made_from || d0 > g_made_to + 1) {
            g_made_from = d0;
            g_made_to = d1;
        } else {
            g_made_from = d0 < g_made_from ? d0 : g_made_from;
            g_made_to = d1 > g_made_to ? d1 : g_made_to;
        }
        pthread_mutex_unlock(&g_made_lock);
    }
    PQclear(r);
    return rc;
}

void db_partition_name(const char *table, int64_t us, char *out, size_t len)
{
    char day[TM_RFC3339_LEN];
    tm_format_rfc3339(tm_window_start(us, 86400), day);
    snprintf(out, len, "%s_p%.4s%.2s%.2s", table, day, day + 5, day + 8);
}

int db_partitions_stale(PGconn *db, int64_t from_us, int64_t to_us)
{
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    tm_format_rfc3339(tm_window_start(from_us, 86400), a);
    tm_format_rfc3339(tm_window_start(to_us, 86400), b);
    a[10] = b[10] = '\0';
    const char *params[2] = {a, b};
    PGresult *r = PQexecParams(
        db,
        "SELECT count(*) FROM generate_series($1::date, $2::date, interval '1 day') AS d,"
        " unnest(ARRAY['counter_samples', 'flow_reports', 'flow_packed', 'transfers']) AS t"
        " WHERE to_regclass(t || '_p' || to_char(d, 'YYYYMMDD')) IS NULL",
        2, NULL, params, NULL, NULL, 0);
    int missing =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    if (missing > 0) {
        pthread_mutex_lock(&g_made_lock);
        g_made_from = INT64_MAX;
        g_made_to = INT64_MIN;
        pthread_mutex_unlock(&g_made_lock);
    }
    return missing > 0;
}

int db_prune(PGconn *db, int64_t cutoff_us, int *dropped, char *err, size_t errlen)
{
    char ts[TM_RFC3339_LEN];
    tm_format_rfc3339(cutoff_us, ts);
    const char *params[1] = {ts};
    PGresult *r =
        PQexecParams(db, "SELECT wl_prune($1::timestamptz)", 1, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "prune: %s", PQresultErrorMessage(r));
        rc = -1;
    } else {
        *dropped = atoi(PQgetvalue(r, 0, 0));
        pthread_mutex_lock(&g_made_lock);
        g_made_from = INT64_MAX; /* partitions may be gone now */
        g_made_to = INT64_MIN;
        pthread_mutex_unlock(&g_made_lock);
    }
    PQclear(r);
    return rc;
}

int db_sync_config(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
{
    if (pgc_exec(db, "BEGIN", err, errlen) != 0)
        return -1;
    /* Reconcilers starting at once sync the same rows: without this lock the second one's
     * DELETE (its snapshot older than the first's COMMIT) missed the rows the first inserted and
     * its INSERT hit the primary key. The lock makes the DELETE start after the other commit. */
    if (pgc_exec(db, "SELECT pg_advisory_xact_lock(hashtext('wanledger.sync_config'))", err,
                 errlen) != 0)
        goto fail;
    if (pgc_exec(db, "DELETE FROM sites; DELETE FROM links", err, errlen) != 0)
        goto fail;
    for (size_t i = 0; i < cfg->n_sites; i++) {
        const struct cfg_site *s = &cfg->sites[i];
        char arr[8192];
        size_t o = (size_t)snprintf(arr, sizeof(arr), "{");
        for (size_t k = 0; k < s->n_prefixes && o < sizeof(arr) - 64; k++) {
            char a[64];
            const struct cfg_prefix *p = &s->prefixes[k];
            inet_ntop(p->family, p->addr, a, sizeof(a));
            o += (size_t)snprintf(arr + o, sizeof(arr) - o, "%s\"%s/%d\"", k ? "," : "", a, p->len);
        }
        snprintf(arr + o, sizeof(arr) - o, "}");
        const char *params[2] = {s->name, arr};
        PGresult *r = PQexecParams(db, "INSERT INTO sites (name, prefixes) VALUES ($1, $2)", 2,
                                   NULL, params, NULL, NULL, 0);
        int bad = PQresultStatus(r) != PGRES_COMMAND_OK;
        if (bad)
            snprintf(err, errlen, "sites: %s", PQresultErrorMessage(r));
        PQclear(r);
        if (bad)
            goto fail;
    }
    for (size_t i = 0; i < cfg->n_links; i++) {
        const struct cfg_link *l = &cfg->links[i];
        char cap[32];
        snprintf(cap, sizeof(cap), "%llu", (unsigned long long)l->capacity_bps);
        const char *params[6] = {l->device, l->interface, l->site, l->peer_site, l->circuit, cap};
        PGresult *r = PQexecParams(db,
                                   "INSERT INTO links (device, interface, site, peer_site, "
                                   "circuit, capacity_bps) VALUES ($1,$2,$3,$4,$5,$6)",
                                   6, NULL, params, NULL, NULL, 0);
        int bad = PQresultStatus(r) != PGRES_COMMAND_OK;
        if (bad)
            snprintf(err, errlen, "links: %s", PQresultErrorMessage(r));
        PQclear(r);
        if (bad)
            goto fail;
    }
    return pgc_exec(db, "COMMIT", err, errlen);
fail:;
    char e2[256];
    pgc_exec(db, "ROLLBACK", e2, sizeof(e2));
    return -1;
}
