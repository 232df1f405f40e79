/* A strict, validating JSON reader for request bodies: exact 64-bit integers (cJSON keeps only
 * doubles), UTF-8 checked in every string, and every error reported with the JSON path where it
 * happened ("$.flows[3].tx_bytes") so the ingest API can answer {"error","path"}. */
#ifndef WL_JSONV_H
#define WL_JSONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_NULL, JV_FALSE, JV_TRUE, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
    enum jv_type type;
    bool is_int;      /* number: integer syntax (no fraction, no exponent) */
    bool neg;         /* number: has a leading minus */
    bool overflow;    /* number: integer magnitude does not fit in 64 bits */
    uint32_t n;       /* string: length in bytes; array/object: number of children */
    uint64_t u;       /* number: magnitude when is_int && !overflow */
    double d;         /* number: value as a double */
    const char *s;    /* string: decoded, NUL-terminated (may hold U+0000: use n) */
    const char *key;  /* member of an object: its decoded key; else NULL */
    struct jv *child; /* first element or member */
    struct jv *next;  /* next sibling */
    size_t off, len;  /* the value's bytes in the input: buf[off, off + len) */
};

/* The parsed document owns every node and string; free it with jv_doc_free. */
struct jv_doc;

struct jv_error {
    char msg[160];
    char path[256]; /* "$", "$.samples[2].at", or "$[4]" */
    size_t offset;  /* byte offset in the input */
};

/* Parses buf[0..len) as a sequence of JSON values separated by optional whitespace. With
 * allow_many false exactly one value is accepted; with true any number (NDJSON and concatenated
 * objects), and then an empty input gives zero values. The values are chained through ->next
 * from *first. Returns the document, or NULL with *e filled. buf is copied, not kept. */
struct jv_doc *jv_parse(const char *buf, size_t len, bool allow_many, struct jv **first,
                        size_t *n_values, struct jv_error *e) __attribute__((warn_unused_result));
void jv_doc_free(struct jv_doc *doc);

/* Member of an object by key, or NULL. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* Name of a type for messages: "a string", "an object", … */
const char *jv_type_name(const struct jv *v);

#endif
