-- Owner rows at fleet size (issue #14): the per-hour owner rollup is built once per hour instead of
-- being upserted by every window, and the per-window owner and dependency rows lose their wide
-- primary keys.
--
-- Measured on a 5 M-flow window (2.04 M owner rows, bench/reconciler/bench_fleet): the hourly
-- upsert of every window's owner rows took 85-120 s per window (each of the hour's 60 windows
-- updating the same 2 M hourly rows again), and the COPY of the rows through the 11-column key
-- and the pair index 31 s against 20 s with the pair index and a window_start index.
--
-- attribution_hours lists the hours whose attribution_rollup_hourly rows exist ("folded" hours).
-- For a folded hour the hourly rows equal the sums of its per-window rows, and every writer keeps
-- them so: the reconciler's signed changes (recon_db_diff.c), retention, the statement triggers
-- of 013/018 for any other writer. An hour not in attribution_hours has no hourly rows; whoever
-- reads a range reads that hour's per-window rows (wl_attribution_range). The reconciler folds an
-- hour once it has ended (wl_fold_owner_hour, from its fold thread: reconciler/fold_thread.c);
-- a window reconciled after that (late data) adds its changes to the folded hour like any other.
--
-- Every hour that has rows today is folded here: its hourly rows were kept equal to its windows.

CREATE TABLE attribution_hours (
    hour_start timestamptz PRIMARY KEY,
    folded_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO attribution_hours (hour_start)
SELECT DISTINCT date_bin('1 hour', window_start, timestamptz 'epoch') FROM attribution_rollup
UNION
SELECT DISTINCT hour_start FROM attribution_rollup_hourly;

-- Writers of one hour's owner rows one at a time (the reconciler's windows of that hour, the
-- fold of it, retention's partial hour): a transaction-level advisory lock keyed by the hour's
-- epoch seconds, which does not depend on the session's TimeZone.
CREATE FUNCTION wl_hour_lock(h timestamptz) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtext('wanledger.reconcile.hour'),
                                 hashtext(extract(epoch FROM h)::bigint::text))
$$;

-- The per-window rows' uniqueness is the writer's (recon.c sums per owner; one reconciliation
-- of a window at a time); lookups by window use the narrow index, readers the pair index.
ALTER TABLE attribution_rollup DROP CONSTRAINT attribution_rollup_pkey;
CREATE INDEX attribution_rollup_window ON attribution_rollup (window_start);
-- The dependency map's rows the same way (500,000 a window at 5 M flows, an 8-column key and
-- three selector indexes): the selectors' indexes stay for the readers.
ALTER TABLE dependency_rollup DROP CONSTRAINT dependency_rollup_pkey;
CREATE INDEX dependency_rollup_window ON dependency_rollup (window_start);

-- 015's trigger function, limited to folded hours (and taking their locks in hour order).
CREATE OR REPLACE FUNCTION wl_rollup_hourly_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    src text;
    sgn int;
BEGIN
    FOR src, sgn IN SELECT * FROM (VALUES ('old_rows', -1), ('new_rows', 1)) v(s, g)
        WHERE (g < 0 AND TG_OP IN ('UPDATE', 'DELETE')) OR (g > 0 AND TG_OP IN ('UPDATE', 'INSERT'))
    LOOP
        EXECUTE format($q$
        SELECT wl_hour_lock(hs) FROM (SELECT DISTINCT
            date_bin('1 hour', window_start, timestamptz 'epoch') AS hs FROM %1$s ORDER BY 1) l$q$,
        src);
        EXECUTE format($q$
        INSERT INTO attribution_rollup_hourly AS h (hour_start, src_site, dst_site, source,
            workflow, user_name, program, host, namespace, pod, container_name, windows, bytes)
        SELECT date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, source,
            workflow, user_name, program, host, namespace, pod, container_name,
            %1$s * count(*), %1$s * sum(bytes)
          FROM %2$s WHERE date_bin('1 hour', window_start, timestamptz 'epoch')
                          IN (SELECT hour_start FROM attribution_hours)
          GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
          ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
        ON CONFLICT (hour_start, src_site, dst_site, source, workflow, user_name, program, host,
                     namespace, pod, container_name)
        DO UPDATE SET windows = h.windows + EXCLUDED.windows, bytes = h.bytes + EXCLUDED.bytes$q$,
        sgn, src);
    END LOOP;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM attribution_rollup_hourly h USING (SELECT DISTINCT
            date_bin('1 hour', window_start, timestamptz 'epoch') AS hs, src_site, dst_site
            FROM old_rows) o
        WHERE h.windows = 0 AND (h.hour_start, h.src_site, h.dst_site) = (o.hs, o.src_site, o.dst_site);
    END IF;
    RETURN NULL;
END $$;

