-- wanledger schema v2: indexes the reconciler's reads need (reconciler/recon_db.c). Without them
-- every window's reconciliation scans a whole day's partition: its flow records are found by
-- window_start (the primary key leads with agent_id), and the pending-window search reads the
-- raw rows newer than the last reconciled window (counter_samples by at, flow_reports by
-- window_start). Additive; created on every existing and future partition.
CREATE INDEX IF NOT EXISTS flow_records_window ON flow_records (window_start);
CREATE INDEX IF NOT EXISTS flow_reports_window ON flow_reports (window_start);
CREATE INDEX IF NOT EXISTS counter_samples_at ON counter_samples (at);
