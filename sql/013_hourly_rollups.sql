-- Hourly rollups of the result tables (docs/design.md "Incremental reconciliation and hourly
-- rollups"): one row per UTC hour and site pair (heatmap_cells_hourly), and per hour, pair and
-- owner (attribution_rollup_hourly), kept equal to the sums of the per-window rows by statement
-- triggers with transition tables on every INSERT, UPDATE and DELETE of heatmap_cells and
-- attribution_rollup (the reconciler's replace and merge, retention's delete, any other writer),
-- in the writer's transaction. A window belongs to the hour its start falls in (UTC). Sums of
-- nullable columns ignore NULLs, as the readers' coalesce(sum(x), 0) do; the status counts keep
-- unknown (incomplete, no_counter) apart from zero. Rows whose windows fall to 0 are deleted.
-- Readers of ranges of whole hours use these; wl_cells_range/wl_attribution_range add the
-- per-window rows of the partial hours at the edges.
CREATE TABLE heatmap_cells_hourly (
    hour_start timestamptz NOT NULL,
    src_site text NOT NULL,
    dst_site text NOT NULL,
    windows int NOT NULL,
    seconds bigint NOT NULL,
    observed_bytes bigint NOT NULL,
    observed_payload_bytes bigint NOT NULL,
    attributed_bytes bigint NOT NULL,
    socket_bytes bigint NOT NULL,
    nfs_bytes bigint NOT NULL,
    service_bytes bigint NOT NULL,
    unattributed_bytes bigint NOT NULL,
    n_ok int NOT NULL,
    n_warn int NOT NULL,
    n_red int NOT NULL,
    n_over int NOT NULL,
    n_idle int NOT NULL,
    n_incomplete int NOT NULL,
    n_no_counter int NOT NULL,
    PRIMARY KEY (hour_start, src_site, dst_site)
);
CREATE INDEX heatmap_cells_hourly_pair ON heatmap_cells_hourly (src_site, dst_site, hour_start);

CREATE TABLE attribution_rollup_hourly (
    hour_start timestamptz NOT NULL,
    src_site text NOT NULL,
    dst_site text NOT NULL,
    source text NOT NULL,
    workflow text NOT NULL,
    user_name text NOT NULL,
    program text NOT NULL,
    host text NOT NULL,
    windows int NOT NULL,
    bytes bigint NOT NULL,
    PRIMARY KEY (hour_start, src_site, dst_site, source, workflow, user_name, program, host)
);
CREATE INDEX attribution_rollup_hourly_pair ON attribution_rollup_hourly
    (src_site, dst_site, hour_start);

-- The trigger functions: for each transition table of the statement (old rows subtracted, new
-- rows added) one upsert in key order, so two writers of one hour lock its rows in the same order
-- (the reconciler also serialises writers of one hour). EXECUTE sees the transition tables.
CREATE FUNCTION wl_cells_hourly_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    src text;
    sgn int;
BEGIN
    FOR src, sgn IN SELECT * FROM (VALUES ('old_rows', -1), ('new_rows', 1)) v(s, g)
        WHERE (g < 0 AND TG_OP IN ('UPDATE', 'DELETE')) OR (g > 0 AND TG_OP IN ('UPDATE', 'INSERT'))
    LOOP
        EXECUTE format($q$
        INSERT INTO heatmap_cells_hourly AS h SELECT
            date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site,
            %1$s * count(*), %1$s * sum(window_seconds),
            %1$s * coalesce(sum(observed_bytes), 0), %1$s * coalesce(sum(observed_payload_bytes), 0),
            %1$s * coalesce(sum(attributed_bytes), 0), %1$s * coalesce(sum(socket_bytes), 0),
            %1$s * coalesce(sum(nfs_bytes), 0), %1$s * coalesce(sum(service_bytes), 0),
            %1$s * coalesce(sum(unattributed_bytes), 0),
            %1$s * count(*) FILTER (WHERE status = 'ok'),
            %1$s * count(*) FILTER (WHERE status = 'warn'),
            %1$s * count(*) FILTER (WHERE status = 'red'),
            %1$s * count(*) FILTER (WHERE status = 'over'),
            %1$s * count(*) FILTER (WHERE status = 'idle'),
            %1$s * count(*) FILTER (WHERE status = 'incomplete'),
            %1$s * count(*) FILTER (WHERE status = 'no_counter')
          FROM %2$s GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (hour_start, src_site, dst_site) DO UPDATE SET
            windows = h.windows + EXCLUDED.windows, seconds = h.seconds + EXCLUDED.seconds,
            observed_bytes = h.observed_bytes + EXCLUDED.observed_bytes,
            observed_payload_bytes = h.observed_payload_bytes + EXCLUDED.observed_payload_bytes,
            attributed_bytes = h.attributed_bytes + EXCLUDED.attributed_bytes,
            socket_bytes = h.socket_bytes + EXCLUDED.socket_bytes,
            nfs_bytes = h.nfs_bytes + EXCLUDED.nfs_bytes,
            service_bytes = h.service_bytes + EXCLUDED.service_bytes,
            unattributed_bytes = h.unattributed_bytes + EXCLUDED.unattributed_bytes,
            n_ok = h.n_ok + EXCLUDED.n_ok, n_warn = h.n_warn + EXCLUDED.n_warn,
            n_red = h.n_red + EXCLUDED.n_red, n_over = h.n_over + EXCLUDED.n_over,
            n_idle = h.n_idle + EXCLUDED.n_idle,
            n_incomplete = h.n_incomplete + EXCLUDED.n_incomplete,
            n_no_counter = h.n_no_counter + EXCLUDED.n_no_counter$q$, sgn, src);
    END LOOP;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM heatmap_cells_hourly h USING (SELECT DISTINCT
            date_bin('1 hour', window_start, timestamptz 'epoch') AS hs, src_site, dst_site
            FROM old_rows) o
        WHERE h.windows = 0 AND (h.hour_start, h.src_site, h.dst_site) = (o.hs, o.src_site, o.dst_site);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION wl_rollup_hourly_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    src text;
    sgn int;
BEGIN
    FOR src, sgn IN SELECT * FROM (VALUES ('old_rows', -1), ('new_rows', 1)) v(s, g)
        WHERE (g < 0 AND TG_OP IN ('UPDATE', 'DELETE')) OR (g > 0 AND TG_OP IN ('UPDATE', 'INSERT'))
    LOOP
        EXECUTE format($q$
        INSERT INTO attribution_rollup_hourly AS h SELECT
            date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, source,
            workflow, user_name, program, host, %1$s * count(*), %1$s * sum(bytes)
          FROM %2$s GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
        ON CONFLICT (hour_start, src_site, dst_site, source, workflow, user_name, program, host)
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

CREATE TRIGGER heatmap_cells_hourly_ins AFTER INSERT ON heatmap_cells
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER heatmap_cells_hourly_upd AFTER UPDATE ON heatmap_cells
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER heatmap_cells_hourly_del AFTER DELETE ON heatmap_cells
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION wl_cells_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_ins AFTER INSERT ON attribution_rollup
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION wl_rollup_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_upd AFTER UPDATE ON attribution_rollup
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION wl_rollup_hourly_trigger();
CREATE TRIGGER attribution_rollup_hourly_del AFTER DELETE ON attribution_rollup
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION wl_rollup_hourly_trigger();

-- What existed before this migration.
INSERT INTO heatmap_cells_hourly SELECT
    date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, count(*),
    sum(window_seconds), coalesce(sum(observed_bytes), 0), coalesce(sum(observed_payload_bytes), 0),
    coalesce(sum(attributed_bytes), 0), coalesce(sum(socket_bytes), 0), coalesce(sum(nfs_bytes), 0),
    coalesce(sum(service_bytes), 0), coalesce(sum(unattributed_bytes), 0),
    count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = 'warn'),
    count(*) FILTER (WHERE status = 'red'), count(*) FILTER (WHERE status = 'over'),
    count(*) FILTER (WHERE status = 'idle'), count(*) FILTER (WHERE status = 'incomplete'),
    count(*) FILTER (WHERE status = 'no_counter')
  FROM heatmap_cells GROUP BY 1, 2, 3;
INSERT INTO attribution_rollup_hourly SELECT
    date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, source, workflow,
    user_name, program, host, count(*), sum(bytes)
  FROM attribution_rollup GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- Per pair over [lo, hi): the whole hours from heatmap_cells_hourly, the partial hours at the
-- edges from heatmap_cells; columns as the heatmap's HM_GRID_SUMS_SQL (status counts in place
-- of per-window statuses).
CREATE FUNCTION wl_cells_range(lo timestamptz, hi timestamptz) RETURNS TABLE (
    src_site text, dst_site text, windows bigint, seconds bigint, observed_bytes bigint,
    observed_payload_bytes bigint, attributed_bytes bigint, socket_bytes bigint, nfs_bytes bigint,
    service_bytes bigint, unattributed_bytes bigint, n_ok bigint, n_warn bigint, n_red bigint,
    n_over bigint, n_idle bigint, n_incomplete bigint, n_no_counter bigint)
