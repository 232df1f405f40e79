/* The outbox block of one report (see chstore_block.h). */
#include "chstore_block.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "chhash.h"
#include "chnative.h"
#include "chshard.h"
#include "growbuf.h"

/* Level 1, not wl_compress's 3: on drive.py's rows (bench/reconciler/bench_ingest, 16:58 UTC)
 * level 1 took ~0.6x the CPU of level 3 and stored 10.2 instead of 11.7 bytes per flow; level -1
 * was no faster and 13.6 bytes. The block lives in the outbox only until shipped. */
#define CHBLOCK_ZSTD_LEVEL 1
/* Scratch larger than this is given back after each block instead of kept for the next one. */
#define CHBLOCK_KEEP_BYTES (4u << 20)

/* Per ingest thread: the zstd context (its ~1 MB of tables) and the scratch for the block and its
 * compressed form, reused from report to report. Allocating them per report cost more in page
 * faults than the compression itself (bench/reconciler/bench_ingest). Freed at thread exit. */
struct scratch {
    ZSTD_CCtx *cctx;
    char *raw, *z;
    size_t raw_cap, z_cap;
    bool registered;
};

static _Thread_local struct scratch tl;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;
static bool tl_key_ok;

static void scratch_drop(void *arg)
{
    struct scratch *s = arg;
    ZSTD_freeCCtx(s->cctx);
    free(s->raw);
    free(s->z);
    s->cctx = NULL;
    s->raw = s->z = NULL;
    s->raw_cap = s->z_cap = 0;
}

static void tl_key_init(void)
{
    tl_key_ok = pthread_key_create(&tl_key, scratch_drop) == 0;
}

/* buf grown to at least n bytes (contents not kept); -1 when out of memory. */
static int grow(char **buf, size_t *cap, size_t n)
{
    *buf = gb_fresh(*buf, cap, n);
    return *buf ? 0 : -1;
}

/* The scratch after a block: kept when registered for the thread-exit free and small enough. */
static void scratch_done(void)
{
    if (!tl.registered) {
        pthread_once(&tl_once, tl_key_init);
        tl.registered = tl_key_ok && pthread_setspecific(tl_key, &tl) == 0;
    }
    if (!tl.registered || tl.raw_cap > CHBLOCK_KEEP_BYTES || tl.z_cap > CHBLOCK_KEEP_BYTES) {
        free(tl.raw);
        free(tl.z);
        tl.raw = tl.z = NULL;
        tl.raw_cap = tl.z_cap = 0;
    }
    if (!tl.registered) {
        ZSTD_freeCCtx(tl.cctx);
        tl.cctx = NULL;
    }
}

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n ? n : 1);
    if (d)
        memcpy(d, p, n);
    return d;
}

int chblock_build(const struct chnative *nat, int64_t ws_us, const char *agent_id, const char *seq,
                  struct chblock *out)
{
    memset(out, 0, sizeof *out);
    out->key = chshard_key(agent_id, strlen(agent_id), strtoull(seq, NULL, 10));
    size_t cap = chnative_size(nat);
    if (!cap || grow(&tl.raw, &tl.raw_cap, cap) < 0) {
        scratch_done();
        return -1;
    }
    char *raw = tl.raw;
    size_t n = chnative_write(nat, (uint32_t)(ws_us / 1000000), raw);
    out->raw_len = n;
    size_t zl = 0;
    if ((tl.cctx || (tl.cctx = ZSTD_createCCtx())) &&
        grow(&tl.z, &tl.z_cap, ZSTD_compressBound(n)) == 0) {
        zl = ZSTD_compressCCtx(tl.cctx, tl.z, tl.z_cap, raw, n, CHBLOCK_ZSTD_LEVEL);
        if (ZSTD_isError(zl))
            zl = 0;
    }
    if (zl && zl < n) {
        out->data = dup_bytes(tl.z, zl);
        out->len = zl;
        out->coding = "zstd";
    } else {
        out->data = dup_bytes(raw, n);
        out->len = n;
        out->coding = "identity";
    }
    int rc = 0;
    if (!out->data) {
        memset(out, 0, sizeof *out);
        rc = -1;
    }
    scratch_done();
    return rc;
}

void chblock_free(struct chblock *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

size_t chblock_frame(const char *coding, const char *data, size_t len, size_t raw_len, char *out)
{
    unsigned char method = strcmp(coding, "zstd") == 0       ? 0x90
                           : strcmp(coding, "identity") == 0 ? 0x02
                                                             : 0;
    /* ClickHouse refuses a compressed block over 1 GiB (DBMS_MAX_COMPRESSED_SIZE) */
    if (!method || len + 9 > (UINT32_C(1) << 30) || raw_len > UINT32_MAX)
        return 0;
    unsigned char *h = (unsigned char *)out + 16;
    uint32_t sizes[2] = {(uint32_t)(len + 9), (uint32_t)raw_len}; /* little-endian, as loaded */
    h[0] = method;
    memcpy(h + 1, sizes, 8);
    memcpy(h + 9, data, len);
    uint64_t sum[2];
    chhash_city128((const char *)h, len + 9, sum);
    memcpy(out, sum, 16);
    return CHBLOCK_FRAME_HEAD + len;
}
