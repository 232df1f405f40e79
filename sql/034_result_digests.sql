-- A window reconciled again writes only the tables whose rows changed (reconciler/README.md
-- "Result writes in proportion to what changed").
--
-- The reconciler writes a window's heatmap_cells, attribution_packed and dependency_packed rows
-- through recon_db_diff.c: the new rows into a temp table, compared with the stored ones, only the
-- differences written. The comparison itself cost ~2.3 s of a 5 M-flow window whose results had
-- not changed (bench_fleet run 2: COPY of the new rows 0.1-0.66 s per table, ANALYZE, two
-- anti-joins each), and a window reconciled again for a late counter sample or an agent's lost
-- span changes its cells, not its owners or dependencies.
--
-- result_digests keeps, per window and table, the SHA-256 of the rows the reconciler last wrote
-- there (the COPY data it sent, with the table's name and the row count), written in the same
-- transaction as the rows. When the new rows' digest equals the stored one, the table holds
-- exactly those rows and nothing is compared or written. The reconciler's write transaction and
-- retention's (common/retention.c: it deletes the digests of the windows it empties) set
-- wanledger.result_writer and keep the digests themselves; a statement by anything else on these
-- tables (a write through the attribution_rollup view, a hand, a test) forgets every digest of
-- the table, so the next reconciliation of any window compares as before. Its lock (SHARE ROW EXCLUSIVE on
-- result_digests) waits for every reconciler transaction that took ROW EXCLUSIVE there before
-- reading the stored rows (recon_db_write.c), and holds later ones off until it commits: a digest
-- is never stored from a comparison that missed another writer's change, nor kept after one.
CREATE TABLE result_digests (
    window_start timestamptz NOT NULL,
    table_name text NOT NULL,
    n_rows bigint NOT NULL,
    digest bytea NOT NULL,
    PRIMARY KEY (window_start, table_name)
);

CREATE FUNCTION wl_result_digests_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('wanledger.result_writer', true), '') <> 'on' THEN
        LOCK TABLE result_digests IN SHARE ROW EXCLUSIVE MODE;
        DELETE FROM result_digests WHERE table_name = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER heatmap_cells_digests AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON heatmap_cells FOR EACH STATEMENT EXECUTE FUNCTION wl_result_digests_forget();
CREATE TRIGGER attribution_packed_digests AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON attribution_packed FOR EACH STATEMENT EXECUTE FUNCTION wl_result_digests_forget();
CREATE TRIGGER dependency_packed_digests AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON dependency_packed FOR EACH STATEMENT EXECUTE FUNCTION wl_result_digests_forget();