LANGUAGE sql STABLE AS $$
    WITH b AS (SELECT date_bin('1 hour', lo + interval '1 hour' - interval '1 microsecond',
                               timestamptz 'epoch') AS h0,
                      date_bin('1 hour', hi, timestamptz 'epoch') AS h1),
    parts AS (
        SELECT h.src_site, h.dst_site, h.windows, h.seconds, h.observed_bytes,
               h.observed_payload_bytes, h.attributed_bytes, h.socket_bytes, h.nfs_bytes,
               h.service_bytes, h.unattributed_bytes, h.n_ok, h.n_warn, h.n_red, h.n_over,
               h.n_idle, h.n_incomplete, h.n_no_counter
          FROM heatmap_cells_hourly h, b WHERE h.hour_start >= b.h0 AND h.hour_start < b.h1
        UNION ALL
        SELECT c.src_site, c.dst_site, 1, c.window_seconds, coalesce(c.observed_bytes, 0),
               coalesce(c.observed_payload_bytes, 0), coalesce(c.attributed_bytes, 0),
               coalesce(c.socket_bytes, 0), coalesce(c.nfs_bytes, 0), coalesce(c.service_bytes, 0),
               coalesce(c.unattributed_bytes, 0), (c.status = 'ok')::int, (c.status = 'warn')::int,
               (c.status = 'red')::int, (c.status = 'over')::int, (c.status = 'idle')::int,
               (c.status = 'incomplete')::int, (c.status = 'no_counter')::int
          FROM heatmap_cells c, b WHERE c.window_start >= lo AND c.window_start < hi
           AND (b.h0 >= b.h1 OR c.window_start < b.h0 OR c.window_start >= b.h1))
    SELECT src_site, dst_site, sum(windows)::bigint, sum(seconds)::bigint,
           sum(observed_bytes)::bigint, sum(observed_payload_bytes)::bigint,
           sum(attributed_bytes)::bigint, sum(socket_bytes)::bigint, sum(nfs_bytes)::bigint,
           sum(service_bytes)::bigint, sum(unattributed_bytes)::bigint, sum(n_ok)::bigint,
           sum(n_warn)::bigint, sum(n_red)::bigint, sum(n_over)::bigint, sum(n_idle)::bigint,
           sum(n_incomplete)::bigint, sum(n_no_counter)::bigint
      FROM parts GROUP BY 1, 2
