/* Strict JSON reader with exact integers, UTF-8 validation and JSON paths in errors. */
#include "jsonv.h"

#include "utf8.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JV_CHUNK_NODES 4096

struct jv_chunk {
    struct jv_chunk *prev;
    size_t used;
    struct jv nodes[JV_CHUNK_NODES];
};

struct jv_doc {
    char *text; /* mutable copy of the input (or the caller's, jv_parse_inplace); strings are
                   decoded in place */
    size_t text_cap;
    bool owned; /* text is the document's own */
    struct jv_chunk *chunks;
    size_t n_nodes;
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

/* Freed node chunks are kept per thread (at most JV_CACHE_CHUNKS of 384 KiB: 3 MiB) for the next
 * document: a fresh chunk from malloc is often freshly mapped memory, and its page faults
 * cost more than parsing into it (bench/reconciler/bench_ingest). Freed at thread exit. */
#define JV_CACHE_CHUNKS 8

/* The copy of the input is kept too (one, up to JV_CACHE_TEXT bytes). */
#define JV_CACHE_TEXT (4u << 20)

struct chunk_cache {
    struct jv_chunk *list;
    int n;
    char *text;
    size_t text_cap;
    bool registered;
};

static _Thread_local struct chunk_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_key_ok;

static void cache_drop(void *arg)
{
    struct chunk_cache *cc = arg;
    while (cc->list) {
        struct jv_chunk *c = cc->list;
        cc->list = c->prev;
        free(c);
    }
    cc->n = 0;
    free(cc->text);
    cc->text = NULL;
    cc->text_cap = 0;
}

static void cache_key_init(void)
{
    cache_key_ok = pthread_key_create(&cache_key, cache_drop) == 0;
}

static struct jv_chunk *chunk_get(void)
{
    struct jv_chunk *c = cache.list;
    if (c) {
        cache.list = c->prev;
        cache.n--;
        return c;
    }
    return malloc(sizeof(*c));
}

static bool cache_ready(void)
{
    if (!cache.registered) {
        pthread_once(&cache_once, cache_key_init);
        cache.registered = cache_key_ok && pthread_setspecific(cache_key, &cache) == 0;
    }
    return cache.registered;
}

static void chunk_put(struct jv_chunk *c)
{
    if (!cache_ready() || cache.n >= JV_CACHE_CHUNKS) {
        free(c);
        return;
    }
    c->prev = cache.list;
    cache.list = c;
    cache.n++;
}

/* A buffer of at least n bytes for the input's copy: the kept one when large enough. */
static char *text_get(size_t n, size_t *cap)
{
    if (cache.text && cache.text_cap >= n) {
        char *t = cache.text;
        *cap = cache.text_cap;
        cache.text = NULL;
        cache.text_cap = 0;
        return t;
    }
    *cap = n;
    return malloc(n);
}

static void text_put(char *t, size_t cap)
{
    if (!t)
        return;
    if (cap > JV_CACHE_TEXT || !cache_ready() || cache.text_cap >= cap) {
        free(t);
        return;
    }
    free(cache.text); /* keep the larger one */
    cache.text = t;
    cache.text_cap = cap;
}

static struct jv *node_new(struct parser *ps)
{
    struct jv_chunk *c = ps->doc->chunks;
    if (ps->doc->n_nodes >= JV_MAX_NODES)
        return NULL;
    ps->doc->n_nodes++;
    if (!c || c->used == JV_CHUNK_NODES) {
        c = chunk_get();
        if (!c)
            return NULL;
        c->prev = ps->doc->chunks;
        c->used = 0;
        ps->doc->chunks = c;
    }
    struct jv *v = &c->nodes[c->used++];
    /* a copy of a zero node, not memset: GCC made the memset a `rep stos`, whose start-up cost
     * was most of this function's time (perf annotate, bench_ingest) */
    static const struct jv zero;
    *v = zero;
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

/* A rule of ours, not of JSON's, was broken: the caller answers 422, not 400. */
static int semantic(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int semantic(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->e->msg, sizeof(ps->e->msg), fmt, ap);
    va_end(ap);
    ps->e->offset = (size_t)(ps->p - ps->start);
    ps->e->semantic = true;
    fill_path(ps);
    return -1;
}

/* node_new failed: the node cap or memory. */
static int no_node(struct parser *ps)
{
    if (ps->doc->n_nodes >= JV_MAX_NODES)
        return fail(ps, "more than %u JSON values in one document", JV_MAX_NODES);
    return fail(ps, "out of memory"); /* was a call to itself: unbounded recursion */
}

/* 1 for the four white-space bytes of RFC 8259. */
static const unsigned char ws_byte[256] = {['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [' '] = 1};

/* The scanning loops need no end test: jv_parse's copy of the input ends in a NUL, which is
 * neither white space, a plain string byte, nor a digit, so every loop stops at *end at the
 * latest (a NUL inside the input stops them where it did before, and is refused as before). */
static void skip_ws(struct parser *ps)
{
    while (ws_byte[(unsigned char)*ps->p])
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

/* 1 for the bytes a string holds as they are: printable ASCII (and DEL) but '"' and '\\'. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
};

/* Decodes the string starting after the opening quote in place; *out gets its start. */
static int parse_string(struct parser *ps, const char **out, uint32_t *n)
{
    char *begin = ps->p;
    /* The common case first: a run of printable ASCII needs no decoding and no copying (the
     * bytes are already where they would be written); the loop below takes over at the first
     * quote, backslash, control or non-ASCII byte. */
    char *q = ps->p;
    while (plain_byte[(unsigned char)*q]) /* the NUL after the input stops it (see skip_ws) */
        q++;
    ps->p = q;
    char *w = q;
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
                if (cp == 0)
                    return semantic(ps, "U+0000 is not allowed in a string or key");
                w += utf8_put(w, cp);
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
        size_t k = utf8_seq_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), NULL);
        if (k == 0)
            return fail(ps, "invalid UTF-8 in a string");
        memmove(w, ps->p, k);
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
    v->num = s;
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
        /* 19 digits always fit in 64 bits: the overflow test only from the 20th on (no end
         * tests: the NUL after the input is not a digit, see skip_ws) */
        uint64_t u = 0;
        const char *d0 = ps->p;
        unsigned dg;
        while ((dg = (unsigned)(unsigned char)*ps->p - '0') <= 9 && ps->p - d0 < 19) {
            u = u * 10 + dg;
            ps->p++;
        }
        v->u = u;
        while (*ps->p >= '0' && *ps->p <= '9') {
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
    v->len = (uint32_t)(ps->p - s); /* parse_value sets it again: the same */
    if (v->is_int && !v->overflow) {
        v->d = v->neg ? -(double)v->u : (double)v->u;
    } else {
        /* The byte after the number is a delimiter or the terminating NUL of the copy. */
        char save = *ps->p;
        *ps->p = 0;
        errno = 0;
        v->d = strtod(s, NULL);
        *ps->p = save;
        if (!isfinite(v->d)) {
            ps->p = s;
            int shown = v->len > 40 ? 40 : (int)v->len;
            return semantic(ps, "number %.*s is out of the range of a double", shown, s);
        }
    }
    return 0;
}

static int parse_value(struct parser *ps, struct jv *v);

/* After '[' or '{': skips white space; true (and past it) when the container is closed at once. */
static bool empty_container(struct parser *ps, char close)
{
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return true;
    }
    return false;
}

/* A new last child of v (tail: where the link goes); NULL after the out-of-nodes error. */
static struct jv *append_child(struct parser *ps, struct jv *v, struct jv ***tail)
{
    struct jv *c = node_new(ps);
    if (!c) {
        no_node(ps);
        return NULL;
    }
    **tail = c;
    *tail = &c->next;
    v->n++;
    return c;
}

/* After an element or member (the container's frame popped: errors here belong to it): 1 after
 * a ',', 0 after the closing character, -1 on an error naming what (an array, an object). */
static int next_or_close(struct parser *ps, char close, const char *what)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "truncated JSON: unterminated %s", what);
    if (*ps->p == ',') {
        ps->p++;
        return 1;
    }
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    return fail(ps, "expected ',' or '%c' in an %s", close, what);
}

static int parse_array(struct parser *ps, struct jv *v)
{
    v->type = JV_ARRAY;
    if (empty_container(ps, ']'))
        return 0;
    struct jv **tail = &v->child;
    for (uint32_t i = 0;; i++) {
        ps->depth++;
        ps->stack[ps->depth] = (struct frame){.key = NULL, .idx = i};
        struct jv *c = append_child(ps, v, &tail);
        if (!c || parse_value(ps, c) < 0)
            return -1;
        ps->depth--;
        int more = next_or_close(ps, ']', "array");
        if (more <= 0)
            return more;
    }
}

static int cmp_member(const void *a, const void *b)
{
    const struct jv *x = *(const struct jv *const *)a, *y = *(const struct jv *const *)b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* A key's bit in parse_object's 64-bit filter: (length, first and last byte). */
static inline uint64_t key_bit(const char *key, uint32_t len)
{
    unsigned last = len ? (unsigned char)key[len - 1] : 0;
    return UINT64_C(1) << ((len * 7u + (unsigned char)key[0] * 3u + last) & 63u);
}

/* Objects of up to this many members are checked for a repeated key as each member is read,
 * against the members before it, and only when its bit of the filter is already set: an agent's
 * flow record has up to ~24 members (agentlib/report.c). Larger objects are sorted at their end:
 * O(n log n) for hostile inputs. */
#define JV_PAIRWISE_MEMBERS 32

static int report_duplicate(struct parser *ps, const struct jv *dup)
{
    ps->depth++;
    ps->stack[ps->depth] = (struct frame){.key = dup->key, .idx = 0};
    ps->p = ps->start + dup->off;
    return semantic(ps, "duplicate key \"%.100s\"", dup->key);
}

/* The first member of obj (more than JV_PAIRWISE_MEMBERS) that repeats an earlier key, in
 * document order, reported; 0 when none does. */
static int check_duplicates_sorted(struct parser *ps, const struct jv *obj)
{
    const struct jv *dup = NULL;
    const struct jv **m = malloc(obj->n * sizeof(*m));
    if (!m)
        return fail(ps, "out of memory");
    size_t n = 0;
    for (const struct jv *a = obj->child; a; a = a->next)
        m[n++] = a;
    qsort(m, n, sizeof(*m), cmp_member);
    for (size_t i = 1; i < n; i++)
        if (strcmp(m[i]->key, m[i - 1]->key) == 0 && (!dup || m[i]->off < dup->off))
            dup = m[i];
    free(m);
    return dup ? report_duplicate(ps, dup) : 0;
}

/* Whether member c (just read) repeats the key of a member of obj before it. */
static bool repeats(const struct jv *obj, const struct jv *c)
{
    for (const struct jv *a = obj->child; a != c; a = a->next)
        if (a->key_len == c->key_len && a->key[0] == c->key[0] &&
            memcmp(a->key, c->key, c->key_len) == 0) /* most differ in length or at 0 */
            return true;
    return false;
}

/* Refuses an object whose members repeat a key, naming the first repeat in document order, once
 * the whole object has been read (a syntax error later in it is reported first, as before). */
static int parse_object(struct parser *ps, struct jv *v)
{
    v->type = JV_OBJECT;
    if (empty_container(ps, '}'))
        return 0;
    struct jv **tail = &v->child;
    uint64_t seen = 0; /* keys' bits (key_bit) */
    const struct jv *dup = NULL;
    for (;;) {
        ps->depth++;
        ps->stack[ps->depth] = (struct frame){.key = "", .idx = 0};
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
        struct jv *c = append_child(ps, v, &tail);
        if (!c || parse_value(ps, c) < 0)
            return -1;
        c->key = key;
        c->key_len = klen;
        uint64_t bit = key_bit(key, klen);
        if ((seen & bit) && !dup && v->n <= JV_PAIRWISE_MEMBERS && repeats(v, c))
            dup = c;
        seen |= bit;
        ps->depth--;
        int more = next_or_close(ps, '}', "object");
        if (more < 0)
            return -1;
        if (more == 0) {
            if (v->n > JV_PAIRWISE_MEMBERS)
                return check_duplicates_sorted(ps, v);
            return dup ? report_duplicate(ps, dup) : 0;
        }
    }
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

/* Parses a value and records where its text ends (struct jv's len; parse_value_at sets off). */
static int parse_value(struct parser *ps, struct jv *v)
{
    skip_ws(ps);
    v->off = (uint32_t)(ps->p - ps->start); /* also when parse_value_at fails early */
    int rc = parse_value_at(ps, v);
    v->len = (uint32_t)(ps->p - ps->start) - v->off;
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
    case '"': {
        ps->p++;
        v->type = JV_STRING;
        int rc = parse_string(ps, &v->s, &v->n);
        /* without an escape every byte stays where it was: the text ends at the closing quote */
        v->escaped = rc == 0 && v->s + v->n != ps->p - 1;
        return rc;
    }
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
            utf8_seq_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), NULL) == 0)
            return fail(ps, "invalid UTF-8");
        return fail(ps, "unexpected character '%c'",
                    (unsigned char)*ps->p < 0x80 && (unsigned char)*ps->p >= 0x20 ? *ps->p : '?');
    }
}

