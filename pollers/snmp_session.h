/* net-snmp sessions for configured devices: v1/v2c with a community, v3 USM with keys derived
 * from the configured passwords; and the library's one-time set-up (numeric OIDs only, no
 * persistent state). */
#ifndef WL_SNMP_SESSION_H
#define WL_SNMP_SESSION_H

#include <stddef.h>

#include "config.h"

/* Reference-counted init_snmp()/snmp_shutdown(). */
void snmp_session_lib_init(void);
void snmp_session_lib_shutdown(void);

/* Opens a single-API session (snmp_sess_*) to cd's address with its timeout and retries. SNMPv3
 * sessions are flagged SNMP_FLAGS_DONT_PROBE: net-snmp's own engine ID probe blocks inside the
 * first send, so the caller must discover the engine ID itself. NULL with err naming the device
 * on a bad protocol, a missing secret or an unusable address. */
void *snmp_session_open(const struct cfg_device *cd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
