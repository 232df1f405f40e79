/* Log shippers' forms of transfer records (see fluent.h). */
#include "fluent.h"

#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonw.h"
#include "timeutil.h"

#define FL_MAX_DEPTH 64

/* ---- records under `log` / `message` ---------------------------------------------------- */

int fl_unwrap(const struct jv *rec, struct jv_doc **doc, const struct jv **inner, const char **key,
              char *msg, size_t msglen)
{
    static const char *const keys[] = {"log", "message"};
    *doc = NULL;
    *inner = rec;
    *key = NULL;
    if (!rec || rec->type != JV_OBJECT || jv_get(rec, "service"))
        return 0;
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const struct jv *v = jv_get(rec, keys[k]);
        if (!v || v->type != JV_STRING)
            continue;
        size_t lead = 0;
        while (lead < v->n && (v->s[lead] == ' ' || v->s[lead] == '\t'))
            lead++;
        if (lead == v->n || v->s[lead] != '{')
            continue;
        struct jv *first;
        size_t n;
        struct jv_error je;
        /* a tail input keeps the line's newline only when told to; allow one value */
        struct jv_doc *d = jv_parse(v->s, v->n, false, &first, &n, &je);
        if (!d) {
            snprintf(msg, msglen, "the JSON line in \"%s\" does not parse: %s (byte %zu)", keys[k],
                     je.msg, je.offset);
            return -1;
        }
        if (first->type != JV_OBJECT) {
            jv_doc_free(d);
            continue;
        }
        *doc = d;
        *inner = first;
        *key = keys[k];
        return 0;
    }
    return 0;
}

const char *fl_unsupported(const struct jv *rec)
{
    if (!rec || rec->type != JV_OBJECT || jv_get(rec, "service"))
        return NULL;
    const struct jv *v = jv_get(rec, "version");
    if (jv_get(rec, "short_message") && v && v->type == JV_STRING)
        return "a GELF message (Fluent Bit format gelf) is not a transfer record: use format "
               "json_lines";
    if (jv_get(rec, "resourceLogs"))
        return "OTLP JSON logs are not transfer records: use Fluent Bit format json_lines or "
               "Vector codec json";
    return NULL;
}

/* ---- numbers as text -------------------------------------------------------------------- */

static bool digits_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

bool fl_uint(const struct jv *v, uint64_t *out)
{
    if (!v)
        return false;
    if (v->type == JV_NUMBER)
        return jv_u64(v, out);
    return v->type == JV_STRING && digits_u64(v->s, v->n, out);
}

/* ---- the shipper's record time ---------------------------------------------------------- */

/* Epoch seconds, ms, µs or ns, decided by magnitude (see fluent.h). */
static int epoch_any_int(uint64_t u, int64_t *us)
{
    if (u < 100000000000ULL) /* 1e11 s is the year 5138 */
        *us = (int64_t)u * TM_USEC_PER_SEC;
    else if (u < 100000000000000ULL) /* 1e11 ms is 1973: Fluent Bit's epoch_ms */
        *us = (int64_t)u * 1000;
    else if (u < 100000000000000000ULL)
        *us = (int64_t)u;
    else
        *us = (int64_t)(u / 1000);
    return 0;
}

static int epoch_any_double(double d, int64_t *us)
{
    if (!isfinite(d) || d < 0)
        return -1;
    if (d >= 1e17)
        d /= 1e9;
    else if (d >= 1e14)
        d /= 1e6;
    else if (d >= 1e11)
        d /= 1e3;
    return tm_from_epoch_double(d, us);
}