/* A new document over text[0..len] (text[len] == 0), or NULL with *e filled; owned: text is the
 * document's own (text_get) and goes back with it. */
static struct jv_doc *doc_new(char *text, size_t text_cap, bool owned, struct jv_error *e)
{
    struct jv_doc *doc = text ? calloc(1, sizeof(*doc)) : NULL;
    if (!doc) {
        if (owned)
            free(text);
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        snprintf(e->path, sizeof(e->path), "$");
        return NULL;
    }
    doc->text = text;
    doc->text_cap = text_cap;
    doc->owned = owned;
    return doc;
}

static bool too_long(size_t len, struct jv_error *e)
{
    if (len <= JV_MAX_LEN)
        return false;
    snprintf(e->msg, sizeof(e->msg), "JSON text of %zu bytes is over the %u-byte limit", len,
             JV_MAX_LEN);
    snprintf(e->path, sizeof(e->path), "$");
    return true;
}

static struct jv_doc *parse_doc(struct jv_doc *doc, size_t len, bool allow_many, struct jv **first,
                                size_t *n_values, struct jv_error *e);

struct jv_doc *jv_parse(const char *buf, size_t len, bool allow_many, struct jv **first,
                        size_t *n_values, struct jv_error *e)
{
    memset(e, 0, sizeof(*e));
    *first = NULL;
    *n_values = 0;
    if (too_long(len, e))
        return NULL;
    size_t cap = 0;
    char *text = text_get(len + 1, &cap);
    struct jv_doc *doc = doc_new(text, cap, true, e);
    if (!doc)
        return NULL;
    memcpy(doc->text, buf, len);
    doc->text[len] = 0;
    return parse_doc(doc, len, allow_many, first, n_values, e);
}

