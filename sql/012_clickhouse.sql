-- wanledger schema v12: the ClickHouse outbox (docs/design.md "ClickHouse store",
-- reconciler/chstore_flush.h). ch_pending: the report's flows are committed in flow_records but
-- not yet confirmed in ClickHouse. Ingest sets it when analytics.clickhouse is configured and the
-- report has flows; the flusher clears it only after ClickHouse answered 200 to the block that
-- holds them. A window with pending reports is not reconciled from ClickHouse.
-- Turning ClickHouse on for a database that already holds flows: UPDATE flow_reports SET
-- ch_pending = n_flows > 0 WHERE window_start >= … ships them too.
ALTER TABLE flow_reports ADD COLUMN IF NOT EXISTS ch_pending boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS flow_reports_ch_pending ON flow_reports (window_start) WHERE ch_pending;
