/* The tree's one JSON reader (strict RFC 8259): exact 64-bit integers (cJSON keeps only
 * doubles), every string checked against utf8.h's rule, and every error reported with what
 * happened, the JSON path ("$.flows[3].tx_bytes") and the byte offset, so the ingest API can
 * answer {"error","path"}. Beyond RFC 8259 it refuses, everywhere in a document: duplicate object
 * members (the path names the second one), U+0000 in a string or key (so every decoded string is
 * a C string), nesting deeper than JV_MAX_DEPTH, inputs over JV_MAX_LEN bytes and more than
 * JV_MAX_NODES values. */
#ifndef WL_JSONV_H
#define WL_JSONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_NULL, JV_FALSE, JV_TRUE, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

#define JV_MAX_DEPTH 64
#define JV_MAX_LEN   (1u << 30) /* bytes */
#define JV_MAX_NODES (1u << 24) /* values in one document */

/* 72 bytes (a report's flow record is ~13 of them: their size is the reader's memory traffic). */
struct jv {
    enum jv_type type;
    bool is_int;      /* number: integer syntax (no fraction, no exponent) */
    bool neg;         /* number: has a leading minus */
    bool overflow;    /* number: integer magnitude does not fit in 64 bits */
    bool escaped;     /* string: written with a backslash escape; without one it holds no '\\',
                         tab, newline or CR (raw control bytes are refused), nothing to escape */
    uint32_t n;       /* string: length in bytes; array/object: number of children */
    uint32_t key_len; /* member of an object: the length of key in bytes; else 0 */
    uint32_t off;     /* every value: its text in the input is buf[off, off + len) (< JV_MAX_LEN) */
    uint32_t len;     /* (for a number also the length of num) */
    uint64_t u;       /* number: magnitude when is_int && !overflow */
    double d;         /* number: value as a double */
    union {
        const char *s;   /* string: decoded, NUL-terminated (U+0000 is refused) */
        const char *num; /* number: its text as written (not NUL-terminated: len bytes) */
    };
    const char *key;  /* member of an object: its decoded key; else NULL */
    struct jv *child; /* first element or member */
    struct jv *next;  /* next sibling */
};

/* The parsed document owns every node and string; free it with jv_doc_free. */
struct jv_doc;

struct jv_error {
    bool semantic; /* the text is JSON but breaks a rule above (duplicate, U+0000): HTTP 422 */
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
/* The same without the copy, for a caller done with its buffer after the document: parses
 * buf[0..len) in place (buf[len] must be writable: it is set to 0). buf's bytes are overwritten
 * (strings decoded where they are) and must outlive the document. */
struct jv_doc *jv_parse_inplace(char *buf, size_t len, bool allow_many, struct jv **first,
                                size_t *n_values, struct jv_error *e)
    __attribute__((warn_unused_result));
void jv_doc_free(struct jv_doc *doc);

/* Member of an object by key, or NULL. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* Exact integers: true and *out when v is an integer-syntax number in range (for jv_i64 that
 * includes -9223372036854775808); false for fractions, exponents, overflow, other types. */
bool jv_u64(const struct jv *v, uint64_t *out);
bool jv_i64(const struct jv *v, int64_t *out);
/* The number as written ("1.50e3"), NUL-terminated in buf; NULL when v is not a number or the
 * text does not fit in cap bytes. For callers that keep numeric strings exactly. */
const char *jv_num_text(const struct jv *v, char *buf, size_t cap);
/* Name of a type for messages: "a string", "an object", … */
const char *jv_type_name(const struct jv *v);

#endif
