/* 32-bit counter wrap advice (see snmp_wrap.h). */
#include "snmp_wrap.h"

#include <inttypes.h>
#include <stdio.h>

#define WRAP_BYTES 4294967296.0
#define MARGIN     1.01 /* reconciler/recon.c max_octets */

int snmp_wrap_check(uint64_t speed_bps, int interval_s, char *msg, size_t len)
{
    if (speed_bps && speed_bps < UINT32_MAX) {
        double wrap_s = WRAP_BYTES * 8 / (double)speed_bps; /* at line rate */
        if ((double)interval_s * MARGIN < wrap_s)
            return 0;
        snprintf(msg, len,
                 "32-bit counters at ifSpeed %" PRIu64 " bit/s can wrap more than once in the "
                 "%d s interval (every %.1f s at line rate): the reconciler discards such "
                 "intervals; poll every %d s or less, or use 64-bit counters (ifXTable ifHC*, "
                 "SNMPv2c/v3)",
                 speed_bps, interval_s, wrap_s, (int)(wrap_s / MARGIN));
        return 1;
    }
    snprintf(msg, len,
             "32-bit counters and %s: nothing bounds how often they wrap, so the reconciler "
             "discards their intervals unless the link has a capacity_bps; use 64-bit counters "
             "(ifXTable ifHC*, SNMPv2c/v3)",
             speed_bps ? "ifSpeed saturated at 4294967295 (faster than 4.29 Gbit/s)"
                       : "no ifSpeed");
    return 1;
}
