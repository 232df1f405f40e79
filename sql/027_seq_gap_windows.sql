-- Reports that never arrived make their windows incomplete (reconciler/README.md "Agent seq
-- gaps", docs/design.md "Status"): a seq_missing gap row spans [lost_from, lost_to), from the end
-- of the window of the report before the gap to the start of the window of the report after it;
-- the agent's counts for those windows are unknown, so the windows are reconciled again (the
-- newest 10,080 at most) and recon_db_lost.c marks the cells of the pairs of the agent's sites
-- incomplete, as for a lost span. A gap row is only written once the report after the gap has
-- arrived, usually after its windows were reconciled: hence the marking here. When a missing
-- report arrives later, wl_record_report_gaps replaces the gap by what is still missing, and the
-- report's own window is marked by its ingest; the windows still missing stay incomplete.
CREATE FUNCTION wl_seq_gap_mark_windows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wsec int;
    lo timestamptz;
BEGIN
    SELECT window_seconds INTO wsec FROM flow_reports
     WHERE agent_id = NEW.agent_id AND seq = NEW.reported_seq LIMIT 1;
    IF wsec IS NULL OR wsec <= 0 THEN
        RETURN NULL;
    END IF;
    lo := greatest(date_bin(make_interval(secs => wsec), NEW.lost_from, timestamptz 'epoch'),
                   NEW.lost_to - make_interval(secs => wsec * 10080));
    INSERT INTO window_state (window_start, window_seconds)
    SELECT mark.ws, wsec
      FROM generate_series(lo, NEW.lost_to - make_interval(secs => 0.000001),
                           make_interval(secs => wsec)) AS mark (ws)
    ON CONFLICT (window_start) DO UPDATE SET dirty = true, last_data_at = clock_timestamp();
    RETURN NULL;
END $$;

CREATE TRIGGER agent_gaps_seq_missing_windows AFTER INSERT ON agent_gaps
    FOR EACH ROW WHEN (NEW.reason = 'seq_missing' AND NEW.lost_to > NEW.lost_from)
    EXECUTE FUNCTION wl_seq_gap_mark_windows();
