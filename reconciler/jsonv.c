/* Strict JSON reader with exact integers, UTF-8 validation and JSON paths in errors. */
#include "jsonv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JV_MAX_DEPTH   64
#define JV_CHUNK_NODES 4096

struct jv_chunk {
    struct jv_chunk *prev;
    size_t used;
    struct jv nodes[JV_CHUNK_NODES];
};

struct jv_doc {
    char *text; /* mutable copy of the input; strings are decoded in place */
    struct jv_chunk *chunks;
};

struct frame {
    const char *key; /* member key, or NULL for an array index */
    uint32_t idx;
};

struct parser {
    struct jv_doc *doc;
    char *p, *end, *start;
    int depth;
    struct frame stack[JV_MAX_DEPTH + 1];
    struct jv_error *e;
};

static struct jv *node_new(struct parser *ps)
{
    struct jv_chunk *c = ps->doc->chunks;
    if (!c || c->used == JV_CHUNK_NODES) {
        c = malloc(sizeof(*c));
        if (!c)
            return NULL;
        c->prev = ps->doc->chunks;
        c->used = 0;
        ps->doc->chunks = c;
    }
    struct jv *v = &c->nodes[c->used++];
    memset(v, 0, sizeof(*v));
    return v;
}

static void path_append(char *out, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void path_append(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = (size_t)n + *len >= cap ? cap - 1 : *len + (size_t)n;
}

/* The path of the value being parsed at depth ps->depth. */
static void fill_path(struct parser *ps)
{
    size_t len = 0;
    char *out = ps->e->path;
    size_t cap = sizeof(ps->e->path);
    out[0] = 0;
    path_append(out, cap, &len, "$");
    for (int i = 1; i <= ps->depth; i++) {
        const struct frame *f = &ps->stack[i];
        if (f->key) {
            if (*f->key) /* "" while a member's key is not yet read */
                path_append(out, cap, &len, ".%s", f->key);
        } else
            path_append(out, cap, &len, "[%u]", f->idx);
    }
}

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->e->msg, sizeof(ps->e->msg), fmt, ap);
    va_end(ap);
    ps->e->offset = (size_t)(ps->p - ps->start);
    fill_path(ps);
    return -1;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static char *put_utf8(char *w, unsigned cp)
{
    if (cp < 0x80) {
        *w++ = (char)cp;
    } else if (cp < 0x800) {
        *w++ = (char)(0xC0 | (cp >> 6));
        *w++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *w++ = (char)(0xE0 | (cp >> 12));
        *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *w++ = (char)(0xF0 | (cp >> 18));
        *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char)(0x80 | (cp & 0x3F));
    }
    return w;
}

/* Length of the valid UTF-8 sequence at p (non-ASCII lead byte), or 0 when invalid: overlong
 * forms, surrogates and code points above U+10FFFF are rejected (RFC 3629). */
static int utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    int n;
    unsigned min, cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (end - p < n)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Decodes the string starting after the opening quote in place; *out gets its start. */
static int parse_string(struct parser *ps, const char **out, uint32_t *n)
{
    char *w = ps->p;
    char *begin = w;
    for (;;) {
        if (ps->p >= ps->end)
            return fail(ps, "truncated JSON: unterminated string");
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20)
            return fail(ps, "control character U+%04X in a string must be escaped", c);
        if (c == '\\') {
            if (ps->end - ps->p < 2)
                return fail(ps, "truncated JSON: unterminated escape");
            char esc = ps->p[1];
            ps->p += 2;
            switch (esc) {
            case '"':
                *w++ = '"';
                break;
            case '\\':
                *w++ = '\\';
                break;
            case '/':
                *w++ = '/';
                break;
            case 'b':
                *w++ = '\b';
                break;
            case 'f':
                *w++ = '\f';
                break;
            case 'n':
                *w++ = '\n';
                break;
            case 'r':
                *w++ = '\r';
                break;
            case 't':
                *w++ = '\t';
                break;
            case 'u': {
                unsigned cp, lo;
                if (ps->end - ps->p < 4 || hex4(ps->p, &cp) < 0)
                    return fail(ps, "invalid \\u escape");
                ps->p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
                        hex4(ps->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                        return fail(ps, "invalid \\u escape: unpaired surrogate");
                    ps->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return fail(ps, "invalid \\u escape: unpaired surrogate");
                }
                w = put_utf8(w, cp);
                break;
            }
            default:
                ps->p--;
                return fail(ps, "invalid escape \\%c in a string", esc);
            }
            continue;
        }
        if (c < 0x80) {
            *w++ = (char)c;
            ps->p++;
            continue;
        }
        int k = utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end);
        if (k == 0)
            return fail(ps, "invalid UTF-8 in a string");
        memmove(w, ps->p, (size_t)k);
        w += k;
        ps->p += k;
    }
    *w = 0; /* w < ps->p: the closing quote at least has been consumed */
    *out = begin;
    *n = (uint32_t)(w - begin);
    return 0;
}

