-- wanledger schema v17: the ClickHouse outbox as one compact row per report
-- (docs/design.md "ClickHouse store", reconciler/chstore_flush.h). With analytics.clickhouse
-- configured, ingest commits the report's row in flow_reports (ch_pending = true) and here the
-- report's flows already serialized as the ClickHouse insert block (TabSeparated in the column
-- order of reconciler/flow_row.h, window_start as Unix seconds), zstd-compressed: one row instead
-- of n_flows rows in flow_records. The flusher concatenates many blocks into one INSERT and, only
-- after ClickHouse's 200, deletes them and clears ch_pending in one transaction. Reports still
-- pending with no row here (a database that held flows in flow_records before) are shipped from
-- flow_records as before.
CREATE TABLE IF NOT EXISTS ch_outbox (
    id bigserial PRIMARY KEY,         -- arrival order: the flusher ships the oldest first
    agent_id text NOT NULL,           -- the report (flow_reports' key)
    seq bigint NOT NULL,
    window_start timestamptz NOT NULL,
    n_rows int NOT NULL,              -- flow records in the block
    raw_bytes int NOT NULL,           -- the block's size before compression
    coding text NOT NULL CHECK (coding IN ('zstd', 'identity')),
    block bytea NOT NULL
);
-- already compressed: no second (pglz) compression attempt on every insert
ALTER TABLE ch_outbox ALTER COLUMN block SET STORAGE EXTERNAL;
