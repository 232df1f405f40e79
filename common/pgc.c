/* libpq connections and statements (common/pgc.h). */
#include "pgc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

static int setup_session(PGconn *db, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SET TIME ZONE 'UTC'; SET client_min_messages = warning; "
             "SET statement_timeout = '%ds'",
             PGC_STATEMENT_TIMEOUT_S);
    return pgc_exec(db, sql, err, errlen);
}

PGconn *pgc_connect(const char *conninfo, const char *shown, char *err, size_t errlen)
{
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%d", PGC_CONNECT_TIMEOUT_S);
    /* defaults first: the expanded conninfo (dbname) overrides them */
    const char *const keys[] = {
        "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
        "keepalives_count", "application_name", "dbname",          NULL};
    const char *const vals[] = {timeout, "1", "30", "10", "3", "wanledger", conninfo, NULL};
    PGconn *db = PQconnectdbParams(keys, vals, 1);
    if (!db || PQstatus(db) != CONNECTION_OK) {
        snprintf(err, errlen, "cannot connect to PostgreSQL (%s): %s", shown ? shown : conninfo,
                 db ? PQerrorMessage(db) : "out of memory");
        chomp(err);
        PQfinish(db);
        return NULL;
    }
    char e[512];
    if (setup_session(db, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "PostgreSQL (%s): session setup: %s", shown ? shown : conninfo, e);
        PQfinish(db);
        return NULL;
    }
    return db;
}

int pgc_ensure(PGconn *db, char *err, size_t errlen)
{
    if (!db) {
        snprintf(err, errlen, "no PostgreSQL connection");
        return -1;
    }
    if (PQstatus(db) == CONNECTION_OK)
        return 0;
    PQreset(db);
    if (PQstatus(db) != CONNECTION_OK) {
        snprintf(err, errlen, "PostgreSQL connection lost, reconnect failed: %s",
                 PQerrorMessage(db));
        chomp(err);
        return -1;
    }
    return setup_session(db, err, errlen);
}

int pgc_exec(PGconn *db, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(db);
        snprintf(err, errlen, "%s", msg && *msg ? msg : "statement failed");
        chomp(err);
        rc = -1;
    }
    PQclear(r);
    return rc;
}

PGresult *pgc_query(PGconn *db, const char *what, const char *sql, int n, const char *const *params,
                    char *err, size_t errlen)
{
    PGresult *r = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(db);
    snprintf(err, errlen, "%s: %s", what, msg && *msg ? msg : "query failed");
    chomp(err);
    PQclear(r);
    return NULL;
}

static void set_what(char *err, size_t errlen, const char *what, const char *msg)
{
    snprintf(err, errlen, "%s: %s", what, msg && *msg ? msg : "failed without a message");
    chomp(err);
}

int pgc_copy_in(PGconn *db, const char *what, const char *sql, const char *data, size_t len,
                char *err, size_t errlen)
{
    const size_t chunk = 1u << 20;
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        set_what(err, errlen, what, r ? PQresultErrorMessage(r) : PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0;) {
        size_t n = len - off < chunk ? len - off : chunk;
        if (PQputCopyData(db, data + off, (int)n) != 1) {
            set_what(err, errlen, what, PQerrorMessage(db));
            rc = -1;
        }
        off += n;
    }
    if (PQputCopyEnd(db, rc == 0 ? NULL : "aborted by the client") != 1 && rc == 0) {
        set_what(err, errlen, what, PQerrorMessage(db));
        rc = -1;
    }
    while ((r = PQgetResult(db)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0) {
            set_what(err, errlen, what, PQresultErrorMessage(r));
            rc = -1;
        }
        PQclear(r);
    }
    return rc;
}

static int prep_known(const struct pgc_prep *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name))
            return 1;
    return 0;
}

static void prep_forget(struct pgc_prep *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name)) {
            p->names[i] = p->names[--p->n];
            return;
        }
}

int pgc_pipeline(PGconn *db, struct pgc_stmt *st, int n, char *err, size_t errlen)
{
    return pgc_pipeline_prep(db, NULL, st, n, err, errlen);
}

