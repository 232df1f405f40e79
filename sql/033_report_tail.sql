-- Each agent's highest stored seq, so that a report arriving in order finds its neighbours without
-- reading every day of flow_reports (reconciler/README.md "Agent seq gaps").
--
-- wl_record_report_gaps (sql/025) runs for every fresh report and looked up the agent's previous
-- and next stored seqs with ORDER BY seq ... LIMIT 1 over flow_reports, which is partitioned by
-- day and keyed (agent_id, seq, window_start): each lookup probed the key index of every day's
-- partition. With 36 partitions (a month kept) the two took ~0.35 ms each, ~0.57 ms for the whole
-- call against 0.08 ms for the report's INSERT (pgbench, 1,000 agents, 2 clients).
--
-- agent_report_tail holds, per agent, a seq at least as high as every seq of the agent stored in
-- flow_reports, once `exact` is set: the trigger below raises it on every insert by any writer,
-- moving the one it replaces into prev_*; deleting reports (retention, by hand) never breaks
-- "at least as high". A report whose insert just raised an exact tail (tail = its seq and its
-- window) has nothing stored above it, and the report before it is the old tail when that row is
-- still stored: one lookup in one partition. Anything else (a late report filling a gap, the
-- agent's first report after this file, a tail whose row was deleted) takes the old path, which
-- makes the tail exact when nothing is stored above the report. The trigger's upsert locks the
-- agent's tail row to the end of the transaction, so an agent's reports are recorded one at a
-- time, as before (their rows' key already serialised equal seqs only).
CREATE TABLE agent_report_tail (
    agent_id text PRIMARY KEY,
    seq bigint NOT NULL,
    window_start timestamptz NOT NULL,
    prev_seq bigint,
    prev_window_start timestamptz,
    exact boolean NOT NULL DEFAULT false
) WITH (fillfactor = 50);

CREATE FUNCTION wl_report_tail_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO agent_report_tail AS t (agent_id, seq, window_start)
    VALUES (NEW.agent_id, NEW.seq, NEW.window_start)
    ON CONFLICT (agent_id) DO UPDATE SET prev_seq = t.seq, prev_window_start = t.window_start,
        seq = EXCLUDED.seq, window_start = EXCLUDED.window_start
     WHERE t.seq < EXCLUDED.seq;
    RETURN NEW;
END $$;

-- BEFORE, so that the tail is locked when the row goes in: store.c's ClickHouse statement inserts
-- the row and marks its window in one statement, where an AFTER trigger would run after the mark
-- and lock the window before the tail, the grouped commit (store_group.c) the tail before the
-- window: two such transactions could each wait for the other. A resend (ON CONFLICT DO NOTHING)
-- runs it too and changes nothing: its seq is stored, so an exact tail is at least as high.
CREATE TRIGGER flow_reports_tail BEFORE INSERT ON flow_reports
    FOR EACH ROW EXECUTE FUNCTION wl_report_tail_trigger();

-- 025's function with the tail's fast path; everything after the neighbours are known is 025's.
CREATE OR REPLACE FUNCTION wl_record_report_gaps(p_agent text, p_seq bigint, p_ws timestamptz,
                                      p_window int, p_spool bigint, p_lost_from timestamptz,
                                      p_lost_to timestamptz, p_lost_reason text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    prev record;
    nxt record;
    me record;
    g record;
    t record;
    n int := 0;
    carried bigint := 0; -- spool drops attributed to the gap this report splits
    delta bigint;
    take bigint;
    lost_sites text[];
    lo timestamptz;
    in_order boolean;
BEGIN
    UPDATE flow_reports SET spool_dropped_reports = p_spool
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws
       AND spool_dropped_reports IS DISTINCT FROM p_spool;
    SELECT host, window_start, spool_dropped_reports INTO me FROM flow_reports
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws;
    SELECT NULL::bigint AS seq, NULL::timestamptz AS window_start,
           NULL::bigint AS spool_dropped_reports INTO prev;
    nxt := prev;
    SELECT * INTO t FROM agent_report_tail WHERE agent_id = p_agent;
    in_order := t.exact AND t.seq = p_seq AND t.window_start = p_ws;
    IF in_order AND t.prev_seq IS NOT NULL THEN
        SELECT seq, window_start, spool_dropped_reports INTO prev FROM flow_reports
         WHERE agent_id = p_agent AND seq = t.prev_seq AND window_start = t.prev_window_start;
    END IF;
    IF NOT in_order OR (t.prev_seq IS NOT NULL AND prev.seq IS NULL) THEN
        SELECT seq, window_start, spool_dropped_reports INTO prev FROM flow_reports
         WHERE agent_id = p_agent AND seq < p_seq ORDER BY seq DESC LIMIT 1;
    END IF;
    IF NOT in_order THEN
        SELECT seq, window_start, spool_dropped_reports INTO nxt FROM flow_reports
         WHERE agent_id = p_agent AND seq > p_seq ORDER BY seq LIMIT 1;
        IF nxt.seq IS NULL THEN
            -- nothing stored above this report: it is the agent's tail, exactly
            UPDATE agent_report_tail SET seq = p_seq, window_start = p_ws, prev_seq = prev.seq,
                   prev_window_start = prev.window_start, exact = true
             WHERE agent_id = p_agent;
        END IF;
    END IF;
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

ALTER FUNCTION wl_record_report_gaps(text, bigint, timestamptz, int, bigint, timestamptz,
                                     timestamptz, text)
    SET plan_cache_mode = force_generic_plan;

-- 028's function, leaving a report's row alone when it was inserted with its sites already
-- (reconciler/store.c and store_group.c insert them with the report).
CREATE OR REPLACE FUNCTION wl_record_report(p_agent text, p_seq bigint, p_ws timestamptz,
                                            p_window int, p_spool bigint,
                                            p_lost_from timestamptz, p_lost_to timestamptz,
                                            p_lost_reason text, p_sites text[])
RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    UPDATE flow_reports SET local_sites = p_sites
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws
       AND local_sites IS DISTINCT FROM p_sites;
    RETURN wl_record_report_gaps(p_agent, p_seq, p_ws, p_window, p_spool, p_lost_from, p_lost_to,
                                 p_lost_reason);
END $$;

-- CREATE OR REPLACE dropped 030's setting: planned once per connection, as there.
ALTER FUNCTION wl_record_report(text, bigint, timestamptz, int, bigint, timestamptz, timestamptz,
                                text, text[])
    SET plan_cache_mode = force_generic_plan;
