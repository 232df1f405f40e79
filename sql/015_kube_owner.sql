-- Kubernetes identity of an owner (issue #16): the pod namespace, pod name and container name the
-- agent reports for processes in pod cgroups (flow members "namespace", "pod", "container_name";
-- '' when the process is in no pod). Stored on each flow record (the existing `container`
-- column stays the agent's container id) and part of the owner of attribution_rollup and
-- attribution_rollup_hourly, so two pods of one workflow, user and program stay apart. Default
-- '' so rows written before this migration stay valid (and keep their keys). ALTER on the parent
-- adds the columns to every partition of flow_records.
ALTER TABLE flow_records
    ADD COLUMN namespace text NOT NULL DEFAULT '',
    ADD COLUMN pod text NOT NULL DEFAULT '',
    ADD COLUMN container_name text NOT NULL DEFAULT '';

ALTER TABLE attribution_rollup
    ADD COLUMN namespace text NOT NULL DEFAULT '',
    ADD COLUMN pod text NOT NULL DEFAULT '',
    ADD COLUMN container_name text NOT NULL DEFAULT '',
    DROP CONSTRAINT attribution_rollup_pkey,
    ADD PRIMARY KEY (window_start, src_site, dst_site, source, workflow, user_name, program, host,
                     namespace, pod, container_name);

ALTER TABLE attribution_rollup_hourly
    ADD COLUMN namespace text NOT NULL DEFAULT '',
    ADD COLUMN pod text NOT NULL DEFAULT '',
    ADD COLUMN container_name text NOT NULL DEFAULT '',
    DROP CONSTRAINT attribution_rollup_hourly_pkey,
    ADD PRIMARY KEY (hour_start, src_site, dst_site, source, workflow, user_name, program, host,
                     namespace, pod, container_name);

-- 013's trigger function with the owner's new columns (same statements, same key order).
CREATE OR REPLACE FUNCTION wl_rollup_hourly_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    src text;
    sgn int;
BEGIN
    FOR src, sgn IN SELECT * FROM (VALUES ('old_rows', -1), ('new_rows', 1)) v(s, g)
        WHERE (g < 0 AND TG_OP IN ('UPDATE', 'DELETE')) OR (g > 0 AND TG_OP IN ('UPDATE', 'INSERT'))
    LOOP
        EXECUTE format($q$
        INSERT INTO attribution_rollup_hourly AS h (hour_start, src_site, dst_site, source,
            workflow, user_name, program, host, namespace, pod, container_name, windows, bytes)
        SELECT date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, source,
            workflow, user_name, program, host, namespace, pod, container_name,
            %1$s * count(*), %1$s * sum(bytes)
          FROM %2$s GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
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
