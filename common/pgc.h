/* The one PostgreSQL helper module (libpq) of every component: connections with a connect
 * timeout, TCP keepalives (a dead server or a cut link is noticed in ~1 min, not hours), a
 * statement timeout and UTC session settings; reconnecting a broken connection; exec and query
 * helpers whose error is the server's own message. common/db.c (migrations, partitions) and the
 * heatmap, reconciler and cmd code build on it. */
#ifndef WL_PGC_H
#define WL_PGC_H

#include <libpq-fe.h>
#include <stddef.h>

#define PGC_CONNECT_TIMEOUT_S   10
#define PGC_STATEMENT_TIMEOUT_S 300 /* a reconcile pass or a page query never needs more */

/* Connects with conninfo (its own connect_timeout/keepalives settings win over the defaults),
 * then sets the session up (TIME ZONE UTC, client_min_messages warning, statement_timeout).
 * NULL on failure with err = "cannot connect to PostgreSQL (WHERE): MESSAGE", WHERE being
 * conninfo_shown (NULL: conninfo; pass something without the password). */
PGconn *pgc_connect(const char *conninfo, const char *conninfo_shown, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* 0 when db is usable; a broken connection (server restart, network cut) is reset once and set
 * up again. -1 with err when it is still broken. */
int pgc_ensure(PGconn *db, char *err, size_t errlen);
/* Runs sql (no parameters; several statements allowed); 0, or -1 with err = the server's
 * message. */
int pgc_exec(PGconn *db, const char *sql, char *err, size_t errlen);
/* PQexecParams with text parameters; the result (tuples or command ok) or NULL with
 * err = "WHAT: the server's message". */
PGresult *pgc_query(PGconn *db, const char *what, const char *sql, int n, const char *const *params,
                    char *err, size_t errlen) __attribute__((warn_unused_result));

/* COPY ... FROM STDIN with data[0..len) (sent in 1 MiB chunks); 0, or -1 with
 * err = "WHAT: the server's message". */
int pgc_copy_in(PGconn *db, const char *what, const char *sql, const char *data, size_t len,
                char *err, size_t errlen);

/* One statement of pgc_pipeline: text parameters (NULL = SQL NULL); out: the number of rows and
 * the first row's first value as a number (0 when none). */
struct pgc_stmt {
    const char *what; /* for the error message */
    const char *sql;
    int nparams;
    const char *const *params;
    const int *lengths; /* with formats: binary parameters' lengths (libpq's paramLengths) */
    const int *formats; /* NULL: every parameter text; else 1 marks a binary one */
    const char *name;   /* with pgc_pipeline_prep: prepared once per session under this name
                         * (a static string; one name, one sql) */
    int ntuples;
    long first_value;
};

/* Runs n statements in one round trip (libpq pipeline mode, one sync at the end): a transaction's
 * BEGIN and first statement, or its last statements and COMMIT. 0, or -1 with err = "WHAT: the
 * server's message" of the first that failed (the ones after it were not run). The connection is
 * out of pipeline mode again, unless it broke (PQpipelineStatus tells; do not reuse it then). */
int pgc_pipeline(PGconn *db, struct pgc_stmt *st, int n, char *err, size_t errlen);

/* The named statements prepared on one session, for pgc_pipeline_prep: zero it with each new
 * connection (a reset one is told apart by its backend's pid as well). */
#define PGC_PREP_MAX 16
struct pgc_prep {
    int backend_pid; /* the session the names below were prepared on */
    int n;
    const char *names[PGC_PREP_MAX];
    /* the server lost a prepared statement (DEALLOCATE, DISCARD ALL, a pooler handing the next
     * transaction to another server session): every statement unnamed from then on */
    int off;
};

/* pgc_pipeline, with every statement that has a name run as a prepared statement: prepared in the
 * same round trip the first time the session runs it (parse and plan once per session instead of
 * once per statement), then executed by name. prep NULL: as pgc_pipeline. A name the server does
 * not know (SQLSTATE 26000) fails this call as any error does and turns prep off. */
int pgc_pipeline_prep(PGconn *db, struct pgc_prep *prep, struct pgc_stmt *st, int n, char *err,
                      size_t errlen);

#endif
