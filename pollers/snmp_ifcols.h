/* The IF-MIB columns the SNMP poller reads for each configured interface (64-bit ifXTable, or
 * the 32-bit ifTable fallback), and the sample (poll_sample) one interface's answers make: counter
 * width, speed unit, packet sums and the discontinuity value the reconciler compares. The
 * sessions, the walk and the GET pipeline are snmp_poller.c's. */
#ifndef WL_SNMP_IFCOLS_H
#define WL_SNMP_IFCOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "poll_sample.h"

/* Per-interface columns, in the order they are requested. */
enum col {
    C_NAME,
    C_IN_OCT,
    C_OUT_OCT,
    C_SPEED,
    C_OPER,
    C_DISC,
    C_IN_UC,
    C_IN_MC,
    C_IN_BC,
    C_OUT_UC,
    C_OUT_MC,
    C_OUT_BC,
    N_COLS
};

#define SNMP_COL_LEN 11 /* longest column OID; ifTable ones are 10 long */

struct snmp_colspec {
    oid base[SNMP_COL_LEN];
    size_t len;
};

struct snmp_if {
    const char *name;  /* configured interface name */
    long ifindex;      /* 0 = not resolved */
    long prev_ifindex; /* before the last resolution, to log a move */
    bool by_descr;     /* resolved through ifDescr */
    bool warned_missing;
    bool not_up;         /* last poll: ifOperStatus was not up(1) */
    unsigned down_polls; /* consecutive polls not up, for periodic re-resolution */
    int64_t last_invalid_disc;
    bool warned_wrap; /* 32-bit counters that can wrap twice in an interval: logged once */
    /* this poll */
    uint64_t v[N_COLS];
    uint32_t have; /* bit per column */
    bool name_ok;
};

/* The OID of column c for interface i (C_NAME: ifName, or ifDescr when it was resolved so). */
const struct snmp_colspec *snmp_col_spec(bool hc, int c, const struct snmp_if *i);
/* ifName, or ifDescr: the column the resolution walks. */
const struct snmp_colspec *snmp_name_col(bool descr);
/* A Counter64, Counter32, Gauge32, TimeTicks or INTEGER as an unsigned number; 0 for others. */
uint64_t snmp_var_u64(const netsnmp_variable_list *v);
/* The sample of interface f from this poll's values (f->v, f->have): up = ifOperStatus up (else
 * the sample is invalid, see snmp_ifcols.c); hc = 64-bit columns. The octet columns must be
 * present. */
void snmp_if_sample(struct snmp_if *f, const char *device, bool hc, bool up, int64_t at_us,
                    int64_t uptime_cs, struct poll_sample *s);

#endif
