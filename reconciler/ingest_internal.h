/* Internal to ingest (ingest.c, ingest_records.c; not for other modules): where a value sits for
 * its error's JSON path, the validation context, the COPY-buffer writers and the typed-field
 * validators every endpoint shares. Each validator returns 0, or -1 with the request's error (422
 * and the JSON path) filled; the buffer writers record an allocation failure in b->oom, which
 * ing_row_end/ing_row_done turn into a 500 once per row. */
#ifndef WL_INGEST_INTERNAL_H
#define WL_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ingest.h"
#include "jsonv.h"
#define NAME_MAX_BYTES 1024 /* longest accepted name (host, program, interface, id, …) */

/* Where a value sits: "$" [ "." arr ] [ "[" idx "]" ] [ "." key ]. */
struct loc {
    const char *arr; /* "flows", "samples", or NULL */
    long idx;        /* element index, or -1 */
    const char *key; /* member, or NULL */
};

struct vctx {
    const struct cfg *cfg;
    int64_t now_us;
    size_t body_len; /* bounds buf_hint */
    struct ingest_error *e;
    struct ingest_batch *b;
};

static inline struct loc ing_at_key(struct loc l, const char *key)
{
    l.key = key;
    return l;
}

int ing_bad(struct vctx *c, struct loc l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* COPY text into c->b (copyesc.h escaping for text, \N for NULL, RFC 3339 for times). */
void ing_buf_put(struct ingest_batch *b, const char *s, size_t n);
void ing_buf_c(struct ingest_batch *b, char ch);
void ing_buf_u64(struct ingest_batch *b, bool neg, uint64_t v);
void ing_buf_null(struct ingest_batch *b);
void ing_buf_text(struct ingest_batch *b, const char *s, size_t n);
void ing_buf_time(struct ingest_batch *b, int64_t us);
void ing_buf_str_or_null(struct ingest_batch *b, const struct jv *v);
/* Ends a row (its newline) and counts it; -1 (500) when building it ran out of memory. */
int ing_row_end(struct vctx *c);
/* Records the UTC day of a row's partition key (at most INGEST_MAX_DAYS per request). */
int ing_day_add(struct vctx *c, struct loc l, int64_t us);

int ing_want_object(struct vctx *c, const struct jv *v, struct loc l);
/* A string of 1..NAME_MAX_BYTES bytes; optional: missing or null gives *out NULL. */
int ing_want_name(struct vctx *c, const struct jv *v, struct loc l, bool optional,
                  const struct jv **out);
/* A non-negative integer no greater than max; opt_: missing or null allowed (*present false). */
int ing_want_uint(struct vctx *c, const struct jv *v, struct loc l, uint64_t max, uint64_t *out);
int ing_opt_uint(struct vctx *c, const struct jv *v, struct loc l, uint64_t max, uint64_t *out,
                 bool *present);
/* RFC 3339 text, or epoch seconds as a number or numeric text. */
int ing_want_time(struct vctx *c, const struct jv *v, struct loc l, int64_t *us);
/* Inside [now - max_past_days, now + max_future_seconds]. */
int ing_in_bounds(struct vctx *c, struct loc l, int64_t us);
/* "version": 1 in root. */
int ing_want_version(struct vctx *c, const struct jv *root);
/* The most a flow or transfer may claim over span_s seconds: max_flow_bps x span / 8. */
uint64_t ing_max_bytes_over(const struct cfg *cfg, uint64_t span_s);

/* The endpoints of ingest_records.c: /v1/counters (the whole body) and one /v1/transfers record
 * t, $[i]. */
int ing_parse_counters(struct vctx *c, const struct jv *root);
int ing_one_transfer(struct vctx *c, const struct jv *t, long i);

#endif