static int parse_number(struct parser *ps, struct jv *v)
{
    char *s = ps->p;
    v->type = JV_NUMBER;
    v->is_int = true;
    if (ps->p < ps->end && *ps->p == '-') {
        v->neg = true;
        ps->p++;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return fail(ps, "invalid number");
    if (*ps->p == '0') {
        ps->p++;
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            unsigned dgt = (unsigned)(*ps->p - '0');
            if (v->u > (UINT64_MAX - dgt) / 10)
                v->overflow = true;
            else
                v->u = v->u * 10 + dgt;
            ps->p++;
        }
    }
    if (ps->p < ps->end && *ps->p == '.') {
        v->is_int = false;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "invalid number: digits expected after '.'");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        v->is_int = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fail(ps, "invalid number: digits expected in the exponent");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    }
    if (v->is_int && !v->overflow) {
        v->d = v->neg ? -(double)v->u : (double)v->u;
    } else {
        /* The byte after the number is a delimiter or the terminating NUL of the copy. */
        char save = *ps->p;
        *ps->p = 0;
        errno = 0;
        v->d = strtod(s, NULL);
        *ps->p = save;
    }
    return 0;
}

static int parse_value(struct parser *ps, struct jv *v);

static int parse_array(struct parser *ps, struct jv *v)
{
    v->type = JV_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    struct jv **tail = &v->child;
    ps->depth++;
    for (uint32_t i = 0;; i++) {
        ps->stack[ps->depth] = (struct frame){.key = NULL, .idx = i};
        struct jv *c = node_new(ps);
        if (!c)
            return fail(ps, "out of memory");
        *tail = c;
        tail = &c->next;
        v->n++;
        if (parse_value(ps, c) < 0)
            return -1;
        ps->depth--; /* errors between elements belong to the array */
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, "truncated JSON: unterminated array");
        if (*ps->p == ',') {
            ps->p++;
            ps->depth++;
            continue;
        }
        if (*ps->p == ']') {
            ps->p++;
            break;
        }
        return fail(ps, "expected ',' or ']' in an array");
    }
    return 0;
}

static int parse_object(struct parser *ps, struct jv *v)
{
    v->type = JV_OBJECT;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    struct jv **tail = &v->child;
    ps->depth++;
    ps->stack[ps->depth] = (struct frame){.key = "", .idx = 0};
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, "truncated JSON: unterminated object");
        if (*ps->p != '"')
            return fail(ps, "expected a string key in an object");
        ps->p++;
        const char *key;
        uint32_t klen;
        if (parse_string(ps, &key, &klen) < 0)
            return -1;
        ps->stack[ps->depth] = (struct frame){.key = key, .idx = 0};
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, "truncated JSON: expected ':'");
        if (*ps->p != ':')
            return fail(ps, "expected ':' after a key");
        ps->p++;
        struct jv *c = node_new(ps);
        if (!c)
            return fail(ps, "out of memory");
        *tail = c;
        tail = &c->next;
        v->n++;
        if (parse_value(ps, c) < 0)
            return -1;
        c->key = key;
        ps->depth--; /* errors between members belong to the object */
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, "truncated JSON: unterminated object");
        if (*ps->p == ',') {
            ps->p++;
            ps->depth++;
            ps->stack[ps->depth] = (struct frame){.key = "", .idx = 0};
            continue;
        }
        if (*ps->p == '}') {
            ps->p++;
            break;
        }
        return fail(ps, "expected ',' or '}' in an object");
    }
    return 0;
}

static int literal(struct parser *ps, const char *word, enum jv_type t, struct jv *v)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n) {
        if (memcmp(ps->p, word, (size_t)(ps->end - ps->p)) == 0)
            return fail(ps, "truncated JSON: incomplete '%s'", word);
        return fail(ps, "unexpected character");
    }
    if (memcmp(ps->p, word, n) != 0)
        return fail(ps, "unexpected character");
    ps->p += n;
    v->type = t;
    return 0;
}

