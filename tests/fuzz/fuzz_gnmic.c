/* libFuzzer target: gnmic's event output as the poller reads it (pollers/gnmi_event.c). Each
 * input is split at newlines into messages applied to one map, as a connection delivers them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gnmi_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gnmi_map *m = gnmi_map_new(fuzz_cfg());
    if (!m)
        return 0;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        struct poll_batch out;
        memset(&out, 0, sizeof(out));
        struct gnmi_stats st = {0};
        char err[256];
        /* monotonic time = line number (the quiet-time flush sees time move), no future bound */
        int rc = gnmi_map_message(m, (const char *)data + start, i - start, (int64_t)i, INT64_MAX,
                                  &out, &st, err, sizeof(err));
        (void)rc;
        (void)gnmi_map_flush(m, (int64_t)i, 0, &out, &st);
        poll_batch_free(&out);
        start = i + 1;
    }
    gnmi_map_free(m);
    return 0;
}
