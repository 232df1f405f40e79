/* The flow record row (see flow_row.h). */
#include "flow_row.h"

#include <stdio.h>
#include <string.h>

#include "copyesc.h"

#define TXT(n, null, pg, ch)                                                                       \
    {                                                                                              \
        n, FRT_TEXT, null, false, "text", ch, n                                                    \
    }
#define INT(n, null, sum, pg, ch)                                                                  \
    {                                                                                              \
        n, FRT_INT, null, sum, pg, ch, n                                                           \
    }
#define INET(n)                                                                                    \
    {                                                                                              \
        n, FRT_INET, true, false, "inet", "Nullable(String)", "host(" n ")"                        \
    }

const struct flow_col_def flow_cols[FR_NCOLS] = {
    [FR_WINDOW_START] = {"window_start", FRT_TIME, false, false, "timestamp with time zone",
                         "DateTime", "extract(epoch FROM window_start)::bigint"},
    [FR_AGENT_ID] = TXT("agent_id", false, "text", "String"),
    [FR_SEQ] = INT("seq", false, false, "bigint", "UInt64"),
    [FR_IDX] = INT("idx", false, false, "integer", "UInt32"),
    [FR_HOST] = TXT("host", false, "text", "String"),
    [FR_SOURCE] = TXT("source", false, "text", "String"),
    [FR_PROTO] = TXT("proto", true, "text", "Nullable(String)"),
    [FR_LOCAL_ADDR] = INET("local_addr"),
    [FR_LOCAL_PORT] = INT("local_port", true, false, "integer", "Nullable(UInt16)"),
    [FR_REMOTE_ADDR] = INET("remote_addr"),
    [FR_REMOTE_PORT] = INT("remote_port", true, false, "integer", "Nullable(UInt16)"),
    [FR_ROLE] = TXT("role", true, "text", "Nullable(String)"),
    [FR_TX_BYTES] = INT("tx_bytes", false, true, "bigint", "UInt64"),
    [FR_RX_BYTES] = INT("rx_bytes", false, true, "bigint", "UInt64"),
    [FR_NFS_SERVER] = INET("nfs_server"),
    [FR_NFS_PORT] = INT("nfs_port", true, false, "integer", "Nullable(UInt16)"),
    [FR_NFS_EXPORT] = TXT("nfs_export", true, "text", "Nullable(String)"),
    [FR_NFS_OP] = TXT("nfs_op", true, "text", "Nullable(String)"),
    [FR_NFS_BYTES] = INT("nfs_bytes", false, true, "bigint", "UInt64"),
    [FR_NFS_OPS] = INT("nfs_ops", false, true, "bigint", "UInt64"),
    [FR_PID] = INT("pid", true, false, "integer", "Nullable(UInt32)"),
    [FR_UID] = INT("uid", true, false, "integer", "Nullable(UInt32)"),
    [FR_USER_NAME] = TXT("user_name", true, "text", "Nullable(String)"),
    [FR_PROGRAM] = TXT("program", true, "text", "Nullable(String)"),
    [FR_WORKFLOW] = TXT("workflow", true, "text", "Nullable(String)"),
    [FR_CONTAINER] = TXT("container", true, "text", "Nullable(String)"),
    [FR_NAMESPACE] = TXT("namespace", false, "text", "String"),
    [FR_POD] = TXT("pod", false, "text", "String"),
    [FR_CONTAINER_NAME] = TXT("container_name", false, "text", "String"),
};

/* Per column at most 1 separator + max(COPYESC_U64_MAX, COPYESC_MAX(n) or 2 for \N) bytes; an
 * integer's n is 0 (the union), so one sum over n bounds the row: no test of the type. */
size_t flow_row_copy_max(const struct flow_row *r)
{
    size_t n = 0;
    for (int c = 0; c < FR_NCOLS; c++)
        n += r->v[c].n;
    return FR_NCOLS * (1 + COPYESC_U64_MAX + 2) + COPYESC_MAX(n);
}

size_t flow_row_copy_text(char *out, const struct flow_row *r)
{
    char *w = out;
    for (int c = 0; c < FR_NCOLS; c++) {
        const struct flow_val *v = &r->v[c];
        if (c)
            *w++ = '\t';
        if (!v->set) {
            *w++ = '\\', *w++ = 'N';
        } else if (flow_cols[c].type == FRT_INT) {
            w += copyesc_u64(w, v->u);
        } else if (flow_cols[c].type == FRT_TEXT && !v->plain) {
            w += copyesc_text(w, v->s, v->n);
        } else { /* plain text; time and address texts need no escaping */
            memcpy(w, v->s, v->n);
            w += v->n;
        }
    }
    *w++ = '\n';
    return (size_t)(w - out);
}

int flow_row_list(char *out, size_t len, enum flow_list what, uint64_t mask, const char *prefix,
                  int pos[FR_NCOLS])
{
    size_t at = 0;
    int k = 0;
    if (len)
        out[0] = 0;
    for (int c = 0; c < FR_NCOLS; c++) {
        if (pos)
            pos[c] = -1;
        if (!(mask & (UINT64_C(1) << c)))
            continue;
        const struct flow_col_def *d = &flow_cols[c];
        int n = what == FRL_CH_DEFS
                    ? snprintf(out + at, len - at, "%s%s %s", k ? ", " : "", d->name, d->ch_type)
                    : snprintf(out + at, len - at, "%s%s%s", k ? ", " : "", prefix ? prefix : "",
                               what == FRL_NAMES ? d->name : d->pg_export);
        if (n < 0 || (size_t)n >= len - at)
            return -1;
        at += (size_t)n;
        if (pos)
            pos[c] = k;
        k++;
    }
    return (int)at;
}

size_t flow_row_unescape_n(char *s, size_t n)
{
    char *w = s;
    const char *end = s + n;
    for (const char *p = s; p < end; p++) {
        if (*p != '\\' || p + 1 == end) {
            *w++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n':
            *w++ = '\n';
            break;
        case 't':
            *w++ = '\t';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case '0':
            *w++ = 0;
            break;
        default:
            *w++ = *p; /* \\ \' and anything else: the character itself */
        }
    }
    return (size_t)(w - s);
}

bool flow_row_unescape(char *s)
{
    if (s[0] == '\\' && s[1] == 'N' && s[2] == 0)
        return false;
    s[flow_row_unescape_n(s, strlen(s))] = 0;
    return true;
}