int fl_record_time(const struct jv *rec, const char **key, int64_t *us)
{
    static const char *const keys[] = {"date", "timestamp", "@timestamp"};
    const struct jv *v = NULL;
    *key = NULL;
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]) && !v; k++)
        if ((v = jv_get(rec, keys[k])) != NULL)
            *key = keys[k];
    if (!v)
        return 1;
    uint64_t u;
    if (fl_uint(v, &u))
        return epoch_any_int(u, us);
    if (v->type == JV_NUMBER)
        return v->neg ? -1 : epoch_any_double(v->d, us);
    if (v->type != JV_STRING || v->n > 64)
        return -1;
    if (tm_parse_rfc3339(v->s, us) == 0)
        return 0;
    /* java_sql_timestamp: "%Y-%m-%d %H:%M:%S.%06u", no zone; Fluent Bit formats it in UTC */
    char t[80];
    if (v->n >= 19 && v->s[10] == ' ') {
        snprintf(t, sizeof(t), "%sZ", v->s);
        if (tm_parse_rfc3339(t, us) == 0)
            return 0;
    }
    char *end;
    double d = strtod(v->s, &end);
    if (end != v->s && *end == 0)
        return epoch_any_double(d, us);
    return -1;
}

/* ---- msgpack ---------------------------------------------------------------------------- */

int fl_content_type(bool transfers, const char *content_type, bool *msgpack, char *msg,
                    size_t msglen)
{
    *msgpack = false;
    if (!content_type)
        return 0;
    size_t n = strcspn(content_type, "; \t");
    if ((n == 19 && strncasecmp(content_type, "application/msgpack", n) == 0) ||
        (n == 21 && strncasecmp(content_type, "application/x-msgpack", n) == 0)) {
        if (!transfers) {
            snprintf(msg, msglen, "msgpack is accepted on /v1/transfers only: send JSON here");
            return -1;
        }
        *msgpack = true;
    }
    return 0;
}

struct mp_out {
    struct evbuffer *out;
    char *msg;
    size_t msglen;
};

static int mp_fail(struct mp_out *o, const char *what, long event)
{
    snprintf(o->msg, o->msglen, "msgpack event %ld: %s", event, what);
    return -1;
}

static int mp_string(struct mp_out *o, const char *p, uint32_t n, long event)
{
    if (memchr(p, 0, n))
        return mp_fail(o, "a string holds U+0000", event);
    char *s = malloc((size_t)n + 1);
    if (!s)
        return mp_fail(o, "out of memory", event);
    memcpy(s, p, n);
    s[n] = 0;
    jw_str(o->out, s);
    free(s);
    return 0;
}

static int mp_value(struct mp_out *o, const msgpack_object *v, int depth, long event);

/* The members of a map, without the braces. */
static int mp_members(struct mp_out *o, const msgpack_object *map, int depth, long event)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            return mp_fail(o, "a map key is not a string", event);
        if (i)
            evbuffer_add(o->out, ",", 1);
        if (mp_string(o, kv->key.via.str.ptr, kv->key.via.str.size, event) < 0)
            return -1;
        evbuffer_add(o->out, ":", 1);
        if (mp_value(o, &kv->val, depth + 1, event) < 0)
            return -1;
    }
    return 0;
}

static int mp_value(struct mp_out *o, const msgpack_object *v, int depth, long event)
{
    if (depth > FL_MAX_DEPTH)
        return mp_fail(o, "nested deeper than 64 levels", event);
    switch (v->type) {
    case MSGPACK_OBJECT_NIL:
        evbuffer_add(o->out, "null", 4);
        return 0;
    case MSGPACK_OBJECT_BOOLEAN:
        evbuffer_add_printf(o->out, "%s", v->via.boolean ? "true" : "false");
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        evbuffer_add_printf(o->out, "%" PRIu64, v->via.u64);
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        evbuffer_add_printf(o->out, "%" PRId64, v->via.i64);
        return 0;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (isfinite(v->via.f64))
            evbuffer_add_printf(o->out, "%.17g", v->via.f64);
        else
            evbuffer_add(o->out, "null", 4);
        return 0;
    case MSGPACK_OBJECT_STR:
        return mp_string(o, v->via.str.ptr, v->via.str.size, event);
    case MSGPACK_OBJECT_BIN:
        return mp_string(o, v->via.bin.ptr, v->via.bin.size, event);
    case MSGPACK_OBJECT_ARRAY:
        evbuffer_add(o->out, "[", 1);
        for (uint32_t i = 0; i < v->via.array.size; i++) {
            if (i)
                evbuffer_add(o->out, ",", 1);
            if (mp_value(o, &v->via.array.ptr[i], depth + 1, event) < 0)
                return -1;
        }
        evbuffer_add(o->out, "]", 1);
        return 0;
    case MSGPACK_OBJECT_MAP:
        evbuffer_add(o->out, "{", 1);
        if (mp_members(o, v, depth, event) < 0)
            return -1;
        evbuffer_add(o->out, "}", 1);
        return 0;
    case MSGPACK_OBJECT_EXT:
        return mp_fail(o, "an extension value inside a record is not supported", event);
    }
    return mp_fail(o, "unknown msgpack type", event);
}

