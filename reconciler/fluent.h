/* Transfer records as log shippers deliver them (Fluent Bit's out_http, Vector's http sink): the
 * record a tail input left unparsed under `log` (Fluent Bit) or `message` (Vector), the record
 * time under the shipper's date key in each of Fluent Bit's json_date_format forms, numbers sent
 * as numeric text, and Fluent Bit's msgpack format turned into the JSON array the ingest reads.
 * Contracts and decisions: reconciler/README.md "Log shippers". */
#ifndef WL_FLUENT_H
#define WL_FLUENT_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonv.h"

/* When rec has no `service` member but a string `log` or `message` holding a JSON object, parses
 * that object: *inner is it (its document in *doc, free with jv_doc_free) and *key the member it
 * came from. Otherwise *inner = rec and *doc = NULL. Returns -1 (with msg filled) when the
 * member looks like JSON (starts with '{') but does not parse. */
int fl_unwrap(const struct jv *rec, struct jv_doc **doc, const struct jv **inner, const char **key,
              char *msg, size_t msglen) __attribute__((warn_unused_result));

/* Why rec is a shipper format that cannot hold a transfer record (Fluent Bit's `format gelf`,
 * OTLP JSON), naming the setting to use instead; NULL when it is not one of those. */
const char *fl_unsupported(const struct jv *rec);

/* The record time a shipper added, from rec's first member of `date` (Fluent Bit's default
 * json_date_key), `timestamp` (Vector) or `@timestamp`: *key names it (NULL when none).
 * Numbers are epoch seconds below 1e11, milliseconds below 1e14, microseconds below 1e17, else
 * nanoseconds; text is RFC 3339 or Fluent Bit's java_sql_timestamp ("2025-11-29 18:53:10.5",
 * UTC). Returns 0, 1 when there is no such member, -1 when it does not read as a time. */
int fl_record_time(const struct jv *rec, const char **key, int64_t *us)
    __attribute__((warn_unused_result));

/* A JSON number or decimal text ("1234", no sign, no fraction) as an exact u64. */
bool fl_uint(const struct jv *v, uint64_t *out);

/* Whether a Content-Type names msgpack (application/msgpack, application/x-msgpack), which only
 * /v1/transfers accepts (transfers). Returns 0 (*msgpack set), or -1 with msg saying why (415).
 * Every other type is read as JSON: the body decides. */
int fl_content_type(bool transfers, const char *content_type, bool *msgpack, char *msg,
                    size_t msglen) __attribute__((warn_unused_result));

/* Converts Fluent Bit's msgpack chunk (a stream of events [[time, metadata], record] or the
 * legacy [time, record]; group start/end markers skipped) into a JSON array of the records, each
 * with the event time as `date` in epoch seconds with nanoseconds, unless the record has a
 * `date` of its own. Returns the number of events, or -1 with msg filled (what and at which
 * byte). */
long fl_msgpack_to_json(const char *buf, size_t len, struct evbuffer *out, char *msg, size_t msglen)
    __attribute__((warn_unused_result));

#endif
