/* libFuzzer target: whole-request validation of the three ingest bodies (reconciler/ingest.c).
 * The first byte picks the endpoint; a body is either turned into COPY rows or refused with a
 * status and a JSON path, never both. */
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
        ingest_batch_free(&b);
    } else if ((e.status != 400 && e.status != 422 && e.status != 500) || e.path[0] != '$') {
        abort();
    }
    return 0;
}
