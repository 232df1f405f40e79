-- A window's dependency rows packed one row per local site and owner (issue #14, docs/design.md
-- "Owner rows packed per pair"), as sql/022 did for the owner rows.
--
-- A 5 M-flow window at 500 sites has 500,000 dependency rows (local site x owner x remote
-- endpoint) but only ~6,000 (local site, owner) groups; one row per endpoint cost a heap tuple and
-- four btree entries each (5.8-7.2 s of the window's write in bench_fleet). Now
-- dependency_packed holds one row per window, local site and owner (workflow, user, program)
-- with the endpoints as arrays of equal length in recon_deps.c's order (bytes descending), and
-- dependency_rollup is a view with the old columns, one row per element. The selector indexes
-- (workflow, program, user, each with window_start) are on the packed rows, so the dependency
-- map's readers (heatmap/hm_deps.c, its `WHERE workflow = $1 AND window_start >= ...`) keep
-- their index. Other writers may INSERT, UPDATE or DELETE through the view (INSTEAD OF triggers:
-- an element appended, one equal element removed, or both); the dependency rows have no hourly
-- rollup, so nothing else is kept.

CREATE TABLE dependency_packed (
    window_start timestamptz NOT NULL,
    local_site text NOT NULL,
    workflow text NOT NULL,
    user_name text NOT NULL,
    program text NOT NULL,
    remote_site text[] NOT NULL,
    kind text[] NOT NULL,
    endpoint text[] NOT NULL,
    bytes_out bigint[] NOT NULL,
    bytes_in bigint[] NOT NULL,
    connections bigint[] NOT NULL,
    PRIMARY KEY (window_start, local_site, workflow, user_name, program),
    CHECK (cardinality(remote_site) > 0 AND array_ndims(remote_site) = 1
           AND cardinality(kind) = cardinality(remote_site)
           AND cardinality(endpoint) = cardinality(remote_site)
           AND cardinality(bytes_out) = cardinality(remote_site)
           AND cardinality(bytes_in) = cardinality(remote_site)
           AND cardinality(connections) = cardinality(remote_site)
           AND kind <@ ARRAY['peer', 'service', 'nfs', 'transfer']
           AND array_position(remote_site, NULL) IS NULL AND array_position(endpoint, NULL) IS NULL
           AND array_position(bytes_out, NULL) IS NULL AND array_position(bytes_in, NULL) IS NULL
           AND array_position(connections, NULL) IS NULL)
) WITH (toast_tuple_target = 8160);
CREATE INDEX dependency_packed_workflow ON dependency_packed (workflow, window_start);
CREATE INDEX dependency_packed_program ON dependency_packed (program, window_start);
CREATE INDEX dependency_packed_user ON dependency_packed (user_name, window_start);

INSERT INTO dependency_packed
SELECT window_start, local_site, workflow, user_name, program,
       array_agg(remote_site ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint),
       array_agg(kind ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint),
       array_agg(endpoint ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint),
       array_agg(bytes_out ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint),
       array_agg(bytes_in ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint),
       array_agg(connections ORDER BY bytes_out + bytes_in DESC, remote_site, kind, endpoint)
  FROM dependency_rollup GROUP BY 1, 2, 3, 4, 5;

DROP TABLE dependency_rollup;

CREATE VIEW dependency_rollup AS
SELECT p.window_start, p.local_site, p.workflow, p.user_name, p.program, u.remote_site, u.kind,
       u.endpoint, u.bytes_out, u.bytes_in, u.connections
  FROM dependency_packed p
 CROSS JOIN LATERAL unnest(p.remote_site, p.kind, p.endpoint, p.bytes_out, p.bytes_in,
                           p.connections) AS u(remote_site, kind, endpoint, bytes_out, bytes_in,
                                               connections);
ALTER VIEW dependency_rollup ALTER COLUMN workflow SET DEFAULT '';
ALTER VIEW dependency_rollup ALTER COLUMN user_name SET DEFAULT '';
ALTER VIEW dependency_rollup ALTER COLUMN program SET DEFAULT '';
ALTER VIEW dependency_rollup ALTER COLUMN bytes_out SET DEFAULT 0;
ALTER VIEW dependency_rollup ALTER COLUMN bytes_in SET DEFAULT 0;
ALTER VIEW dependency_rollup ALTER COLUMN connections SET DEFAULT 0;

CREATE FUNCTION wl_dependency_view_write() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    n integer;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT s.i, cardinality(p.remote_site) INTO i, n
          FROM dependency_packed p, generate_subscripts(p.remote_site, 1) s(i)
         WHERE (p.window_start, p.local_site, p.workflow, p.user_name, p.program)
               = (OLD.window_start, OLD.local_site, OLD.workflow, OLD.user_name, OLD.program)
           AND (p.remote_site[s.i], p.kind[s.i], p.endpoint[s.i], p.bytes_out[s.i],
                p.bytes_in[s.i], p.connections[s.i])
               = (OLD.remote_site, OLD.kind, OLD.endpoint, OLD.bytes_out, OLD.bytes_in,
                  OLD.connections)
         ORDER BY s.i LIMIT 1;
        IF i IS NULL THEN
            RETURN NULL; -- gone already (a concurrent writer)
        END IF;
        IF n = 1 THEN
            DELETE FROM dependency_packed p
             WHERE (p.window_start, p.local_site, p.workflow, p.user_name, p.program)
                   = (OLD.window_start, OLD.local_site, OLD.workflow, OLD.user_name, OLD.program);
        ELSE
            UPDATE dependency_packed p
               SET remote_site = p.remote_site[:i - 1] || p.remote_site[i + 1:],
                   kind = p.kind[:i - 1] || p.kind[i + 1:],
                   endpoint = p.endpoint[:i - 1] || p.endpoint[i + 1:],
                   bytes_out = p.bytes_out[:i - 1] || p.bytes_out[i + 1:],
                   bytes_in = p.bytes_in[:i - 1] || p.bytes_in[i + 1:],
                   connections = p.connections[:i - 1] || p.connections[i + 1:]
             WHERE (p.window_start, p.local_site, p.workflow, p.user_name, p.program)
                   = (OLD.window_start, OLD.local_site, OLD.workflow, OLD.user_name, OLD.program);
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
    END IF;
    IF NEW.remote_site IS NULL OR NEW.kind IS NULL OR NEW.endpoint IS NULL
       OR NEW.bytes_out IS NULL OR NEW.bytes_in IS NULL OR NEW.connections IS NULL THEN
        RAISE not_null_violation USING MESSAGE =
            'null value in a column of relation "dependency_rollup" violates not-null constraint';
    END IF;
    INSERT INTO dependency_packed AS p
    VALUES (NEW.window_start, NEW.local_site, NEW.workflow, NEW.user_name, NEW.program,
            ARRAY[NEW.remote_site], ARRAY[NEW.kind], ARRAY[NEW.endpoint], ARRAY[NEW.bytes_out],
            ARRAY[NEW.bytes_in], ARRAY[NEW.connections])
    ON CONFLICT (window_start, local_site, workflow, user_name, program) DO UPDATE
       SET remote_site = p.remote_site || EXCLUDED.remote_site, kind = p.kind || EXCLUDED.kind,
           endpoint = p.endpoint || EXCLUDED.endpoint,
           bytes_out = p.bytes_out || EXCLUDED.bytes_out,
           bytes_in = p.bytes_in || EXCLUDED.bytes_in,
           connections = p.connections || EXCLUDED.connections;
    RETURN NEW;
END $$;

CREATE TRIGGER dependency_rollup_write INSTEAD OF INSERT OR UPDATE OR DELETE
    ON dependency_rollup FOR EACH ROW EXECUTE FUNCTION wl_dependency_view_write();

-- 020's retention on the packed owner and dependency rows (a DELETE on a view would go element
-- by element through its trigger); the counts stay the owner and dependency rows' (the
-- elements).
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
    WITH d AS (DELETE FROM attribution_packed WHERE window_start < whole
                RETURNING cardinality(owner_ids) AS k)
    SELECT coalesce(sum(k), 0) INTO n_owners FROM d;
    PERFORM set_config('wanledger.hourly_writer', prev, true);
    PERFORM wl_hour_lock(whole);
    DELETE FROM heatmap_cells WHERE window_start < results_cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    table_name := 'heatmap_cells'; deleted := n_cells + n; RETURN NEXT;
    WITH d AS (DELETE FROM attribution_packed WHERE window_start < results_cutoff
                RETURNING cardinality(owner_ids) AS k)
    SELECT coalesce(sum(k), 0) INTO n FROM d;
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
    WITH d AS (DELETE FROM dependency_packed WHERE window_start < results_cutoff
                RETURNING cardinality(remote_site) AS k)
    SELECT coalesce(sum(k), 0) INTO n FROM d;
    table_name := 'dependency_rollup'; deleted := n; RETURN NEXT;
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