int pgc_pipeline_prep(PGconn *db, struct pgc_prep *prep, struct pgc_stmt *st, int n, char *err,
                      size_t errlen)
{
    if (prep && PQbackendPID(db) != prep->backend_pid) {
        prep->backend_pid = PQbackendPID(db);
        prep->n = 0;
    }
    /* what was sent, in order: -1 - i for statement i's Parse, i for its execution */
    int *sent_ops = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
    if (!sent_ops) {
        snprintf(err, errlen, "%s: out of memory", st[0].what);
        return -1;
    }
    if (PQenterPipelineMode(db) != 1) {
        set_what(err, errlen, st[0].what, PQerrorMessage(db));
        free(sent_ops);
        return -1;
    }
    int rc = 0, sent = 0, ops = 0;
    for (; sent < n; sent++) {
        const struct pgc_stmt *s = &st[sent];
        int named = prep && !prep->off && s->name;
        if (named && !prep_known(prep, s->name)) {
            if (prep->n == PGC_PREP_MAX) {
                named = 0; /* more names than the table holds: this one unnamed */
            } else {
                if (PQsendPrepare(db, s->name, s->sql, s->nparams, NULL) != 1)
                    break;
                prep->names[prep->n++] = s->name; /* forgotten below unless it succeeds */
                sent_ops[ops++] = -1 - sent;
            }
        }
        int ok = named ? PQsendQueryPrepared(db, s->name, s->nparams, s->params, s->lengths,
                                             s->formats, 0)
                       : PQsendQueryParams(db, s->sql, s->nparams, NULL, s->params, s->lengths,
                                           s->formats, 0);
        if (ok != 1)
            break;
        sent_ops[ops++] = sent;
    }
    if (sent < n) {
        set_what(err, errlen, st[sent].what, PQerrorMessage(db));
        rc = -1;
    }
    if (PQpipelineSync(db) != 1) {
        if (rc == 0)
            set_what(err, errlen, st[n - 1].what, PQerrorMessage(db));
        PQexitPipelineMode(db);
        if (prep)
            prep->n = 0; /* the connection is gone (PQstatus tells) */
        free(sent_ops);
        return -1;
    }
    /* every Parse's and statement's results (each ends with NULL), then the sync's */
    for (int k = 0; k < ops; k++) {
        int i = sent_ops[k] < 0 ? -1 - sent_ops[k] : sent_ops[k];
        bool parse = sent_ops[k] < 0, parsed = false;
        PGresult *r;
        if (!parse) {
            st[i].ntuples = 0;
            st[i].first_value = 0;
        }
        while ((r = PQgetResult(db)) != NULL) {
            ExecStatusType s = PQresultStatus(r);
            if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
                parsed = true;
                if (!parse) {
                    st[i].ntuples = PQntuples(r);
                    st[i].first_value = PQntuples(r) > 0 ? atol(PQgetvalue(r, 0, 0)) : 0;
                }
            } else {
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                if (prep && state && !strcmp(state, "26000")) { /* invalid_sql_statement_name */
                    prep->off = 1;
                    prep->n = 0;
                }
                if (rc == 0) {
                    set_what(err, errlen, st[i].what,
                             s == PGRES_PIPELINE_ABORTED ? "not run after an earlier error"
                                                         : PQresultErrorMessage(r));
                    rc = -1;
                }
            }
            PQclear(r);
        }
        if (parse && !parsed)
            prep_forget(prep, st[i].name);
    }
    free(sent_ops);
    PGresult *r = PQgetResult(db);
    if (PQresultStatus(r) != PGRES_PIPELINE_SYNC && rc == 0) {
        set_what(err, errlen, st[n - 1].what, PQerrorMessage(db));
        rc = -1;
    }
    PQclear(r);
    if (PQexitPipelineMode(db) != 1 && rc == 0) {
        set_what(err, errlen, st[n - 1].what, PQerrorMessage(db));
        rc = -1;
    }
    return rc;
}
