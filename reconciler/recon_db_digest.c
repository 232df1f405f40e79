/* Per window and table, the digest of the rows the reconciler last wrote (sql/034,
 * result_digests): rdb_diff_write skips a table whose new rows are those rows. */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "recon_db_internal.h"

static atomic_ullong unchanged_tables;

unsigned long long recon_db_unchanged_tables(void)
{
    return atomic_load(&unchanged_tables);
}

void rdb_digest_count_unchanged(void)
{
    atomic_fetch_add(&unchanged_tables, 1);
}

int rdb_digest_hex(const char *table, const struct rdb_sbuf *data, long long n_rows,
                   char out[RDB_DIGEST_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    char head[128];
    int hn = snprintf(head, sizeof head, "%s\n%lld\n", table, n_rows);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && hn > 0 && (size_t)hn < sizeof head &&
             EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(c, head, (size_t)hn) == 1 &&
             (data->n == 0 || EVP_DigestUpdate(c, data->p, data->n) == 1) &&
             EVP_DigestFinal_ex(c, md, &len) == 1 && len == 32;
    EVP_MD_CTX_free(c);
    if (!ok)
        return -1;
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * len] = 0;
    return 0;
}

int rdb_digest_store(PGconn *db, const char *table, const char *ws, long long n_rows,
                     const char *hex, char *err, size_t errlen)
{
    char n[RDB_NUM_LEN];
    rdb_fmt_i64(n, n_rows);
    const char *p[] = {ws, table, n, hex};
    return rdb_run(db, "storing the result digest",
                   "INSERT INTO result_digests (window_start, table_name, n_rows, digest) VALUES "
                   "($1::timestamptz, $2, $3::bigint, decode($4, 'hex')) ON CONFLICT "
                   "(window_start, table_name) DO UPDATE SET n_rows = EXCLUDED.n_rows, "
                   "digest = EXCLUDED.digest",
                   4, p, NULL, err, errlen);
}
