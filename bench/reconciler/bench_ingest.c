/* Ingest parse cost per flow record, in-process (no HTTP, no PostgreSQL): ingest_parse of agent
 * reports shaped like bench/clickhouse/drive.py's (1,000 socket flows each), once as PostgreSQL
 * keeps them (COPY text, then flow_pack_rows: the same rows as flow_packed rows) and once with
 * analytics.clickhouse (the flows as Native columns, then chblock_build: the outbox block, zstd).
 * Prints CPU ns per flow for each (and for jv_parse alone, the JSON reader inside ingest_parse),
 * the median of ROUNDS rounds of ITER reports, and what the flusher does with a stored block
 * (ZSTD_decompress before e747a0b, chblock_frame since). With DIR, the first round's blocks are
 * written to DIR/native.bin (decompressed, one after another) and DIR/framed.bin (framed): the
 * same rows for an INSERT … FORMAT Native with and without decompress=1.
 *   bench_ingest [ITER] [ROUNDS] [DIR] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "body.h"
#include "chstore_block.h"
#include "flow_pack.h"
#include "config.h"
#include "ingest.h"
#include "jsonv.h"
#include "timeutil.h"

#define FLOWS 1000

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One report as drive.py posts it by default (bench/lib/ingestlib.py, WL_BENCH_BODY=agent): what
 * wanledger-agent writes (agentlib/report.c: compact JSON, every member it sends, those ingest
 * ignores too), before the delivery's compression. version 2 (the agent's): the report's one
 * process once in procs[], each flow naming it; version 1: its members in every flow, as agents
 * before version 2 send them (measured beside it: "the version 1 form"). */
static char *report(int r, const char *ws_text, int version, size_t *len)
{
    size_t cap = 600 * FLOWS + 1024, n = 0;
    char *b = malloc(cap), owner[512];
    if (!b)
        exit(1);
    snprintf(owner, sizeof owner,
             "\"pid\":%d,\"ppid\":%d,\"uid\":1000,\"program\":\"python3\",\"user\":\"u%d\","
             "\"exe\":\"/usr/bin/python3.11\",\"workflow\":\"wf%d\","
             "\"cgroup\":\"/user.slice/user-1000.slice/session-%d.scope\","
             "\"unit\":\"session-%d.scope\"",
             4000 + r, 1 + r % 97, r % 50, r % 20, r % 40, r % 40);
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"version\":%d,\"host\":\"h%d\",\"agent_id\":\"agent-%d\",\"seq\":1,"
                          "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":0,"
                          "\"sampling\":{\"k\":%d,\"threshold\":0,\"flows_seen\":%d},"
                          "\"spool\":{\"dropped_reports\":0},",
                          version, r, r, ws_text, FLOWS, FLOWS);
    if (version == 2)
        n += (size_t)snprintf(b + n, cap - n, "\"procs\":[{%s}],", owner);
    n += (size_t)snprintf(b + n, cap - n, "\"flows\":[");
    for (int k = 0; k < FLOWS; k++)
        n += (size_t)snprintf(
            b + n, cap - n,
            "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.%d.%d:%d\","
            "\"remote\":\"10.2.0.%d:5201\",\"role\":\"client\",\"tx_bytes\":%d,"
            "\"rx_bytes\":%d,\"tx_calls\":%d,\"rx_calls\":%d,%s}",
            k ? "," : "", r % 250, k % 250, 20000 + k, k % 200 + 1, 1000 * r + k, k, k % 7 + 1,
            k % 5 + 1, version == 2 ? "\"proc\":0" : owner);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    *len = n;
    return b;
}

/* The benchmark's configuration, with more members (text starting with ", ") at its end. */
static struct cfg *bench_cfg(const char *more)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"window_seconds\": 60, \"database\": \"dbname=x\", "
             "\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
             " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]%s}",
             more);
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("bench.json", text, &errs);
    if (!cfg)
        cfg_errors_print(NULL, "bench.json", &errs, stderr);
    return cfg;
}

