/* libFuzzer target: whole-request validation of the three ingest bodies (reconciler/ingest.c).
 * The first byte picks the endpoint; a body is either turned into COPY rows or refused with a
 * status and a JSON path, never both; ingest_parse_inplace (the workers' call) gives the same
 * answer byte for byte. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ingest.h"
#include "timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum ingest_kind kind = (enum ingest_kind)(data[0] % 3);
    struct ingest_batch b;
    struct ingest_error e;
    /* a fixed "now" keeps runs reproducible: 2026-12-01T00:00:00Z */
    int64_t now = 1796083200LL * TM_USEC_PER_SEC;
    int rc = ingest_parse(fuzz_cfg(), kind, (const char *)data + 1, size - 1, now, &b, &e);
    if (rc == 0) {
        if (b.n_days > INGEST_MAX_DAYS || (b.n_rows && !b.copy))
            abort();
    } else if ((e.status != 400 && e.status != 422 && e.status != 500) || e.path[0] != '$') {
        abort();
    }
    /* in place (what the workers call): the same answer, byte for byte */
    char *mut = malloc(size);
    if (!mut)
        abort();
    memcpy(mut, data + 1, size - 1);
    struct ingest_batch b2;
    struct ingest_error e2;
    int rc2 = ingest_parse_inplace(fuzz_cfg(), kind, mut, size - 1, now, &b2, &e2);
    if (rc2 != rc)
        abort();
    if (rc == 0
            ? b2.n_rows != b.n_rows || b2.copy_len != b.copy_len ||
                  (b.copy_len && memcmp(b2.copy, b.copy, b.copy_len) != 0)
            : e2.status != e.status || strcmp(e2.msg, e.msg) != 0 || strcmp(e2.path, e.path) != 0)
        abort();
    if (rc == 0) {
        ingest_batch_free(&b);
        ingest_batch_free(&b2);
    }
    free(mut);
    return 0;
}
