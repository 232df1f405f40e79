-- sFlow counter samples (generic interface counters, sFlow v5 counter record 0:1) as the
-- routers' agents sent them, beside the SNMP/gNMI counters of counter_samples as a second
-- opinion (pollers/README.md "sFlow counter samples"): cumulative octets and unicast packets per
-- (device, ifIndex), stamped with the datagram's arrival at the poller. Not an input of the
-- reconciliation: a link keeps one counter source. One row per sample; a resent batch adds
-- nothing (ON CONFLICT DO NOTHING on the key).
CREATE TABLE flow_if_counters (
    device text NOT NULL,
    if_index bigint NOT NULL,
    at timestamptz NOT NULL,
    poller text NOT NULL,
    in_octets numeric(20, 0) NOT NULL,  -- Counter64: up to 2^64 - 1
    out_octets numeric(20, 0) NOT NULL,
    in_pkts bigint NOT NULL,            -- Counter32
    out_pkts bigint NOT NULL,
    PRIMARY KEY (device, if_index, at)
);
CREATE INDEX flow_if_counters_at ON flow_if_counters (at);

-- wl_prune_results (005) with flow_if_counters: kept like the raw partitions.
CREATE OR REPLACE FUNCTION wl_prune_results(results_cutoff timestamptz, alerts_cutoff timestamptz,
                                 gaps_cutoff timestamptz, state_cutoff timestamptz)
RETURNS TABLE (table_name text, deleted bigint) LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    DELETE FROM heatmap_cells WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'heatmap_cells'; deleted := n; RETURN NEXT;
    DELETE FROM attribution_rollup WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'attribution_rollup'; deleted := n; RETURN NEXT;
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