int main(int argc, char **argv)
{
    int iter = argc > 1 ? atoi(argv[1]) : 50, rounds = argc > 2 ? atoi(argv[2]) : 5;
    FILE *dump_native = NULL, *dump_framed = NULL; /* DIR: the first round's blocks, both ways */
    if (argc > 3) {
        char path[512];
        snprintf(path, sizeof path, "%s/native.bin", argv[3]);
        dump_native = fopen(path, "wb");
        snprintf(path, sizeof path, "%s/framed.bin", argv[3]);
        dump_framed = fopen(path, "wb");
        if (!dump_native || !dump_framed)
            return 1;
    }
    char *scratch = malloc(1 << 22);
    if (!scratch)
        return 1;
    if (iter < 1 || rounds < 1 || rounds > 100)
        return 2;
    struct cfg *cfg = bench_cfg(""),
               *chcfg = bench_cfg(", \"analytics\": {\"clickhouse\": {\"url\": "
                                  "\"http://127.0.0.1:8123\", \"database\": \"wl\"}}");
    if (!cfg || !chcfg)
        return 1;
    int64_t now = tm_now_us();
    int64_t ws = tm_window_start(now, 60) - 120 * TM_USEC_PER_SEC;
    char ws_text[TM_RFC3339_LEN];
    tm_format_rfc3339(ws, ws_text);
    enum { NB = 8 };
    char *body[NB], *body1[NB];
    size_t len[NB], len1[NB];
    for (int r = 0; r < NB; r++) {
        body[r] = report(r, ws_text, 2, &len[r]);
        body1[r] = report(r, ws_text, 1, &len1[r]);
    }
    /* each body zstd-compressed at level 3 as the agent sends it (ZSTD_compress: the frame states
     * its size) and without the size (a streaming client): body_decode's two ways */
    char *zs[NB], *zu[NB];
    size_t zsl[NB], zul[NB];
    ZSTD_CCtx *cz = ZSTD_createCCtx();
    if (!cz)
        return 1;
    for (int r = 0; r < NB; r++) {
        size_t cap = ZSTD_compressBound(len[r]);
        zs[r] = malloc(cap);
        zu[r] = malloc(cap);
        if (!zs[r] || !zu[r])
            return 1;
        zsl[r] = ZSTD_compress(zs[r], cap, body[r], len[r], 3);
        ZSTD_CCtx_reset(cz, ZSTD_reset_session_and_parameters);
        ZSTD_CCtx_setParameter(cz, ZSTD_c_compressionLevel, 3);
        ZSTD_CCtx_setParameter(cz, ZSTD_c_contentSizeFlag, 0);
        zul[r] = ZSTD_compress2(cz, zu[r], cap, body[r], len[r]);
        if (ZSTD_isError(zsl[r]) || ZSTD_isError(zul[r]) ||
            ZSTD_getFrameContentSize(zu[r], zul[r]) != ZSTD_CONTENTSIZE_UNKNOWN)
            return 1;
    }
    ZSTD_freeCCtx(cz);
    double parse[100], bds[100], bdu[100], block[100], json[100], packt[100], parse_ch[100],
        dec[100], frm[100], parse_v1[100];
    struct flow_pack pk = {0};
    size_t zbytes = 0, raw = 0;
    for (int k = 0; k < rounds; k++) {
        double tp = 0, tb = 0, tj = 0, tk = 0, tc = 0, td = 0, tf = 0, ts = 0, tu = 0, t1v = 0;
        for (int i = 0; i < iter; i++) { /* the body's zstd decoding, both ways */
            int r = i % NB;
            char *out;
            size_t on;
            struct body_error be;
            double t0 = cpu_ns();
            if (body_decode(BODY_ZSTD, zs[r], zsl[r], 64u << 20, &out, &on, &be) < 0 ||
                on != len[r])
                return 1;
            double t1 = cpu_ns();
            free(out);
            double t2 = cpu_ns();
            if (body_decode(BODY_ZSTD, zu[r], zul[r], 64u << 20, &out, &on, &be) < 0 ||
                on != len[r] || memcmp(out, body[r], on) != 0)
                return 1;
            double t3 = cpu_ns();
            free(out);
            ts += t1 - t0;
            tu += t3 - t2;
        }
        for (int i = 0; i < iter; i++) { /* the JSON reader alone, for the split */
            struct jv *first;
            size_t nv;
            struct jv_error je;
            double t0 = cpu_ns();
            struct jv_doc *d = jv_parse(body[i % NB], len[i % NB], false, &first, &nv, &je);
            tj += cpu_ns() - t0;
            if (!d)
                return 1;
            jv_doc_free(d);
        }
        for (int i = 0; i < iter; i++) {
            struct ingest_batch b, bc;
            struct ingest_error e;
            double t0 = cpu_ns();
            if (ingest_parse(cfg, INGEST_ATTRIBUTIONS, body[i % NB], len[i % NB], now, &b, &e) <
                    0 ||
                b.n_rows != FLOWS) {
                fprintf(stderr, "ingest_parse: %s at %s\n", e.msg, e.path);
                return 1;
            }
            double t1 = cpu_ns();
            char perr[300];
            pk.out.n = 0; /* the buffer kept, as a writer would reuse it */
            if (flow_pack_rows(&pk, b.copy, b.copy_len, perr, sizeof perr) < 0) {
                fprintf(stderr, "flow_pack_rows: %s\n", perr);
                return 1;
            }
            double t2 = cpu_ns();
            if (ingest_parse(chcfg, INGEST_ATTRIBUTIONS, body[i % NB], len[i % NB], now, &bc, &e) <
                    0 ||
                bc.n_rows != FLOWS || !bc.native) {
                fprintf(stderr, "ingest_parse (ClickHouse): %s at %s\n", e.msg, e.path);
                return 1;
            }
            double t3 = cpu_ns();
            struct chblock blk;
            if (chblock_build(bc.native, bc.window_start_us, bc.report[0], bc.report[1], &blk) < 0)
                return 1;
            double t4 = cpu_ns();
            struct ingest_batch b1; /* the same flows in the version 1 form, alternating */
            if (ingest_parse(chcfg, INGEST_ATTRIBUTIONS, body1[i % NB], len1[i % NB], now, &b1,
                             &e) < 0 ||
                b1.n_rows != FLOWS) {
                fprintf(stderr, "ingest_parse (version 1): %s at %s\n", e.msg, e.path);
                return 1;
            }
            t1v += cpu_ns() - t4;
            ingest_batch_free(&b1);
            tp += t1 - t0;
            tk += t2 - t1;
            tc += t3 - t2;
            tb += t4 - t3;
            /* what the flusher does with the stored block: decompress it (before e747a0b) or
             * frame it for ClickHouse to decompress (since) */
            double t5 = cpu_ns();
            size_t dn = ZSTD_decompress(scratch, 1 << 22, blk.data, blk.len);
            double t6 = cpu_ns();
            size_t fn =
                chblock_frame(blk.coding, blk.data, blk.len, blk.raw_len, scratch + (1 << 21));
            double t7 = cpu_ns();
            if (ZSTD_isError(dn) || dn != blk.raw_len || !fn)
                return 1;
            td += t6 - t5;
            tf += t7 - t6;
            if (k == 0 && dump_native) {
                fwrite(scratch, 1, dn, dump_native);
                fwrite(scratch + (1 << 21), 1, fn, dump_framed);
            }
            zbytes = blk.len;
            raw = blk.raw_len;
            chblock_free(&blk);
            ingest_batch_free(&b);
            ingest_batch_free(&bc);
        }
        parse[k] = tp / ((double)iter * FLOWS);
        block[k] = tb / ((double)iter * FLOWS);
        json[k] = tj / ((double)iter * FLOWS);
        packt[k] = tk / ((double)iter * FLOWS);
        parse_ch[k] = tc / ((double)iter * FLOWS);
        parse_v1[k] = t1v / ((double)iter * FLOWS);
        dec[k] = td / ((double)iter * FLOWS);
        frm[k] = tf / ((double)iter * FLOWS);
        bds[k] = ts / ((double)iter * FLOWS);
        bdu[k] = tu / ((double)iter * FLOWS);
    }
    flow_pack_free(&pk);
    qsort(packt, (size_t)rounds, sizeof(double), cmp_d);
    qsort(parse, (size_t)rounds, sizeof(double), cmp_d);
    qsort(block, (size_t)rounds, sizeof(double), cmp_d);
    qsort(json, (size_t)rounds, sizeof(double), cmp_d);
    qsort(parse_ch, (size_t)rounds, sizeof(double), cmp_d);
    qsort(parse_v1, (size_t)rounds, sizeof(double), cmp_d);
    qsort(dec, (size_t)rounds, sizeof(double), cmp_d);
    qsort(frm, (size_t)rounds, sizeof(double), cmp_d);
    qsort(bds, (size_t)rounds, sizeof(double), cmp_d);
    qsort(bdu, (size_t)rounds, sizeof(double), cmp_d);
    printf("body_decode of the zstd body, per flow: frame stating its size (the agent's) %.0f ns "
           "(min %.0f, max %.0f); without the size (streamed) %.0f ns (min %.0f, max %.0f); %zu -> "
           "%zu bytes\n",
           bds[rounds / 2], bds[0], bds[rounds - 1], bdu[rounds / 2], bdu[0], bdu[rounds - 1],
           len[0], zsl[0]);
    printf("PostgreSQL: ingest_parse (COPY text) %.0f ns/flow (min %.0f, max %.0f; of which "
           "jv_parse alone %.0f); flow_pack_rows %.0f ns/flow (min %.0f, max %.0f)\n",
           parse[rounds / 2], parse[0], parse[rounds - 1], json[rounds / 2], packt[rounds / 2],
           packt[0], packt[rounds - 1]);
    printf("ClickHouse: ingest_parse (Native columns) %.0f ns/flow (min %.0f, max %.0f); "
           "chblock_build %.0f ns/flow (min %.0f, max %.0f); block %zu -> %zu bytes (%.1f "
           "bytes/flow); n = %d rounds x %d reports x %d flows\n",
           parse_ch[rounds / 2], parse_ch[0], parse_ch[rounds - 1], block[rounds / 2], block[0],
           block[rounds - 1], raw, zbytes, (double)zbytes / FLOWS, rounds, iter, FLOWS);
    printf("ClickHouse: ingest_parse of the version 1 form (process members in every flow, %zu "
           "bytes against %zu) %.0f ns/flow (min %.0f, max %.0f)\n",
           len1[0], len[0], parse_v1[rounds / 2], parse_v1[0], parse_v1[rounds - 1]);
    printf("flusher, per flow: ZSTD_decompress of the stored block %.1f ns (min %.1f, max %.1f); "
           "chblock_frame %.1f ns (min %.1f, max %.1f)\n",
           dec[rounds / 2], dec[0], dec[rounds - 1], frm[rounds / 2], frm[0], frm[rounds - 1]);
    if (dump_native) {
        fclose(dump_native);
        fclose(dump_framed);
    }
    free(scratch);
    for (int r = 0; r < NB; r++) {
        free(body[r]);
        free(body1[r]);
        free(zs[r]);
        free(zu[r]);
    }
    cfg_free(cfg);
    cfg_free(chcfg);
    return 0;
}
