-- Sums over many windows leave out the incomplete windows (docs/design.md "Sums over many
-- windows"). An incomplete window's figures are not measurements of the whole window: after a
-- poll gap its observed bytes cover part of it while its attributed bytes cover all of it (so,
-- summed in, coverage rises), after an agent's lost span its attributed bytes are short
-- (coverage falls) and its unattributed bytes are an upper bound. Such windows stay counted
-- (n_incomplete, incomplete_windows) and their per-window rows keep every figure; the byte
-- columns of heatmap_cells_hourly, wl_cells_range and coverage_weekly leave them out, and so do
-- the seconds of the first two (the time the byte sums cover: rates divide by it). no_counter
-- windows stay in: nothing was observed on them (NULL), and their attributed bytes are what the
-- heatmap shows for a pair without a counter.
CREATE FUNCTION wl_known(status text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT status <> 'incomplete'
$$;

CREATE OR REPLACE FUNCTION wl_cells_hourly_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
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
            %1$s * count(*),
            %1$s * coalesce(sum(window_seconds) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(observed_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(observed_payload_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(attributed_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(socket_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(nfs_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(service_bytes) FILTER (WHERE wl_known(status)), 0),
            %1$s * coalesce(sum(unattributed_bytes) FILTER (WHERE wl_known(status)), 0),
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

-- The hourly rows already written summed every window: the incomplete windows still held per
-- window come out again (the sums are additive, so this is exact for the hours whose windows are
-- all still held; hours already pruned to their hourly row keep what they had).
UPDATE heatmap_cells_hourly h SET
    seconds = h.seconds - u.seconds, observed_bytes = h.observed_bytes - u.observed_bytes,
    observed_payload_bytes = h.observed_payload_bytes - u.observed_payload_bytes,
    attributed_bytes = h.attributed_bytes - u.attributed_bytes,
    socket_bytes = h.socket_bytes - u.socket_bytes, nfs_bytes = h.nfs_bytes - u.nfs_bytes,
    service_bytes = h.service_bytes - u.service_bytes,
    unattributed_bytes = h.unattributed_bytes - u.unattributed_bytes
  FROM (SELECT date_bin('1 hour', window_start, timestamptz 'epoch') AS hs, src_site, dst_site,
               sum(window_seconds) AS seconds,
               coalesce(sum(observed_bytes), 0) AS observed_bytes,
               coalesce(sum(observed_payload_bytes), 0) AS observed_payload_bytes,
               coalesce(sum(attributed_bytes), 0) AS attributed_bytes,
               coalesce(sum(socket_bytes), 0) AS socket_bytes,
               coalesce(sum(nfs_bytes), 0) AS nfs_bytes,
               coalesce(sum(service_bytes), 0) AS service_bytes,
               coalesce(sum(unattributed_bytes), 0) AS unattributed_bytes
          FROM heatmap_cells WHERE NOT wl_known(status) GROUP BY 1, 2, 3) u
 WHERE (h.hour_start, h.src_site, h.dst_site) = (u.hs, u.src_site, u.dst_site);

CREATE OR REPLACE FUNCTION wl_cells_range(lo timestamptz, hi timestamptz) RETURNS TABLE (
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
        SELECT c.src_site, c.dst_site, 1, k * c.window_seconds, k * coalesce(c.observed_bytes, 0),
               k * coalesce(c.observed_payload_bytes, 0), k * coalesce(c.attributed_bytes, 0),
               k * coalesce(c.socket_bytes, 0), k * coalesce(c.nfs_bytes, 0),
               k * coalesce(c.service_bytes, 0), k * coalesce(c.unattributed_bytes, 0),
               (c.status = 'ok')::int, (c.status = 'warn')::int, (c.status = 'red')::int,
               (c.status = 'over')::int, (c.status = 'idle')::int,
               (c.status = 'incomplete')::int, (c.status = 'no_counter')::int
          FROM heatmap_cells c, b, LATERAL (SELECT wl_known(c.status)::int AS k) kk
         WHERE c.window_start >= lo AND c.window_start < hi
           AND (b.h0 >= b.h1 OR c.window_start < b.h0 OR c.window_start >= b.h1))
    SELECT src_site, dst_site, sum(windows)::bigint, sum(seconds)::bigint,
           sum(observed_bytes)::bigint, sum(observed_payload_bytes)::bigint,
           sum(attributed_bytes)::bigint, sum(socket_bytes)::bigint, sum(nfs_bytes)::bigint,
           sum(service_bytes)::bigint, sum(unattributed_bytes)::bigint, sum(n_ok)::bigint,
           sum(n_warn)::bigint, sum(n_red)::bigint, sum(n_over)::bigint, sum(n_idle)::bigint,
           sum(n_incomplete)::bigint, sum(n_no_counter)::bigint
      FROM parts GROUP BY 1, 2
$$;

-- Same columns, same order; the volumes and the coverage over the known windows.
CREATE OR REPLACE VIEW coverage_weekly AS
SELECT to_char(window_start AT TIME ZONE 'UTC', 'IYYY-"W"IW') AS iso_week,
       date_trunc('week', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS week_start,
       src_site, dst_site,
       sum(observed_bytes) FILTER (WHERE wl_known(status))::bigint AS observed_bytes,
       sum(observed_payload_bytes) FILTER (WHERE wl_known(status))::bigint
           AS observed_payload_bytes,
       sum(attributed_bytes) FILTER (WHERE wl_known(status))::bigint AS attributed_bytes,
       sum(unattributed_bytes) FILTER (WHERE wl_known(status))::bigint AS unattributed_bytes,
       CASE WHEN sum(observed_payload_bytes) FILTER (WHERE wl_known(status)) > 0
            THEN (sum(attributed_bytes) FILTER (WHERE wl_known(status)))::double precision
                 / sum(observed_payload_bytes) FILTER (WHERE wl_known(status)) END AS coverage,
       count(*) FILTER (WHERE status = 'red') AS red_windows,
       count(*) FILTER (WHERE status = 'incomplete') AS incomplete_windows,
       count(*) AS windows
FROM heatmap_cells
GROUP BY 1, 2, src_site, dst_site;
