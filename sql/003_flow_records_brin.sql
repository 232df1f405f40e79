-- wanledger schema v3: flow_records is append-only bulk data written by COPY only in the
-- transaction that inserted its flow_reports row (the idempotency key lives there), so its own
-- primary key protected nothing and cost most of the ingest time (bench/reconciler/RESULTS.md:
-- 80-119 k flow records/s with it, 204-253 k/s without). Rows arrive in window order within a
-- day's partition, which is what a BRIN index on window_start needs.
ALTER TABLE flow_records DROP CONSTRAINT flow_records_pkey;
DROP INDEX IF EXISTS flow_records_window;
CREATE INDEX flow_records_window_brin ON flow_records USING brin (window_start);