/* The event time as JSON number text; 1 for a group start/end marker, -1 when not a time. */
static int mp_time(const msgpack_object *ts, char *out, size_t cap)
{
    switch (ts->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(out, cap, "%" PRIu64, ts->via.u64);
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return ts->via.i64 == -1 || ts->via.i64 == -2 ? 1 : -1;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(ts->via.f64) || ts->via.f64 < 0)
            return -1;
        snprintf(out, cap, "%.17g", ts->via.f64);
        return 0;
    case MSGPACK_OBJECT_EXT: {
        /* Fluent's EventTime: ext type 0, big-endian u32 seconds, u32 nanoseconds */
        if (ts->via.ext.type != 0 || ts->via.ext.size != 8)
            return -1;
        const unsigned char *p = (const unsigned char *)ts->via.ext.ptr;
        uint32_t sec = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        uint32_t ns = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
        if (sec >= UINT32_MAX - 1 && ns == 0)
            return 1;
        if (ns >= 1000000000u)
            return -1;
        snprintf(out, cap, "%" PRIu32 ".%09" PRIu32, sec, ns);
        return 0;
    }
    default:
        return -1;
    }
}

static bool map_has(const msgpack_object *map, const char *key)
{
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
            memcmp(k->via.str.ptr, key, kl) == 0)
            return true;
    }
    return false;
}

/* One event → one JSON object appended to o->out (with a leading ',' unless first). Returns 1
 * when written, 0 for a skipped group marker, -1 on error. */
static int mp_event(struct mp_out *o, const msgpack_object *root, long event, bool first)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size != 2)
        return mp_fail(o, "expected [[time, metadata], record] or [time, record]", event);
    const msgpack_object *header = &root->via.array.ptr[0];
    const msgpack_object *ts = header;
    if (header->type == MSGPACK_OBJECT_ARRAY) {
        if (header->via.array.size < 1)
            return mp_fail(o, "an empty event header", event);
        ts = &header->via.array.ptr[0];
    }
    char tbuf[40];
    int tr = mp_time(ts, tbuf, sizeof(tbuf));
    if (tr < 0)
        return mp_fail(o, "the event time is not an integer, float or EventTime", event);
    if (tr == 1)
        return 0;
    const msgpack_object *rec = &root->via.array.ptr[1];
    if (rec->type != MSGPACK_OBJECT_MAP)
        return mp_fail(o, "the record is not a map", event);
    if (!first)
        evbuffer_add(o->out, ",", 1);
    /* {"date": time, ...the record's members}; a record's own date is kept instead */
    bool own_date = map_has(rec, "date");
    evbuffer_add(o->out, "{", 1);
    if (!own_date)
        evbuffer_add_printf(o->out, "\"date\":%s%s", tbuf, rec->via.map.size ? "," : "");
    if (mp_members(o, rec, 1, event) < 0)
        return -1;
    evbuffer_add(o->out, "}", 1);
    return 1;
}

/* Big-endian unsigned of n bytes at p. */
static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = v << 8 | p[k];
    return v;
}

