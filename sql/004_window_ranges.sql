-- Long spans of windows to reconcile, one row each: a transfer record longer than 10 windows
-- marks its [lo, hi] here (window starts, inclusive) instead of one window_state row per window
-- (a 7-day record would be 10,080 rows in the ingest transaction). The reconcile loop moves the
-- newest windows of each range into window_state a batch at a time (recon_db_windows.c), so
-- fresh windows are not held up behind an old record's span.
CREATE TABLE window_ranges (
    id bigserial PRIMARY KEY,
    lo timestamptz NOT NULL,
    hi timestamptz NOT NULL,
    window_seconds int NOT NULL,
    marked_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (lo <= hi)
);
CREATE INDEX window_ranges_hi ON window_ranges (hi DESC);
