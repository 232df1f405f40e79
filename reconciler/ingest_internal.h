/* Internal to ingest (ingest.c, ingest_owner.c, ingest_records.c; not for other modules): where a
 * value sits for its error's JSON path, the validation context, the COPY-buffer writers and the
 * typed-field validators every endpoint shares. Each validator returns 0, or -1 with the
 * request's error (422 and the JSON path) filled; the buffer writers record an allocation failure
 * in b->oom, which ing_row_end/ing_row_done turn into a 500 once per row. */
#ifndef WL_INGEST_INTERNAL_H
#define WL_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ingest.h"
#include "flow_row.h"
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
/* The request's error as 500 "out of memory"; -1. */
int ing_oom(struct vctx *c);
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
/* "version" in root: an integer from 1 to max, into *version (may be NULL). */
int ing_want_version(struct vctx *c, const struct jv *root, unsigned max, unsigned *version);
/* The most a flow or transfer may claim over span_s seconds: max_flow_bps x span / 8. */
uint64_t ing_max_bytes_over(const struct cfg *cfg, uint64_t span_s);

/* A flow object's members by slot (ing_flow_slot, ingest.c). The process members, F_PID to
 * F_CONTAINER_NAME, are contiguous: a version 1 flow carries them itself, a version 2 report
 * once per process in procs[] (ingest_owner.c). */
enum flow_slot {
    F_SOURCE,
    F_PROTO,
    F_LOCAL,
    F_REMOTE,
    F_ROLE,
    F_TX,
    F_RX,
    F_SERVER,
    F_EXPORT,
    F_OP,
    F_BYTES,
    F_OPS,
    F_PID, /* the first process member */
    F_UID,
    F_USER,
    F_PROGRAM,
    F_WORKFLOW,
    F_CONTAINER,
    F_NAMESPACE, /* Kubernetes identity (sql/015_kube_owner.sql) */
    F_POD,
    F_CONTAINER_NAME, /* the last process member */
    F_PROC,           /* version 2: the flow's index into procs[] */
    F_N
};
#define F_OWNER_N (F_CONTAINER_NAME - F_PID + 1)
/* The slot of a member's key, or -1. */
int ing_flow_slot(const struct jv *m);

/* The process behind a flow, validated (ingest_owner.c). */
struct ing_owner {
    bool has_pid, has_uid;
    uint64_t pid, uid;
    const struct jv *user, *program, *workflow, *container; /* NULL when absent or null */
    const struct jv *kns, *kpod, *kcont;                    /* Kubernetes identity, likewise */
};
/* m[0..F_OWNER_N): the members of slots F_PID.. of an object at l (NULL when absent), validated
 * into *o. */
int ing_owner_parse(struct vctx *c, const struct jv *const *m, struct loc l, struct ing_owner *o);
/* Version 2's procs (the root's member, NULL when absent): every entry validated, into
 * *owners[0..*n) (NULL when none; the caller frees it). */
int ing_procs_parse(struct vctx *c, const struct jv *procs, struct ing_owner **owners, size_t *n);
/* A JSON string into a text column; one read without an escape needs no COPY escaping. */
static inline void ing_row_jtext(struct flow_row *r, enum flow_col c, const struct jv *v)
{
    if (v->escaped)
        flow_row_text(r, c, v->s, v->n);
    else
        flow_row_text_plain(r, c, v->s, v->n);
}
/* The owner's columns of a flow row (pid, uid, names; '' for the Kubernetes identity outside
 * pods: part of the owner's key). */
void ing_owner_row(struct flow_row *row, const struct ing_owner *o);

/* The endpoints of ingest_records.c: /v1/counters (the whole body) and one /v1/transfers record
 * t, $[i]. */
int ing_parse_counters(struct vctx *c, const struct jv *root);
int ing_one_transfer(struct vctx *c, const struct jv *t, long i);

#endif
