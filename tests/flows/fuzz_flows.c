/* libFuzzer target for the flow decoders: the first byte picks IPFIX/NetFlow v9 (even) or sFlow
 * (odd); the rest is one datagram, or several separated by "\n--\n" decoded through one template
 * cache (so templates learnt from one datagram are used, withdrawn and redefined by the next).
 * Every decoded record also goes through the aggregator. Seed corpus: tests/flows/corpus.
 *   cmake -DWL_FUZZ_FLOWS=ON -DCMAKE_C_COMPILER=clang ...; build/.../fuzz_flows corpus/ */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow_agg.h"
#include "flow_ipfix.h"
#include "flow_sflow.h"

static void on_rec(void *arg, const struct flow_rec *r)
{
    (void)flow_agg_add(arg, 0, r, 1764582700000000LL);
}

static void on_counters(void *arg, const struct flow_ifcounters *c)
{
    (void)arg;
    (void)c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int sflow = data[0] & 1;
    data++;
    size--;
    struct flow_ipfix *fx = flow_ipfix_new();
    struct flow_agg *agg = flow_agg_new(10, 1024);
    struct flow_stats st = {0};
    struct flow_exporter ex = {.port = 1};
    char err[256];
    int64_t now = 1764582700000LL;
    while (fx && agg) {
        const uint8_t *sep = NULL;
        for (size_t i = 0; i + 4 <= size; i++)
            if (memcmp(data + i, "\n--\n", 4) == 0) {
                sep = data + i;
                break;
            }
        size_t n = sep ? (size_t)(sep - data) : size;
        if (sflow) {
            struct flow_sflow_info info;
            (void)flow_sflow_decode(data, n, on_rec, on_counters, agg, &info, &st, err,
                                    sizeof(err));
        } else {
            (void)flow_ipfix_decode(fx, &ex, data, n, now, on_rec, agg, &st, err, sizeof(err));
        }
        now += 600000; /* ten minutes per datagram: expiry gets exercised too */
        if (!sep)
            break;
        data = sep + 4;
        size -= n + 4;
    }
    struct flow_cell *cells;
    size_t nc;
    if (agg && flow_agg_take(agg, INT64_MAX, &cells, &nc) == 0)
        free(cells);
    flow_agg_free(agg);
    flow_ipfix_free(fx);
    return 0;
}
