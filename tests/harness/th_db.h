/* Statements for tests on a PostgreSQL connection (th_pg_default's or their own). */
#ifndef TH_DB_H
#define TH_DB_H

#include <libpq-fe.h>

/* Runs the statement made from fmt; a statement that fails (not COMMAND_OK or TUPLES_OK) fails
 * the running cmocka test with its first 300 characters and the server's message. */
void th_db_exec(PGconn *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first value of the first row of the query made from fmt, as text: "" for NULL, "<none>"
 * when there is no row; in a static buffer (8 KiB) that the next call overwrites. A failing
 * query fails the running test as th_db_exec does. */
const char *th_db_one(PGconn *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
