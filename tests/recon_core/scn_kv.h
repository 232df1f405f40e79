/* One line of a reconciliation scenario (tests/recon_core/scenarios, one file per scenario) as
 * key=value tokens and positional words: read by the core's driver (driver.c) and by the ClickHouse
 * test, which runs the same scenarios through both stores (tests/analytics/test_ch_store.c). */
#ifndef WL_SCN_KV_H
#define WL_SCN_KV_H

#include <stddef.h>

struct scn_kv {
    char *key[32], *val[32];
    size_t n;
    char *pos[32]; /* positional words */
    size_t n_pos;
};

/* Words separated by blanks; key="a value with blanks" keeps its blanks (no escapes). The line
 * is split in place; kv points into it. At most 32 of each kind; more are ignored. */
void scn_kv_split(char *line, struct scn_kv *kv);
/* The value of key, or NULL. */
const char *scn_kv_get(const struct scn_kv *kv, const char *key);

#endif
