-- The hourly rollups (013) kept by the reconciler itself (docs/design.md "Result writes and
-- hourly rollups"): its transaction sets wanledger.hourly_writer = 'on' (SET LOCAL) and adds the
-- signed sums of only the rows it changed to heatmap_cells_hourly and attribution_rollup_hourly
-- in one upsert each (reconciler/recon_db_diff.c); the statement triggers stand aside for it.
-- Every other writer (retention's delete, a hand-made INSERT, the tests' seeds) leaves the
-- setting unset and keeps 013's triggers, so the hourly rows stay equal to the sums of the
-- per-window rows whoever writes. Same trigger functions, same events; only the WHEN is new.
CREATE FUNCTION wl_hourly_by_trigger() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('wanledger.hourly_writer', true), '') <> 'on'
$$;

DROP TRIGGER heatmap_cells_hourly_ins ON heatmap_cells;
DROP TRIGGER heatmap_cells_hourly_upd ON heatmap_cells;
DROP TRIGGER heatmap_cells_hourly_del ON heatmap_cells;
DROP TRIGGER attribution_rollup_hourly_ins ON attribution_rollup;
DROP TRIGGER attribution_rollup_hourly_upd ON attribution_rollup;
DROP TRIGGER attribution_rollup_hourly_del ON attribution_rollup;

CREATE TRIGGER heatmap_cells_hourly_ins AFTER INSERT ON heatmap_cells
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (wl_hourly_by_trigger())
    EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER heatmap_cells_hourly_upd AFTER UPDATE ON heatmap_cells
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (wl_hourly_by_trigger()) EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER heatmap_cells_hourly_del AFTER DELETE ON heatmap_cells
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT WHEN (wl_hourly_by_trigger())
    EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_ins AFTER INSERT ON attribution_rollup
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (wl_hourly_by_trigger())
    EXECUTE FUNCTION wl_rollup_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_upd AFTER UPDATE ON attribution_rollup
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (wl_hourly_by_trigger()) EXECUTE FUNCTION wl_rollup_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_del AFTER DELETE ON attribution_rollup
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT WHEN (wl_hourly_by_trigger())
    EXECUTE FUNCTION wl_rollup_hourly_trigger();
