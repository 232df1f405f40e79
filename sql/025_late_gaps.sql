-- Late ticks (agentlib/README.md "Late ticks", reconciler/README.md "Agent seq gaps"):
-- an agent whose drain ran late reports the span [lost_from, lost_to) it cannot place
-- (reason late_drain) in every report it sends for the windows it skipped, and those reports are
-- empty. wl_record_report_gaps is replaced so that
-- - a gap row takes its sites from the agent's nearest earlier report with flows when the
--   reports around it have none (an empty report's local addresses say nothing): within the
--   1,000 seqs before it;
-- - a lost span already recorded for the agent with the same reason and bounds is not recorded
--   again (its sites filled in if they were empty);
-- - a newly recorded lost span marks the windows it overlaps dirty (the newest 10,080 of them at
--   most), so they are reconciled again and become incomplete for the pairs of the agent's sites
--   (reconciler/recon_db_lost.c), even when they were reconciled before the report arrived.
-- Also: agent_gaps_agent_span, the index those lookups use.

-- The sites of an agent as of p_seq: those of p_seqs' flows, else those of the nearest earlier
-- report (within 1,000 seqs) that has flows.
CREATE FUNCTION wl_agent_sites_near(p_agent text, p_seqs bigint[], p_seq bigint) RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
    s text[];
    last_seq bigint;
BEGIN
    s := wl_agent_sites(p_agent, p_seqs);
    IF s <> '{}' THEN
        RETURN s;
    END IF;
    SELECT seq INTO last_seq FROM flow_reports
     WHERE agent_id = p_agent AND seq < p_seq AND seq >= p_seq - 1000 AND n_flows > 0
       AND seq <> ALL (p_seqs)
     ORDER BY seq DESC LIMIT 1;
    IF last_seq IS NULL THEN
        RETURN s;
    END IF;
    RETURN wl_agent_sites(p_agent, ARRAY[last_seq]);
END $$;

CREATE INDEX agent_gaps_agent_span ON agent_gaps (agent_id, lost_from) WHERE seq_from IS NULL;

CREATE OR REPLACE FUNCTION wl_record_report_gaps(p_agent text, p_seq bigint, p_ws timestamptz,
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
    lost_sites text[];
    lo timestamptz;
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
                wl_agent_sites_near(p_agent, ARRAY[prev.seq, p_seq], p_seq));
        carried := carried - least(carried, p_seq - 1 - prev.seq);
        n := n + 1;
    END IF;
    IF nxt.seq IS NOT NULL AND nxt.seq > p_seq + 1 THEN
        INSERT INTO agent_gaps (agent_id, host, reason, seq_from, seq_to, lost_from, lost_to,
                                reported_seq, spool_dropped_reports, sites)
        VALUES (p_agent, me.host, 'seq_missing', p_seq + 1, nxt.seq - 1,
                least(p_ws + make_interval(secs => p_window), nxt.window_start), nxt.window_start,
                nxt.seq, least(carried, nxt.seq - 1 - p_seq),
                wl_agent_sites_near(p_agent, ARRAY[p_seq, nxt.seq], nxt.seq));
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
        lost_sites := wl_agent_sites_near(p_agent, ARRAY[p_seq], p_seq);
        -- the same span told again (every report of a late drain carries it): one row
        UPDATE agent_gaps SET sites = lost_sites
         WHERE agent_id = p_agent AND seq_from IS NULL AND reason = p_lost_reason
           AND lost_from = p_lost_from AND lost_to = greatest(p_lost_to, p_lost_from)
           AND sites = '{}' AND lost_sites <> '{}';
        IF NOT EXISTS (SELECT 1 FROM agent_gaps
                        WHERE agent_id = p_agent AND seq_from IS NULL AND reason = p_lost_reason
                          AND lost_from = p_lost_from
                          AND lost_to = greatest(p_lost_to, p_lost_from)) THEN
            INSERT INTO agent_gaps (agent_id, host, reason, lost_from, lost_to, reported_seq,
                                    sites)
            VALUES (p_agent, me.host, p_lost_reason, p_lost_from,
                    greatest(p_lost_to, p_lost_from), p_seq, lost_sites);
            n := n + 1;
            -- the windows the span overlaps are reconciled again (their cells become
            -- incomplete, reconciler/recon_db_lost.c): the newest 10,080 at most
            lo := greatest(date_bin(make_interval(secs => p_window), p_lost_from,
                                    timestamptz 'epoch'),
                           greatest(p_lost_to, p_lost_from)
                               - make_interval(secs => p_window * 10080));
            INSERT INTO window_state (window_start, window_seconds)
            SELECT mark.w, p_window
              FROM generate_series(lo, greatest(p_lost_to, p_lost_from)
                                       - make_interval(secs => 0.000001),
                                   make_interval(secs => p_window)) AS mark (w)
            ON CONFLICT (window_start) DO UPDATE SET dirty = true,
                                                     last_data_at = clock_timestamp();
        END IF;
    END IF;
    RETURN n;
END $$;
