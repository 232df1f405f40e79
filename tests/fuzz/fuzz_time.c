/* libFuzzer target: the time parsers (common/timeutil.c, reconciler/api.c's query times). Any
 * RFC 3339 time inside years 0000..9999 formats and parses back to the same microsecond; window
 * starts never exceed their input; nothing overflows (UBSan). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[128];
    size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
    memcpy(s, data, n);
    s[n] = 0;
    int64_t us, d, back;
    if (tm_parse_rfc3339(s, &us) == 0 && us >= -62167219200LL * TM_USEC_PER_SEC &&
        us <= 253402300799LL * TM_USEC_PER_SEC) {
        char t[TM_RFC3339_LEN];
        if (tm_parse_rfc3339(tm_format_rfc3339(us, t), &back) != 0 || back != us)
            abort();
    }
    if (tm_parse_epoch(s, &us) == 0) {
        char t[TM_RFC3339_LEN];
        tm_format_rfc3339(us, t);
    }
    if (tm_parse_duration(s, &d) == 0 && d < 0)
        abort();
    if (api_parse_time(s, 1796083200LL * TM_USEC_PER_SEC, &us) == 0 && us == INT64_MIN)
        abort();
    if (size >= 8) {
        int64_t raw;
        memcpy(&raw, data, sizeof(raw));
        for (int w = 1; w <= 86400; w *= 60)
            if (tm_window_start(raw, w) > raw)
                abort();
    }
    return 0;
}