struct jv_doc *jv_parse_inplace(char *buf, size_t len, bool allow_many, struct jv **first,
                                size_t *n_values, struct jv_error *e)
{
    memset(e, 0, sizeof(*e));
    *first = NULL;
    *n_values = 0;
    if (too_long(len, e))
        return NULL;
    struct jv_doc *doc = doc_new(buf, 0, false, e);
    if (!doc)
        return NULL;
    buf[len] = 0; /* the caller's promise, made true: the scans stop at it (skip_ws) */
    return parse_doc(doc, len, allow_many, first, n_values, e);
}

static struct jv_doc *parse_doc(struct jv_doc *doc, size_t len, bool allow_many, struct jv **first,
                                size_t *n_values, struct jv_error *e)
{
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
        chunk_put(c);
        c = prev;
    }
    if (doc->owned)
        text_put(doc->text, doc->text_cap);
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

bool jv_u64(const struct jv *v, uint64_t *out)
{
    if (!v || v->type != JV_NUMBER || !v->is_int || v->overflow || (v->neg && v->u != 0))
        return false;
    *out = v->u;
    return true;
}

bool jv_i64(const struct jv *v, int64_t *out)
{
    if (!v || v->type != JV_NUMBER || !v->is_int || v->overflow)
        return false;
    if (v->neg) {
        if (v->u > (uint64_t)INT64_MAX + 1)
            return false;
        *out = v->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v->u;
    } else {
        if (v->u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)v->u;
    }
    return true;
}

const char *jv_num_text(const struct jv *v, char *buf, size_t cap)
{
    if (!v || v->type != JV_NUMBER || v->len >= cap)
        return NULL;
    memcpy(buf, v->num, v->len);
    buf[v->len] = 0;
    return buf;
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
