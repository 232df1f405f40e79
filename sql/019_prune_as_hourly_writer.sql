-- wl_prune_results (014) at fleet size: the whole hours before the results cutoff are pruned as
-- the hourly writer of 018 (their hourly rows deleted outright, the statement triggers standing
-- aside), the rest of the cutoff's hour through the triggers. Same arguments, same result rows.
CREATE OR REPLACE FUNCTION wl_prune_results(results_cutoff timestamptz, alerts_cutoff timestamptz,
                                 gaps_cutoff timestamptz, state_cutoff timestamptz)
RETURNS TABLE (table_name text, deleted bigint) LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    n_cells bigint;
    n_owners bigint;
    whole timestamptz := date_trunc('hour', results_cutoff);
    prev text := coalesce(current_setting('wanledger.hourly_writer', true), '');
BEGIN
    -- Whole hours before the cutoff: their hourly rows are deleted with their windows, as the
    -- hourly writer (018: the statement triggers stand aside), instead of the triggers
    -- subtracting every deleted row through a transition table (a 5 M-flow window's 2 M owner
    -- rows hit the 300 s statement timeout that way).
    PERFORM set_config('wanledger.hourly_writer', 'on', true);
    DELETE FROM heatmap_cells_hourly WHERE hour_start < whole;
    DELETE FROM attribution_rollup_hourly WHERE hour_start < whole;
    DELETE FROM heatmap_cells WHERE window_start < whole;
    GET DIAGNOSTICS n_cells = ROW_COUNT;
    DELETE FROM attribution_rollup WHERE window_start < whole;
    GET DIAGNOSTICS n_owners = ROW_COUNT;
    PERFORM set_config('wanledger.hourly_writer', prev, true);
    -- The part of the cutoff's hour before it: through the triggers (less than an hour of rows),
    -- so that hour's row keeps the sums of the windows that stay.
    DELETE FROM heatmap_cells WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'heatmap_cells'; deleted := n_cells + n; RETURN NEXT;
    DELETE FROM attribution_rollup WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'attribution_rollup'; deleted := n_owners + n; RETURN NEXT;
    DELETE FROM link_windows WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'link_windows'; deleted := n; RETURN NEXT;
    DELETE FROM gap_alerts WHERE state = 'resolved' AND resolved_sent
       AND resolved_at < alerts_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'gap_alerts'; deleted := n; RETURN NEXT;
    DELETE FROM agent_gaps WHERE lost_to < gaps_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'agent_gaps'; deleted := n; RETURN NEXT;
    DELETE FROM window_state WHERE window_start < state_cutoff AND NOT dirty;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'window_state'; deleted := n; RETURN NEXT;
    -- tables of later migrations (008 flow samples, 010 dependency map), when they exist
    IF to_regclass('dependency_rollup') IS NOT NULL THEN
        EXECUTE 'DELETE FROM dependency_rollup WHERE window_start < $1' USING results_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'dependency_rollup'; deleted := n; RETURN NEXT;
    END IF;
    IF to_regclass('flow_samples') IS NOT NULL THEN
        -- raw inputs (sampled router flows), kept like the raw partitions
        EXECUTE 'DELETE FROM flow_samples WHERE window_start < $1' USING state_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'flow_samples'; deleted := n; RETURN NEXT;
        EXECUTE 'DELETE FROM flow_sample_batches WHERE received_at < $1' USING state_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'flow_sample_batches'; deleted := n; RETURN NEXT;
        EXECUTE 'DELETE FROM flow_collector_stats WHERE updated_at < $1' USING state_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'flow_collector_stats'; deleted := n; RETURN NEXT;
    END IF;
    IF to_regclass('flow_if_counters') IS NOT NULL THEN
        -- raw inputs too (sFlow counter samples)
        EXECUTE 'DELETE FROM flow_if_counters WHERE at < $1' USING state_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'flow_if_counters'; deleted := n; RETURN NEXT;
    END IF;
END $$;
