-- wanledger schema v35: the ClickHouse outbox's blocks in ClickHouse's Native format
-- (reconciler/chnative.h, docs/design.md "ClickHouse store").
--
-- Ingest now writes a report's flows as one Native block, column by column while it reads them,
-- instead of TabSeparated text: ClickHouse's server spent ~0.35 µs less per flow record reading
-- Native blocks of a report's size than TabSeparated rows (bench/clickhouse/formats.sh), about a
-- third of its part of an insert. `format` says which a row holds; the rows already waiting when
-- this runs are TabSeparated, and so is a row written by a binary that does not name the column
-- (the default). The flusher ships the oldest row's format first, a format per INSERT.
ALTER TABLE ch_outbox ADD COLUMN IF NOT EXISTS format text NOT NULL DEFAULT 'tsv'
    CHECK (format IN ('tsv', 'native'));
