/* ClickHouse's cityHash64 of (String, UInt64) — the Distributed table's sharding key
 * cityHash64(agent_id, seq) (chstore.h) — computed here, so that the flusher can send each
 * report's rows straight to the shard the Distributed table would send them to (chshard.h).
 * ClickHouse hashes a String with CityHash64 version 1.0.2 (the version it keeps, not the current
 * one), a UInt64 with intHash64(x ^ 0x4CF2D2BAAE6DA887), and combines the argument hashes left to
 * right with Hash128to64. Checked against the server's own answers (tests/clickhouse).
 * CityHash128 v1.0.2 as well: the compressed format's block checksum, which the server checks
 * (tests/analytics/test_ch_native.c). */
#ifndef WL_CHHASH_H
#define WL_CHHASH_H

#include <stddef.h>
#include <stdint.h>

/* CityHash64 v1.0.2 of s[0..len): ClickHouse's cityHash64(String). */
uint64_t chhash_city64(const char *s, size_t len);
/* ClickHouse's cityHash64(s, n) for a String s and a UInt64 n. */
uint64_t chhash_city64_str_u64(const char *s, size_t len, uint64_t n);
/* CityHash128 v1.0.2 of s[0..len) (out[0] the low half): the checksum ClickHouse puts before
 * every block of its compressed format (chstore_block.h), and checks. */
void chhash_city128(const char *s, size_t len, uint64_t out[2]);

#endif