static int parse_value_at(struct parser *ps, struct jv *v);

/* Parses a value and records where its text is (struct jv's off and len). */
static int parse_value(struct parser *ps, struct jv *v)
{
    skip_ws(ps);
    v->off = (size_t)(ps->p - ps->start);
    int rc = parse_value_at(ps, v);
    v->len = (size_t)(ps->p - ps->start) - v->off;
    return rc;
}

static int parse_value_at(struct parser *ps, struct jv *v)
{
    if (ps->p >= ps->end)
        return fail(ps, "truncated JSON: a value was expected");
    if (ps->depth >= JV_MAX_DEPTH)
        return fail(ps, "nesting deeper than %d levels", JV_MAX_DEPTH);
    switch (*ps->p) {
    case '{':
        return parse_object(ps, v);
    case '[':
        return parse_array(ps, v);
    case '"':
        ps->p++;
        v->type = JV_STRING;
        return parse_string(ps, &v->s, &v->n);
    case 't':
        return literal(ps, "true", JV_TRUE, v);
    case 'f':
        return literal(ps, "false", JV_FALSE, v);
    case 'n':
        return literal(ps, "null", JV_NULL, v);
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return parse_number(ps, v);
        if ((unsigned char)*ps->p >= 0x80 &&
            utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end) == 0)
            return fail(ps, "invalid UTF-8");
        return fail(ps, "unexpected character '%c'",
                    (unsigned char)*ps->p < 0x80 && (unsigned char)*ps->p >= 0x20 ? *ps->p : '?');
    }
}

struct jv_doc *jv_parse(const char *buf, size_t len, bool allow_many, struct jv **first,
                        size_t *n_values, struct jv_error *e)
{
    memset(e, 0, sizeof(*e));
    *first = NULL;
    *n_values = 0;
    struct jv_doc *doc = calloc(1, sizeof(*doc));
    if (!doc || !(doc->text = malloc(len + 1))) {
        free(doc);
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        snprintf(e->path, sizeof(e->path), "$");
        return NULL;
    }
    memcpy(doc->text, buf, len);
    doc->text[len] = 0;
    struct parser ps = {
        .doc = doc, .p = doc->text, .start = doc->text, .end = doc->text + len, .e = e};
    struct jv **tail = first;
    for (uint32_t i = 0;; i++) {
        skip_ws(&ps);
        if (ps.p >= ps.end) {
            if (i == 0 && !allow_many) {
                fail(&ps, "empty body: a JSON value was expected");
                goto fail;
            }
            break;
        }
        if (i > 0 && !allow_many) {
            fail(&ps, "unexpected data after the JSON value");
            goto fail;
        }
        /* Values of a stream are addressed as $[i]. */
        if (allow_many) {
            ps.depth = 1;
            ps.stack[1] = (struct frame){.key = NULL, .idx = i};
        }
        struct jv *v = node_new(&ps);
        if (!v) {
            fail(&ps, "out of memory");
            goto fail;
        }
        *tail = v;
        tail = &v->next;
        if (parse_value(&ps, v) < 0)
            goto fail;
        ps.depth = 0;
        (*n_values)++;
    }
    return doc;
fail:
    *first = NULL;
    *n_values = 0;
    jv_doc_free(doc);
    return NULL;
}

void jv_doc_free(struct jv_doc *doc)
{
    if (!doc)
        return;
    struct jv_chunk *c = doc->chunks;
    while (c) {
        struct jv_chunk *prev = c->prev;
        free(c);
        c = prev;
    }
    free(doc->text);
    free(doc);
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
    if (!obj || obj->type != JV_OBJECT)
        return NULL;
    for (const struct jv *c = obj->child; c; c = c->next)
        if (strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

const char *jv_type_name(const struct jv *v)
{
    if (!v)
        return "nothing";
    switch (v->type) {
    case JV_NULL:
        return "null";
    case JV_FALSE:
    case JV_TRUE:
        return "a boolean";
    case JV_NUMBER:
        return "a number";
    case JV_STRING:
        return "a string";
    case JV_ARRAY:
        return "an array";
    case JV_OBJECT:
        return "an object";
    }
    return "?";
}