$$;

-- Per pair and owner over [lo, hi), the same way.
CREATE FUNCTION wl_attribution_range(lo timestamptz, hi timestamptz) RETURNS TABLE (
    src_site text, dst_site text, source text, workflow text, user_name text, program text,
    host text, bytes bigint)
LANGUAGE sql STABLE AS $$
    WITH b AS (SELECT date_bin('1 hour', lo + interval '1 hour' - interval '1 microsecond',
                               timestamptz 'epoch') AS h0,
                      date_bin('1 hour', hi, timestamptz 'epoch') AS h1),
    parts AS (
        SELECT h.src_site, h.dst_site, h.source, h.workflow, h.user_name, h.program, h.host, h.bytes
          FROM attribution_rollup_hourly h, b WHERE h.hour_start >= b.h0 AND h.hour_start < b.h1
        UNION ALL
        SELECT a.src_site, a.dst_site, a.source, a.workflow, a.user_name, a.program, a.host, a.bytes
          FROM attribution_rollup a, b WHERE a.window_start >= lo AND a.window_start < hi
           AND (b.h0 >= b.h1 OR a.window_start < b.h0 OR a.window_start >= b.h1))
    SELECT src_site, dst_site, source, workflow, user_name, program, host, sum(bytes)::bigint
      FROM parts GROUP BY 1, 2, 3, 4, 5, 6, 7
$$;
