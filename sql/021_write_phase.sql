-- The owner and dependency rows' text columns compare bytes ("C" collation) instead of calling
-- the database's C.UTF-8 strcoll (issue #14: the write phase of a big window, and the hour's
-- fold, which sorts 2 M owner rows a window by their 10 text columns).
--
-- No answer changes: glibc's C.UTF-8 (Debian 12, glibc 2.36) collates by code point, which for
-- UTF-8 text is the byte order "C" uses, and equality was byte equality already; so every ORDER
-- BY, GROUP BY, min/max and range comparison over these columns gives what it gave before. A
-- reader's parameter ($1, a literal, another table's default-collation column) takes the
-- column's collation (a column's non-default collation wins over the default), so every
-- reader's `src_site = $1`, `workflow = t.selector_value` etc. still uses the same indexes, and
-- the UNION ALL of wl_attribution_range (attribution_rollup_hourly with attribution_rollup)
-- resolves to "C" on both sides.
--
-- What it gains (bench_fleet 5 M, BENCHMARKS.md "Reconciler at fleet size"): PostgreSQL 15 skips
-- strcoll for equal strings, so a btree insert gains little (the 2.03 M owner rows' COPY ~5 % in
-- perf: varstr_cmp, strcoll, pg_newlocale_from_collation); sorts gain abbreviated keys and memcmp
-- (the fold's GROUP BY ... ORDER BY of one window's owner rows 17.8-21.5 s -> 15.3 s on a scratch
-- server; the whole fold in bench_fleet stayed at ~30 s), the dependency rows' COPY ~7 %.
--
-- The columns keep their type: no table is rewritten, the indexes on these columns are rebuilt
-- (2.03 M owner rows with their two indexes: 1.8 s), every row and index name stays.
ALTER TABLE attribution_rollup
    ALTER src_site TYPE text COLLATE "C",
    ALTER dst_site TYPE text COLLATE "C",
    ALTER source TYPE text COLLATE "C",
    ALTER workflow TYPE text COLLATE "C",
    ALTER user_name TYPE text COLLATE "C",
    ALTER program TYPE text COLLATE "C",
    ALTER host TYPE text COLLATE "C",
    ALTER namespace TYPE text COLLATE "C",
    ALTER pod TYPE text COLLATE "C",
    ALTER container_name TYPE text COLLATE "C";

ALTER TABLE attribution_rollup_hourly
    ALTER src_site TYPE text COLLATE "C",
    ALTER dst_site TYPE text COLLATE "C",
    ALTER source TYPE text COLLATE "C",
    ALTER workflow TYPE text COLLATE "C",
    ALTER user_name TYPE text COLLATE "C",
    ALTER program TYPE text COLLATE "C",
    ALTER host TYPE text COLLATE "C",
    ALTER namespace TYPE text COLLATE "C",
    ALTER pod TYPE text COLLATE "C",
    ALTER container_name TYPE text COLLATE "C";

ALTER TABLE dependency_rollup
    ALTER local_site TYPE text COLLATE "C",
    ALTER workflow TYPE text COLLATE "C",
    ALTER user_name TYPE text COLLATE "C",
    ALTER program TYPE text COLLATE "C",
    ALTER remote_site TYPE text COLLATE "C",
    ALTER kind TYPE text COLLATE "C",
    ALTER endpoint TYPE text COLLATE "C";

-- The cells' hourly rows are updated by every window of their hour after the first (93,000 rows
-- a window at 500 sites, sql/013): with full pages every update is a new tuple in another page
-- and an entry in both indexes; with room left on each page the update stays on its page and
-- touches no index (HOT). Measured on a scratch server, 93,000 hourly rows updated by one
-- window's upsert, n = 4 each: fillfactor 100 1.74-2.38 s, fillfactor 50 0.91-1.30 s, every
-- update HOT, the table 34 MB instead of 81 MB after four windows. Pages written from now on keep
-- the room (the hours already ended are not updated again but by late data).
ALTER TABLE heatmap_cells_hourly SET (fillfactor = 50);
