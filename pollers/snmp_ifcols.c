/* IF-MIB columns and the sample they make (snmp_ifcols.h). */
#include "snmp_ifcols.h"

#include <stdio.h>

#define IFX(n)                                                                                     \
    {                                                                                              \
        1, 3, 6, 1, 2, 1, 31, 1, 1, 1, n                                                           \
    }
#define IFT(n)                                                                                     \
    {                                                                                              \
        1, 3, 6, 1, 2, 1, 2, 2, 1, n                                                               \
    }
/* 64-bit (ifXTable HC) columns; C_NAME is ifName or ifDescr as resolved. */
static const struct snmp_colspec hc_cols[N_COLS] = {
    [C_NAME] = {IFX(1), 11},    [C_IN_OCT] = {IFX(6), 11},  [C_OUT_OCT] = {IFX(10), 11},
    [C_SPEED] = {IFX(15), 11},  [C_OPER] = {IFT(8), 10},    [C_DISC] = {IFX(19), 11},
    [C_IN_UC] = {IFX(7), 11},   [C_IN_MC] = {IFX(8), 11},   [C_IN_BC] = {IFX(9), 11},
    [C_OUT_UC] = {IFX(11), 11}, [C_OUT_MC] = {IFX(12), 11}, [C_OUT_BC] = {IFX(13), 11},
};
/* 32-bit fallback (ifTable): octets, ifSpeed in bit/s, no packet columns. */
static const struct snmp_colspec c32_cols[C_DISC + 1] = {
    [C_NAME] = {IFX(1), 11},  [C_IN_OCT] = {IFT(10), 10}, [C_OUT_OCT] = {IFT(16), 10},
    [C_SPEED] = {IFT(5), 10}, [C_OPER] = {IFT(8), 10},    [C_DISC] = {IFX(19), 11},
};
static const struct snmp_colspec if_name_col = {IFX(1), 11};
static const struct snmp_colspec if_descr_col = {IFT(2), 10};

const struct snmp_colspec *snmp_col_spec(bool hc, int c, const struct snmp_if *i)
{
    if (c == C_NAME)
        return snmp_name_col(i->by_descr);
    return hc ? &hc_cols[c] : &c32_cols[c];
}

const struct snmp_colspec *snmp_name_col(bool descr)
{
    return descr ? &if_descr_col : &if_name_col;
}

uint64_t snmp_var_u64(const netsnmp_variable_list *v)
{
    switch (v->type) {
    case ASN_COUNTER64:
        return ((uint64_t)v->val.counter64->high << 32) | (uint64_t)v->val.counter64->low;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
        return (uint64_t)(*v->val.integer & 0xffffffffUL);
    case ASN_INTEGER:
        return (uint64_t)*v->val.integer;
    default:
        return 0;
    }
}

/* discontinuity_cs of an SNMP sample. A valid one: ifIndex x 2^32 + ifCounterDiscontinuityTime,
 * so counters that moved to another row (an interface deleted and created again under its name)
 * are a discontinuity too. An invalid one (ifOperStatus not up: the row may be a deleted
 * interface's, frozen, or the link carries nothing we can vouch for): its sysUpTime, below 2^32,
 * different from every valid value and from the invalid samples before and after it, so the
 * reconciler discards both intervals that touch it: the window is `incomplete`, never zero. */
static int64_t sample_disc(struct snmp_if *f, bool valid, int64_t uptime_cs)
{
    if (!valid) {
        int64_t disc = uptime_cs & 0xffffffffLL;
        if (disc == f->last_invalid_disc) /* two answers within one centisecond */
            disc = (disc + 1) & 0xffffffffLL;
        f->last_invalid_disc = disc;
        return disc;
    }
    uint64_t disc = (f->have & (1u << C_DISC)) ? (f->v[C_DISC] & 0xffffffffULL) : 0;
    return (int64_t)(((uint64_t)f->ifindex << 32) | disc);
}

void snmp_if_sample(struct snmp_if *f, const char *device, bool hc, bool up, int64_t at_us,
                    int64_t uptime_cs, struct poll_sample *s)
{
    *s = (struct poll_sample){0};
    snprintf(s->device, sizeof(s->device), "%s", device);
    snprintf(s->interface, sizeof(s->interface), "%s", f->name);
    s->at_us = at_us;
    s->has_uptime = true;
    s->uptime_cs = uptime_cs;
    s->in_octets = f->v[C_IN_OCT];
    s->out_octets = f->v[C_OUT_OCT];
    s->counter_bits = hc ? 64 : 32;
    if (f->have & (1u << C_SPEED))
        s->speed_bps = hc ? f->v[C_SPEED] * 1000000ULL : f->v[C_SPEED];
    s->discontinuity_cs = sample_disc(f, up, uptime_cs);
    if (hc && (f->have & (1u << C_IN_UC)) && (f->have & (1u << C_OUT_UC))) {
        /* packets = unicast + multicast + broadcast (the latter two when the agent has them);
         * sums of 64-bit counters wrap consistently modulo 2^64 */
        s->has_pkts = true;
        s->in_pkts = f->v[C_IN_UC] + f->v[C_IN_MC] + f->v[C_IN_BC];
        s->out_pkts = f->v[C_OUT_UC] + f->v[C_OUT_MC] + f->v[C_OUT_BC];
    }
}
