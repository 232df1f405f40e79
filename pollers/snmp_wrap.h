/* Whether 32-bit octet counters can wrap more than once in a poll interval (speed x interval >=
 * 2^32 bytes, with the reconciler's 1% margin): then the reconciler discards the interval unless
 * its delta rules the second wrap out, and the operator should poll faster or use HC counters. */
#ifndef WL_SNMP_WRAP_H
#define WL_SNMP_WRAP_H

#include <stddef.h>
#include <stdint.h>

/* speed_bps: ifSpeed (0 unknown; 2^32-1 saturated, i.e. faster than 4.29 Gbit/s, bound unknown).
 * Returns 0 when at most one wrap fits in interval_s, else 1 with advice in msg (what, and the
 * longest interval that would do). */
int snmp_wrap_check(uint64_t speed_bps, int interval_s, char *msg, size_t len);

#endif
