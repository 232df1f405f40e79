-- Seq gaps per agent (reconciler/gaps.c): reports that never arrived (their seqs are missing
-- between two stored reports, e.g. dropped by the agent's bounded spool) and spans an agent says
-- it lost ("lost" in its report, e.g. restarted without its pinned probe). The cell page shows a
-- line under a cell when an agent of one of the cell's sites had a gap in that window.

-- The agent's cumulative count of reports its spool dropped, as of each report.
ALTER TABLE flow_reports ADD COLUMN spool_dropped_reports bigint NOT NULL DEFAULT 0;

CREATE TABLE agent_gaps (
    id bigserial PRIMARY KEY,
    agent_id text NOT NULL,
    host text NOT NULL,
    reason text NOT NULL,            -- 'seq_missing', or the agent's reason
    seq_from bigint,                 -- missing seqs, inclusive (NULL when the agent reported it)
    seq_to bigint,
    lost_from timestamptz NOT NULL,  -- the span without data: windows in [lost_from, lost_to)
    lost_to timestamptz NOT NULL,
    reported_seq bigint NOT NULL,    -- the report that revealed the gap
    spool_dropped_reports bigint NOT NULL DEFAULT 0, -- of the missing seqs, how many the spool dropped
    sites text[] NOT NULL DEFAULT '{}', -- the agent's sites (from its flows' local addresses)
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CHECK (lost_to >= lost_from),
    CHECK ((seq_from IS NULL) = (seq_to IS NULL) AND (seq_from IS NULL OR seq_to >= seq_from))
);
CREATE INDEX agent_gaps_agent ON agent_gaps (agent_id, seq_from);
CREATE INDEX agent_gaps_span ON agent_gaps (lost_to, lost_from);

-- The sites of an agent: those whose prefixes hold a local address of the flows of the given
-- reports.
CREATE FUNCTION wl_agent_sites(p_agent text, p_seqs bigint[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(DISTINCT s.name ORDER BY s.name), '{}')
    FROM flow_records r JOIN sites s
      ON EXISTS (SELECT 1 FROM unnest(s.prefixes) p WHERE r.local_addr <<= p::inet)
    WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs) AND r.local_addr IS NOT NULL
$$;

-- Called once per newly stored report (agent, seq): records the spool counter, then recomputes
-- the seq gaps around it — the gap between the previous stored seq and the next one is replaced
-- by the parts not covered by this report (an out-of-order arrival fills a gap) — and records
-- the span the agent says it lost. Returns the number of gap rows inserted.
CREATE FUNCTION wl_record_report_gaps(p_agent text, p_seq bigint, p_ws timestamptz,
                                      p_window int, p_spool bigint, p_lost_from timestamptz,
                                      p_lost_to timestamptz, p_lost_reason text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    prev record;
    nxt record;
    me record;
    g record;
    n int := 0;
    carried bigint := 0; -- spool drops attributed to the gap this report splits
    delta bigint;
    take bigint;
BEGIN
    UPDATE flow_reports SET spool_dropped_reports = p_spool
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws;
    SELECT host, window_start, spool_dropped_reports INTO me FROM flow_reports
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws;
    SELECT seq, window_start, spool_dropped_reports INTO prev FROM flow_reports
     WHERE agent_id = p_agent AND seq < p_seq ORDER BY seq DESC LIMIT 1;
    SELECT seq, window_start, spool_dropped_reports INTO nxt FROM flow_reports
     WHERE agent_id = p_agent AND seq > p_seq ORDER BY seq LIMIT 1;
    WITH d AS (DELETE FROM agent_gaps WHERE agent_id = p_agent AND reason = 'seq_missing'
                AND seq_from <= p_seq AND seq_to >= p_seq RETURNING spool_dropped_reports)
    SELECT coalesce(sum(spool_dropped_reports), 0) INTO carried FROM d;
    IF prev.seq IS NOT NULL AND prev.seq < p_seq - 1 THEN
        INSERT INTO agent_gaps (agent_id, host, reason, seq_from, seq_to, lost_from, lost_to,
                                reported_seq, spool_dropped_reports, sites)
        VALUES (p_agent, me.host, 'seq_missing', prev.seq + 1, p_seq - 1,
                least(prev.window_start + make_interval(secs => p_window), p_ws), p_ws, p_seq,
                least(carried, p_seq - 1 - prev.seq),
                wl_agent_sites(p_agent, ARRAY[prev.seq, p_seq]));
        carried := carried - least(carried, p_seq - 1 - prev.seq);
        n := n + 1;
    END IF;
    IF nxt.seq IS NOT NULL AND nxt.seq > p_seq + 1 THEN
        INSERT INTO agent_gaps (agent_id, host, reason, seq_from, seq_to, lost_from, lost_to,
                                reported_seq, spool_dropped_reports, sites)
        VALUES (p_agent, me.host, 'seq_missing', p_seq + 1, nxt.seq - 1,
                least(p_ws + make_interval(secs => p_window), nxt.window_start), nxt.window_start,
                nxt.seq, least(carried, nxt.seq - 1 - p_seq),
                wl_agent_sites(p_agent, ARRAY[p_seq, nxt.seq]));
        n := n + 1;
    END IF;
    -- The spool drops oldest first: a rise of the agent's cumulative drop counter over the
    -- previous report's means that many of its oldest missing seqs were dropped by its spool
    -- (the reports carrying the rise were made after the drop, so they arrive after the gap).
    -- The counter restarts at 0 with the agent: a value below the previous one is all new.
    delta := CASE WHEN prev.seq IS NULL THEN 0
                  WHEN p_spool >= prev.spool_dropped_reports
                  THEN p_spool - prev.spool_dropped_reports
                  ELSE p_spool END;
    IF delta > 0 THEN
        FOR g IN SELECT id, seq_to - seq_from + 1 - spool_dropped_reports AS room FROM agent_gaps
                  WHERE agent_id = p_agent AND reason = 'seq_missing' AND seq_to < p_seq
                    AND seq_to - seq_from + 1 > spool_dropped_reports ORDER BY seq_from LOOP
            EXIT WHEN delta <= 0;
            take := least(delta, g.room);
            UPDATE agent_gaps SET spool_dropped_reports = spool_dropped_reports + take
             WHERE id = g.id;
            delta := delta - take;
        END LOOP;
    END IF;
    IF p_lost_to IS NOT NULL THEN
        INSERT INTO agent_gaps (agent_id, host, reason, lost_from, lost_to, reported_seq,
                                sites)
        VALUES (p_agent, me.host, p_lost_reason, p_lost_from, greatest(p_lost_to, p_lost_from),
                p_seq, wl_agent_sites(p_agent, ARRAY[p_seq]));
        n := n + 1;
    END IF;
    RETURN n;
END $$;

-- Retention of the result and bookkeeping tables (raw partitions: wl_prune). Called by
-- `wanledger prune` and by the leading reconciler once a day (common/retention.c). Open alerts,
-- and resolutions not yet delivered, are never deleted; window_state rows only once their window
-- is clean and older than the raw data kept (a missing row would make the loop reconcile the
-- window again from whatever raw data is left).
CREATE FUNCTION wl_prune_results(results_cutoff timestamptz, alerts_cutoff timestamptz,
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
END $$;
