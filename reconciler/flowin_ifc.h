/* The "if_counters" of a POST /v1/flowsamples batch (pollers/flow_batch.h): sFlow counter
 * samples, validated with the rest of the body and stored in flow_if_counters (sql/014) in the
 * batch's transaction, beside the SNMP/gNMI counters as a second opinion on them. They are not
 * an input of the reconciliation (a link keeps one counter source). */
#ifndef WL_FLOWIN_IFC_H
#define WL_FLOWIN_IFC_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "jsonv.h"

#define FLOWIN_IFC_MAX 65536 /* counter samples per batch */

/* Checks $.if_counters (NULL: none): an array of objects naming a device with "flows", an
 * if_index, an RFC 3339 "at" no further ahead than max_future_seconds and no older than
 * max_past_days, in/out octets (0..2^64-1) and packets (0..2^32-1). 0, or -1 with the first
 * error's message and JSON path. */
int flowin_ifc_check(const struct cfg *cfg, const struct jv *arr, int64_t now_us, char *msg,
                     size_t msglen, char *path, size_t pathlen);

/* Inserts the (checked) samples of arr for poller inside the caller's transaction; a sample
 * already stored (same device, if_index, at) is left as it is. 0, or -1 with err. */
int flowin_ifc_store(PGconn *db, const char *poller, const struct jv *arr, char *err,
                     size_t errlen);

#endif