-- Folds hour h: its hourly rows from its per-window rows, in key order, and the hour marked.
-- Returns the hourly rows written, or -1 when h was folded already. The caller's transaction
-- holds the hour's lock from here to its commit.
CREATE FUNCTION wl_fold_owner_hour(h timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    prev text := coalesce(current_setting('wanledger.hourly_writer', true), '');
BEGIN
    IF h <> date_bin('1 hour', h, timestamptz 'epoch') THEN
        RAISE EXCEPTION 'wl_fold_owner_hour: % is not the start of an hour', h;
    END IF;
    PERFORM wl_hour_lock(h);
    IF EXISTS (SELECT 1 FROM attribution_hours WHERE hour_start = h) THEN
        RETURN -1;
    END IF;
    PERFORM set_config('wanledger.hourly_writer', 'on', true);
    INSERT INTO attribution_rollup_hourly (hour_start, src_site, dst_site, source, workflow,
        user_name, program, host, namespace, pod, container_name, windows, bytes)
    SELECT h, src_site, dst_site, source, workflow, user_name, program, host, namespace, pod,
           container_name, count(*), sum(bytes)
      FROM attribution_rollup WHERE window_start >= h AND window_start < h + interval '1 hour'
     GROUP BY 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 ORDER BY 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO attribution_hours (hour_start) VALUES (h);
    PERFORM set_config('wanledger.hourly_writer', prev, true);
    RETURN n;
END $$;

-- The hours a fold may take: ended before `before`, with windows the reconciler knows of
-- (window_state), not folded, and none of their windows waiting to be reconciled (a backlog's
-- windows would each add to the folded rows: the upsert the fold is there to avoid) unless the
-- hour ended over 6 hours before `before`; oldest first.
CREATE FUNCTION wl_owner_hours_to_fold(before timestamptz, max_hours int)
RETURNS SETOF timestamptz LANGUAGE sql STABLE AS $$
    SELECT h.hs FROM (
        SELECT date_bin('1 hour', w.window_start, timestamptz 'epoch') AS hs, bool_or(w.dirty) AS dirty
          FROM window_state w GROUP BY 1) h
     WHERE h.hs + interval '1 hour' <= before
       AND (NOT h.dirty OR h.hs + interval '7 hours' <= before)
       AND NOT EXISTS (SELECT 1 FROM attribution_hours f WHERE f.hour_start = h.hs)
     ORDER BY 1 LIMIT max_hours
$$;

-- 013's range reader: folded whole hours from attribution_rollup_hourly, every other part of
-- [lo, hi) (the partial hours at its edges, whole hours not folded yet) from the per-window rows.
CREATE OR REPLACE FUNCTION wl_attribution_range(lo timestamptz, hi timestamptz) RETURNS TABLE (
    src_site text, dst_site text, source text, workflow text, user_name text, program text,
    host text, bytes bigint)
LANGUAGE sql STABLE AS $$
    WITH b AS (SELECT date_bin('1 hour', lo + interval '1 hour' - interval '1 microsecond',
                               timestamptz 'epoch') AS h0,
                      date_bin('1 hour', hi, timestamptz 'epoch') AS h1),
    open_hours AS (
        SELECT g.h FROM b, generate_series(b.h0, b.h1 - interval '1 hour', interval '1 hour') g(h)
         WHERE b.h0 < b.h1 AND NOT EXISTS (SELECT 1 FROM attribution_hours f WHERE f.hour_start = g.h)),
    parts AS (
        SELECT h.src_site, h.dst_site, h.source, h.workflow, h.user_name, h.program, h.host, h.bytes
          FROM attribution_rollup_hourly h, b WHERE h.hour_start >= b.h0 AND h.hour_start < b.h1
        UNION ALL
        SELECT a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, a.host, a.bytes
          FROM attribution_rollup a, b WHERE b.h0 >= b.h1 AND a.window_start >= lo
           AND a.window_start < hi
        UNION ALL
        SELECT a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, a.host, a.bytes
          FROM attribution_rollup a, b WHERE b.h0 < b.h1 AND a.window_start >= lo
           AND a.window_start < b.h0
        UNION ALL
        SELECT a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, a.host, a.bytes
          FROM attribution_rollup a, b WHERE b.h0 < b.h1 AND a.window_start >= b.h1
           AND a.window_start < hi
        UNION ALL
        SELECT a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, a.host, a.bytes
          FROM open_hours o JOIN attribution_rollup a
            ON a.window_start >= o.h AND a.window_start < o.h + interval '1 hour')
    SELECT src_site, dst_site, source, workflow, user_name, program, host, sum(bytes)::bigint
      FROM parts GROUP BY 1, 2, 3, 4, 5, 6, 7
$$;

-- 019's retention, also forgetting the folded marks of the whole hours it deletes, and taking
-- the cutoff hour's lock before its partial delete through the triggers.
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
    PERFORM set_config('wanledger.hourly_writer', 'on', true);
    DELETE FROM heatmap_cells_hourly WHERE hour_start < whole;
    DELETE FROM attribution_rollup_hourly WHERE hour_start < whole;
    DELETE FROM attribution_hours WHERE hour_start < whole;
    DELETE FROM heatmap_cells WHERE window_start < whole;
    GET DIAGNOSTICS n_cells = ROW_COUNT;
    DELETE FROM attribution_rollup WHERE window_start < whole;
    GET DIAGNOSTICS n_owners = ROW_COUNT;
    PERFORM set_config('wanledger.hourly_writer', prev, true);
    PERFORM wl_hour_lock(whole);
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
    IF to_regclass('dependency_rollup') IS NOT NULL THEN
        EXECUTE 'DELETE FROM dependency_rollup WHERE window_start < $1' USING results_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'dependency_rollup'; deleted := n; RETURN NEXT;
    END IF;
    IF to_regclass('flow_samples') IS NOT NULL THEN
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
        EXECUTE 'DELETE FROM flow_if_counters WHERE at < $1' USING state_cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        table_name := 'flow_if_counters'; deleted := n; RETURN NEXT;
    END IF;
END $$;
