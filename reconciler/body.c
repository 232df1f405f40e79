/* Bounded, streaming decoding of compressed request bodies (see body.h). */
#include "body.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#define BODY_CHUNK (64 * 1024) /* the output grows by at most this much beyond what is used */

/* ---- Content-Encoding ------------------------------------------------------------------- */

static const struct {
    const char *name;
    enum body_coding coding;
} CODINGS[] = {
    {"identity", BODY_IDENTITY}, {"gzip", BODY_GZIP}, {"x-gzip", BODY_GZIP},
    {"deflate", BODY_DEFLATE},   {"zstd", BODY_ZSTD},
};

const char *body_coding_name(enum body_coding coding)
{
    switch (coding) {
    case BODY_IDENTITY:
        return "identity";
    case BODY_GZIP:
        return "gzip";
    case BODY_DEFLATE:
        return "deflate";
    case BODY_ZSTD:
        return "zstd";
    }
    return "?";
}

int body_coding_of(const char *header, enum body_coding *coding, struct body_error *e)
{
    *coding = BODY_IDENTITY;
    if (!header)
        return 0;
    /* a list "a, b" names the codings in the order they were applied */
    const char *p = header;
    int n_real = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        size_t len = (size_t)(p - start);
        if (len == 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < sizeof(CODINGS) / sizeof(CODINGS[0]); i++) {
            if (strlen(CODINGS[i].name) == len && strncasecmp(start, CODINGS[i].name, len) == 0) {
                known = true;
                if (CODINGS[i].coding != BODY_IDENTITY) {
                    *coding = CODINGS[i].coding;
                    n_real++;
                }
            }
        }
        e->status = 415;
        if (!known) {
            snprintf(e->msg, sizeof(e->msg),
                     "Content-Encoding \"%.*s\" is not supported: send gzip, deflate, zstd or "
                     "identity",
                     (int)(len > 40 ? 40 : len), start);
            return -1;
        }
    }
    if (n_real > 1) {
        e->status = 415;
        snprintf(e->msg, sizeof(e->msg),
                 "Content-Encoding \"%.60s\" applies more than one coding: send one of gzip, "
                 "deflate, zstd",
                 header);
        return -1;
    }
    return 0;
}

/* ---- the growing output ----------------------------------------------------------------- */

struct sink {
    char *buf;
    size_t len, cap, max;
};

/* Room for at least one more byte beyond len, never more than max + 1 in all (the extra byte is
 * how an overflow is seen, and later holds the NUL). */
static int sink_grow(struct sink *s)
{
    if (s->cap > s->len)
        return 0;
    size_t cap = s->cap ? s->cap * 2 : BODY_CHUNK;
    if (cap > s->max + 1)
        cap = s->max + 1;
    if (cap <= s->len)
        return -1;
    char *p = realloc(s->buf, cap);
    if (!p)
        return -1;
    s->buf = p;
    s->cap = cap;
    return 0;
}

static int fail(struct body_error *e, int status, const char *fmt, const char *what)
{
    e->status = status;
    snprintf(e->msg, sizeof(e->msg), fmt, what);
    return -1;
}

static int too_large(struct body_error *e, enum body_coding coding, size_t max)
{
    e->status = 413;
    snprintf(e->msg, sizeof(e->msg),
             "%s body decodes to more than the limit of %zu bytes: send smaller batches",
             body_coding_name(coding), max);
    return -1;
}

/* ---- zlib: gzip and deflate ------------------------------------------------------------- */

/* HTTP's "deflate" is the zlib format (RFC 9110), but some clients send raw deflate: a zlib
 * stream starts with a header whose check bits make it a multiple of 31. */
static bool looks_zlib(const unsigned char *in, size_t len)
{
    return len >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 &&
           ((unsigned)in[0] << 8 | in[1]) % 31 == 0;
}

