/* The compression our clients apply by default (common/compress.c: zstd level 3; gzip level 6
 * as the fallback) over real request bodies, one JSON body per line of each FILE (agent reports
 * from `wanledger-agent --stdout`, counter batches from `wanledger poll --stdout`, transfer
 * batches). Prints per file and in total: n bodies, raw bytes, compressed bytes, the ratio
 * raw/compressed of the sums, and the median per-body ratio.
 *
 *   bench_body_ratio FILE... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"

struct acc {
    size_t n;
    unsigned long long raw, z[2];
    double *per; /* zstd per-body ratios */
    size_t cap;
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void add(struct acc *a, const char *body, size_t len)
{
    const enum wl_compress algs[2] = {WL_COMPRESS_ZSTD, WL_COMPRESS_GZIP};
    size_t out_len[2] = {len, len};
    for (int k = 0; k < 2; k++) {
        char *z = NULL;
        if (wl_compress(algs[k], body, len, &z, &out_len[k]) != 0)
            out_len[k] = len;
        free(z);
        a->z[k] += out_len[k];
    }
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->per = realloc(a->per, a->cap * sizeof(*a->per));
    }
    a->per[a->n++] = (double)len / (double)out_len[0];
    a->raw += len;
}

static void print(const char *name, struct acc *a)
{
    if (!a->n)
        return;
    qsort(a->per, a->n, sizeof(*a->per), cmp_d);
    printf("%-40s n=%-5zu raw=%-9llu zstd=%-8llu (%.2fx, median %.2fx)  gzip=%-8llu (%.2fx)\n",
           name, a->n, a->raw, a->z[0], (double)a->raw / (double)a->z[0], a->per[a->n / 2], a->z[1],
           (double)a->raw / (double)a->z[1]);
}

int main(int argc, char **argv)
{
    struct acc total = {0};
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "r");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        struct acc a = {0};
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, f)) > 0) {
            if (line[n - 1] == '\n')
                line[--n] = '\0';
            if (n == 0 || line[0] != '{')
                continue;
            add(&a, line, (size_t)n);
            add(&total, line, (size_t)n);
        }
        free(line);
        fclose(f);
        const char *base = strrchr(argv[i], '/');
        print(base ? base + 1 : argv[i], &a);
        free(a.per);
    }
    print("total", &total);
    free(total.per);
    return 0;
}
