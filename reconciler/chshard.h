/* Inserts straight into each shard (analytics.clickhouse.shard_urls). Through the Distributed
 * table, one server parses every row of an INSERT, splits the block by the sharding key and
 * forwards the other shards' rows over its TCP connections (bench/clickhouse: ~12 % of the
 * machine's samples on 2 shards). With every shard's HTTP address configured, the flusher sends
 * each report's rows to the shard the Distributed table would have chosen — the same
 * cityHash64(agent_id, seq) (chhash.h) modulo the cluster's total weight, slots in shard order —
 * as one INSERT per shard into its local table, all at once. The same report always lands on the
 * same shard either way, so a retried insert is still collapsed by the ReplacingMergeTree key.
 * The map is read from the cluster itself: the shards' number and weights from system.clusters
 * on the first URL, and every URL must be the server system.clusters calls local for its shard
 * (a URL list in the wrong order would put rows where the Distributed table does not look for
 * their duplicates): otherwise an error that names the URL, and nothing is inserted. */
#ifndef WL_CHSHARD_H
#define WL_CHSHARD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct chshard {
    size_t n;                    /* shards */
    struct cfg_clickhouse *node; /* per shard: the configuration with url = its shard URL */
    uint32_t *slot;              /* slot -> shard index (weights expanded in shard order) */
    size_t n_slots;              /* total weight */
};

/* Reads the cluster's shards and checks every URL (above). 0 with m filled, or -1 with err
 * (ClickHouse unreachable, or the URLs are not the cluster's shards in its order). */
int chshard_resolve(const struct cfg_clickhouse *ch, struct chshard *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void chshard_free(struct chshard *m);
/* The shard of a row whose sharding key is key. */
size_t chshard_of(const struct chshard *m, uint64_t key);
/* The sharding key of a report's rows: cityHash64(agent_id, seq). */
uint64_t chshard_key(const char *agent_id, size_t len, uint64_t seq);

/* One INSERT per shard with rows (data[i] of len[i] bytes, sql its statement, url_params more of
 * the URL's query or NULL), all at once: 0 when every shard answered 200, else -1 with the first
 * failure in err (the shards that took theirs keep them: the retry is collapsed by the key). */
int chshard_insert(const struct chshard *m, const char *sql, const char *url_params,
                   char *const *data, const size_t *len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
