/* Database helpers shared by the server-side subcommands: connect, migrate (embedded sql/NNN_*.sql,
 * advisory-locked, each file in its own transaction), raw-table partitions, prune, and loading
 * sites/links from the configuration. */
#ifndef WL_DB_H
#define WL_DB_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pgc.h"

struct db_migration {
    const char *name; /* "001_schema.sql" */
    const char *sql;
};
extern const struct db_migration db_migrations[];
extern const unsigned db_n_migrations;

/* Connects with cfg->database (password from cfg->database_password_file when set) through
 * pgc_connect (timeouts, keepalives, UTC). NULL on failure with err filled. */
PGconn *db_connect(const struct cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
PGconn *db_connect_str(const char *conninfo, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Applies pending migrations in order; *applied gets how many. Safe concurrently. 0 or -1. */
int db_migrate(PGconn *db, int *applied, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Makes sure the daily partitions of the raw tables exist for [from_us, to_us]. Caches what it
 * made in-process, so calling it per batch is cheap. 0 or -1. */
int db_ensure_partitions(PGconn *db, int64_t from_us, int64_t to_us, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* The name of table's daily partition holding time us (UTC day), as wl_ensure_partitions
 * (sql/001_schema.sql) names them: TABLE_pYYYYMMDD. */
void db_partition_name(const char *table, int64_t us, char *out, size_t len);
/* After a failed write into [from_us, to_us]: 1 when a day partition there no longer exists
 * (another process' prune dropped it while this one's cache said it was made); the cache is
 * then forgotten, and the caller may retry (db_ensure_partitions makes it again). 0 otherwise. */
int db_partitions_stale(PGconn *db, int64_t from_us, int64_t to_us);
/* Drops raw partitions ending at or before cutoff_us; *dropped gets the count. 0 or -1. */
int db_prune(PGconn *db, int64_t cutoff_us, int *dropped, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Replaces the sites and links tables with the configuration's. 0 or -1. */
int db_sync_config(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