/* Walks the msgpack tokens without building anything and checks that the elements every open
 * container still expects fit in the bytes left (each takes at least one): msgpack-c allocates
 * a container's elements from its declared count before reading them, so a 6-byte body declaring
 * 2^31 elements would otherwise ask for 48 GiB. With the check, what it allocates stays within
 * 24 bytes per body byte. Returns the offset of the first token that breaks it, or len. */
static size_t mp_counts_fit(const unsigned char *p, size_t len)
{
    static const unsigned char fixed[] = {4, 8, 1, 2, 4, 8, 1, 2, 4, 8}; /* 0xca..0xd3 */
    uint64_t pending = 0; /* elements the open containers still expect */
    size_t i = 0;
    while (i < len) {
        size_t at = i;
        unsigned char t = p[i++];
        if (pending)
            pending--; /* this token fills one of them */
        uint64_t n = 0, skip = 0;
        int lenb = 0; /* bytes of a length field */
        if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
            /* a value in the type byte */
        } else if (t <= 0x8f) {
            n = 2u * (t & 0x0fu);
        } else if (t <= 0x9f) {
            n = t & 0x0fu;
        } else if (t <= 0xbf) {
            skip = t & 0x1fu;
        } else if (t == 0xc4 || t == 0xd9) {
            lenb = 1;
        } else if (t == 0xc5 || t == 0xda) {
            lenb = 2;
        } else if (t == 0xc6 || t == 0xdb) {
            lenb = 4;
        } else if (t >= 0xc7 && t <= 0xc9) { /* ext 8/16/32: length, type byte, data */
            lenb = t == 0xc7 ? 1 : t == 0xc8 ? 2 : 4;
            skip = 1;
        } else if (t >= 0xca && t <= 0xd3) {
            skip = fixed[t - 0xca];
        } else if (t >= 0xd4 && t <= 0xd8) { /* fixext 1..16: type byte, data */
            skip = 1u + (1u << (t - 0xd4));
        } else if (t >= 0xdc && t <= 0xdf) {
            int nb = t == 0xdc || t == 0xde ? 2 : 4;
            if ((size_t)nb > len - i)
                return len; /* truncated: msgpack-c says so */
            n = be(p + i, nb) * (t >= 0xde ? 2u : 1u);
            i += (size_t)nb;
        } else {
            return at; /* 0xc1: never used */
        }
        if (lenb) {
            if ((size_t)lenb > len - i)
                return len;
            skip += be(p + i, lenb);
            i += (size_t)lenb;
        }
        if (skip > len - i)
            return len; /* truncated string or bin: msgpack-c says so */
        i += (size_t)skip;
        pending += n;
        if (pending > len - i)
            return at;
    }
    return len;
}

long fl_msgpack_to_json(const char *buf, size_t len, struct evbuffer *out, char *msg, size_t msglen)
{
    size_t bad = mp_counts_fit((const unsigned char *)buf, len);
    if (bad < len) {
        snprintf(msg, msglen,
                 "msgpack: the container at byte %zu declares more elements than the body holds",
                 bad);
        return -1;
    }
    struct mp_out o = {.out = out, .msg = msg, .msglen = msglen};
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    long events = 0, written = 0;
    evbuffer_add(out, "[", 1);
    while (off < len) {
        size_t at = off;
        msgpack_unpack_return r = msgpack_unpack_next(&u, buf, len, &off);
        if (r == MSGPACK_UNPACK_CONTINUE) {
            snprintf(msg, msglen, "msgpack event %ld is truncated (byte %zu)", events, at);
            written = -1;
            break;
        }
        if (r != MSGPACK_UNPACK_SUCCESS && r != MSGPACK_UNPACK_EXTRA_BYTES) {
            snprintf(msg, msglen, "msgpack event %ld does not decode (byte %zu)", events, at);
            written = -1;
            break;
        }
        int w = mp_event(&o, &u.data, events, written == 0);
        if (w < 0) {
            written = -1;
            break;
        }
        written += w;
        events++;
    }
    msgpack_unpacked_destroy(&u);
    if (written < 0)
        return -1;
    evbuffer_add(out, "]", 1);
    return written;
}