static int inflate_all(enum body_coding coding, const char *in, size_t in_len, struct sink *s,
                       struct body_error *e)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    int wbits = coding == BODY_GZIP                             ? 15 + 16
                : looks_zlib((const unsigned char *)in, in_len) ? 15
                                                                : -15;
    if (inflateInit2(&z, wbits) != Z_OK)
        return fail(e, 500, "cannot start the %s decoder", body_coding_name(coding));
    int rc = -1;
    z.next_in = (Bytef *)(uintptr_t)in;
    size_t left = in_len;
    for (;;) {
        if (z.avail_in == 0 && left) {
            z.avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
            left -= z.avail_in;
        }
        if (sink_grow(s) < 0) {
            if (s->len >= s->max)
                too_large(e, coding, s->max);
            else
                fail(e, 500, "out of memory decoding %s", body_coding_name(coding));
            break;
        }
        size_t room = s->cap - s->len;
        z.next_out = (Bytef *)s->buf + s->len;
        z.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
        uInt before = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        s->len += before - z.avail_out;
        if (s->len > s->max) {
            too_large(e, coding, s->max);
            break;
        }
        if (zr == Z_STREAM_END) {
            if (z.avail_in == 0 && left == 0) {
                rc = 0;
                break;
            }
            /* gzip allows several members one after another (RFC 1952 2.2) */
            if (coding == BODY_GZIP && inflateReset(&z) == Z_OK)
                continue;
            fail(e, 400, "data after the end of the %s stream", body_coding_name(coding));
            break;
        }
        if (zr == Z_BUF_ERROR && z.avail_in == 0 && left == 0) {
            fail(e, 400, "the %s stream is truncated", body_coding_name(coding));
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            e->status = 400;
            snprintf(e->msg, sizeof(e->msg), "the %s stream is corrupt: %s",
                     body_coding_name(coding), z.msg ? z.msg : "invalid data");
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}

/* ---- zstd ------------------------------------------------------------------------------- */

/* The common case in one call: the body is one zstd frame that states its decoded size (the
 * agent's ZSTD_compress writes it, common/compress.c), within max. The buffer is allocated once at
 * that size (+ 1 for the NUL) and the frame decoded straight into it, instead of streaming into a
 * buffer doubled from 64 KiB (three copies of a 350 KB report). 0 when done; 1 when the body is
 * anything else or the frame does not decode to exactly its stated size: the streaming decoder
 * then decides, with its own errors (nothing is kept from here). zstd checks the stated size
 * against what it decodes, so a frame cannot make this write past the buffer. */
static int unzstd_sized(const char *in, size_t in_len, struct sink *s)
{
    unsigned long long n = ZSTD_getFrameContentSize(in, in_len);
    if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR || n > s->max ||
        ZSTD_findFrameCompressedSize(in, in_len) != in_len)
        return 1;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    char *buf = d ? malloc((size_t)n + 1) : NULL;
    size_t got = buf ? ZSTD_decompressDCtx(d, buf, (size_t)n, in, in_len) : 0;
    ZSTD_freeDCtx(d);
    if (!buf || ZSTD_isError(got) || got != n) {
        free(buf);
        return 1;
    }
    s->buf = buf;
    s->len = (size_t)n;
    s->cap = (size_t)n + 1;
    return 0;
}

static int unzstd_all(const char *in, size_t in_len, struct sink *s, struct body_error *e)
{
    if (unzstd_sized(in, in_len, s) == 0)
        return 0;
    ZSTD_DStream *d = ZSTD_createDStream();
    if (!d)
        return fail(e, 500, "cannot start the %s decoder", "zstd");
    int rc = -1;
    ZSTD_inBuffer zin = {in, in_len, 0};
    size_t last = 1; /* 0 once a frame is complete */
    for (;;) {
        if (zin.pos == zin.size && last == 0) {
            rc = 0;
            break;
        }
        if (sink_grow(s) < 0) {
            if (s->len >= s->max)
                too_large(e, BODY_ZSTD, s->max);
            else
                fail(e, 500, "out of memory decoding %s", "zstd");
            break;
        }
        ZSTD_outBuffer zout = {s->buf + s->len, s->cap - s->len, 0};
        size_t before_in = zin.pos;
        last = ZSTD_decompressStream(d, &zout, &zin);
        s->len += zout.pos;
        if (ZSTD_isError(last)) {
            e->status = 400;
            snprintf(e->msg, sizeof(e->msg), "the zstd stream is corrupt: %s",
                     ZSTD_getErrorName(last));
            break;
        }
        if (s->len > s->max) {
            too_large(e, BODY_ZSTD, s->max);
            break;
        }
        /* no input used, no output made and the frame not done: the input ended early */
        if (zin.pos == zin.size && zin.pos == before_in && zout.pos == 0 && last != 0) {
            fail(e, 400, "the %s stream is truncated", "zstd");
            break;
        }
    }
    ZSTD_freeDStream(d);
    return rc;
}

int body_decode(enum body_coding coding, const char *in, size_t in_len, size_t max_out, char **out,
                size_t *out_len, struct body_error *e)
{
    struct sink s = {.max = max_out};
    int rc;
    *out = NULL;
    *out_len = 0;
    if (coding == BODY_IDENTITY) {
        if (in_len > max_out)
            return too_large(e, coding, max_out);
        s.buf = malloc(in_len + 1);
        if (!s.buf)
            return fail(e, 500, "out of memory (%s)", "identity");
        memcpy(s.buf, in, in_len);
        s.len = in_len;
        s.cap = in_len + 1;
        rc = 0;
    } else if (coding == BODY_ZSTD) {
        rc = unzstd_all(in, in_len, &s, e);
    } else {
        rc = inflate_all(coding, in, in_len, &s, e);
    }
    if (rc == 0 && s.len == s.cap) {
        char *p = realloc(s.buf, s.len + 1);
        if (!p) {
            rc = fail(e, 500, "out of memory (%s)", body_coding_name(coding));
        } else {
            s.buf = p;
        }
    }
    if (rc < 0) {
        free(s.buf);
        return -1;
    }
    s.buf[s.len] = 0;
    *out = s.buf;
    *out_len = s.len;
    return 0;
}
