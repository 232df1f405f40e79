/* Reading the quarantine (quarantine.h): `wanledger rejects` and the /rejects page, newest
 * first, each record with when and from whom it came, its place in the batch, the error and
 * its JSON path, and the record's text. */
#ifndef WL_REJECTS_H
#define WL_REJECTS_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"

/* `wanledger rejects [--limit N] [--full]`: 0, 1 (database) or 2 (usage). */
int rj_cmd(const struct cfg *cfg, int argc, char **argv);
/* GET /rejects[?limit=N]: an HTML page; returns the HTTP status, *ct its Content-Type. */
int rj_page(PGconn *db, const char *query, struct evbuffer *out, const char **ct);

#endif
