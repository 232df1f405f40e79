/* Durable storage of validated ingest batches: one transaction per batch, bulk rows by COPY,
 * idempotency keys honoured with ON CONFLICT DO NOTHING, and every window touched by new rows
 * marked dirty in window_state (the contract of recon_db_mark_done). A 2xx answer may be sent
 * once store_write returned 0: the batch is committed. One store per thread; stores of different
 * threads may write at the same time. */
#ifndef WL_STORE_H
#define WL_STORE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"
#include "ingest.h"

struct store;

struct store_result {
    size_t received; /* rows in the batch */
    size_t stored;   /* rows new to the database (the rest were resends) */
    size_t gaps;     /* agent seq-gap rows recorded (gaps.h) */
};

/* A store that connects on first use (and reconnects after a failure). NULL when out of memory. */
struct store *store_new(const struct cfg *cfg) __attribute__((warn_unused_result));
/* Connects with cfg->database now. NULL with err filled on failure. */
struct store *store_open(const struct cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void store_close(struct store *st);
/* Writes b in one transaction. 0, or -1 with err filled and nothing written. Reconnects once when
 * the connection was lost. */
int store_write(struct store *st, const struct ingest_batch *b, struct store_result *res, char *err,
                size_t errlen) __attribute__((warn_unused_result));
/* The connection, for the other queries of the same thread (pages, API, webhooks); it is checked
 * and re-established when broken. NULL when the database is unreachable. */
PGconn *store_db(struct store *st);

#endif
