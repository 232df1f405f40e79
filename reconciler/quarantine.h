/* The quarantine of /v1/transfers: records refused while the rest of their batch was stored are
 * kept in `rejected_records` (sql/006) with their text and reason, and the batch's answer lists
 * each one (index, error, JSON path), so a log shipper that drops what it sent on 200 loses
 * nothing silently. Listed by `wanledger rejects` and the /rejects page (rejects.h). */
#ifndef WL_QUARANTINE_H
#define WL_QUARANTINE_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "ingest.h"
#include "store.h"

/* Most rejected records listed in one answer; all of them are kept. */
#define QR_MAX_LISTED 100

/* Adds record i (raw[0..len), copied) to b->rejects with e's reason, and clears e. Returns 0, or
 * -1 out of memory (e then says so, 500). */
int qr_keep(struct ingest_batch *b, long i, struct ingest_error *e, const char *raw, size_t len)
    __attribute__((warn_unused_result));

/* Inserts b's rejected records (none: nothing to do), in one statement; a record resent with
 * the same error is kept once. Returns 0, or -1 with err filled (the caller answers 503, so the
 * client resends the whole batch). */
int qr_write(PGconn *db, const struct ingest_batch *b, const char *peer, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The 200 answer of a transfers batch: {"received","stored","duplicate","rejected","errors":[
 * {"index","error","path"}…]} (at most QR_MAX_LISTED errors, "errors_listed" says how many). */
void qr_reply(struct evbuffer *out, const struct ingest_batch *b, const struct store_result *res);

#endif
