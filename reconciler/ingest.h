/* Whole-request validation of the ingest API bodies (DESIGN.md "HTTP API"): an agent's report
 * (/v1/attributions), a poller's counter samples (/v1/counters) and service transfer records
 * (/v1/transfers). A request is either entirely valid, and turned into rows ready for COPY, or
 * rejected with one error naming what and where ({"error","path"}); nothing is partially kept,
 * except in /v1/transfers, whose records stand alone: the invalid ones are listed with their
 * reasons (ingest_batch.rejects, kept by quarantine.h) and the valid ones stored. */
#ifndef WL_INGEST_H
#define WL_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum ingest_kind { INGEST_ATTRIBUTIONS, INGEST_COUNTERS, INGEST_TRANSFERS };

struct nas_batch; /* nasin.h */

#define INGEST_REPORT_PARAMS 12
#define INGEST_MAX_DAYS      16 /* distinct UTC days one request may touch */

struct ingest_error {
    int status; /* 400 (not JSON / not UTF-8) or 422 (valid JSON, invalid content) */
    char msg[200];
    char path[256]; /* JSON path: "$.flows[3].tx_bytes", "$[2].start" */
};

/* A /v1/transfers record refused while the rest of its batch is kept (quarantine.h). */
struct ingest_reject {
    long index; /* $[index] in the batch */
    char msg[200];
    char path[256];
    char *raw; /* the record's text as received, malloc'd */
    size_t raw_len;
};

struct chnative;

struct ingest_batch {
    enum ingest_kind kind;
    /* attributions: the flow_reports row, in the column order of store.c (NULL = SQL NULL):
     * agent_id, seq, host, window_start, window_seconds, dropped_events, sampling_k,
     * sampling_threshold, flows_seen, n_flows, spool_dropped_reports, local_sites (the last two
     * as wl_record_report would set them: the row is written once, not inserted then updated) */
    char *report[INGEST_REPORT_PARAMS];
    int64_t window_start_us; /* attributions */
    /* attributions: what the agent says it lost ("lost", lost_to_us 0 when absent) and its
     * cumulative spool drops ("spool"), for the seq-gap records (gaps.h) */
    int64_t lost_from_us, lost_to_us;
    char *lost_reason;
    uint64_t spool_dropped_reports;
    /* attributions: the distinct sites of the flows' local addresses as a text[] literal
     * ("{\"chi\",\"nyc\"}", "{}" for none), kept with the report for its gap records (sql/028) */
    char *local_sites;
    /* rows in PostgreSQL COPY text format: flow_records, or the counter/transfer staging table */
    char *copy;
    size_t copy_len, copy_cap;
    /* attributions with analytics.clickhouse: the flows as a ClickHouse Native block instead of
     * COPY text (chnative.h; copy stays empty), NULL otherwise */
    struct chnative *native;
    size_t n_rows;
    int64_t min_us, max_us;        /* range of the rows' partition keys */
    int64_t days[INGEST_MAX_DAYS]; /* the distinct UTC days (since the epoch) of those keys */
    size_t n_days;
    bool oom; /* internal: an allocation failed while building copy */
    /* attributions: the NFS flows' NAS detail for nas_windows (nasin.h), NULL when none */
    struct nas_batch *nas;
    /* transfers: every record is checked on its own; the invalid ones (422) are listed here and
     * the valid ones go to copy, so one bad record does not cost the batch */
    size_t n_records;
    struct ingest_reject *rejects;
    size_t n_rejects;
};

/* Validates body (len bytes) as kind against cfg at wall-clock now_us. Returns 0 with *b filled
 * (free with ingest_batch_free), or -1 with *e filled and *b empty. Transfers: -1 only when the
 * body's framing does not parse (400) or holds no record (422); invalid records are in
 * b->rejects. */
int ingest_parse(const struct cfg *cfg, enum ingest_kind kind, const char *body, size_t len,
                 int64_t now_us, struct ingest_batch *b, struct ingest_error *e)
    __attribute__((warn_unused_result));
/* The same on a body the caller frees after it, with body[len] writable (set to 0): validated
 * in place, without jv_parse's copy of the body (jsonv.h jv_parse_inplace), so body's bytes are
 * overwritten. /v1/transfers still parses a copy (a refused record keeps its text). */
int ingest_parse_inplace(const struct cfg *cfg, enum ingest_kind kind, char *body, size_t len,
                         int64_t now_us, struct ingest_batch *b, struct ingest_error *e)
    __attribute__((warn_unused_result));
void ingest_batch_free(struct ingest_batch *b);

#endif
