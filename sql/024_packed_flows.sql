-- Raw flow records packed one row per run of a report's flows (issue #14, docs/design.md "Flow
-- records stored packed").
--
-- flow_records held one heap tuple per flow: 29 columns, a tuple header and a BRIN entry's share
-- each, ~2.3 us of PostgreSQL's COPY FROM per flow at fleet rates. Now:
--   flow_packed   one row per run of consecutive flows (idx0, idx0 + 1, ...) of one report
--                 (window_start, agent_id, seq), one array per column, element k (1-based)
--                 being flow idx0 + k - 1. host and source hold every element; every other array
--                 has the same length or is NULL, meaning every element NULL, or the old column
--                 default for tx_bytes, rx_bytes, nfs_bytes, nfs_ops (0) and namespace, pod,
--                 container_name (''); a NULL element of those means the default too. The array
--                 columns are compressed with lz4 (pglz cost most of the gain). Partitioned by day
--                 like the other raw tables, BRIN on window_start as sql/003 had.
--   flow_records  a view with the old table's columns, names, order and types, one row per
--                 element (a NULL array giving NULLs, or the defaults), so every reader's SQL is
--                 unchanged; its quals on window_start, agent_id, seq reach flow_packed's
--                 scan (and its partition pruning).
-- Ingest COPYs into flow_packed's day partitions; the reconciler's loader reads the arrays.
-- Other writers may INSERT into the view (tests do): an INSTEAD OF INSERT trigger writes a
-- one-element row, with the old defaults and NOT NULL checks, and returns the row (RETURNING).
-- DELETE and UPDATE through the view are refused by PostgreSQL ("cannot delete from view"): raw
-- flows are append-only and leave with their day's partition (wl_prune); a writer that must
-- remove a report's flows deletes its flow_packed rows.
-- Stored rows are moved: each flow_records partition's rows become flow_packed rows of at most
-- 100 consecutive flows in a partition of the same bounds, then flow_records is dropped.
-- Partitions made later (wl_ensure_partitions) inherit the parent's column compression (PG 15
-- copies attcompression to CREATE TABLE ... PARTITION OF).

CREATE TABLE flow_packed (
    window_start timestamptz NOT NULL,
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    idx0 int NOT NULL,
    host text[] NOT NULL,
    source text[] NOT NULL,
    proto text[],
    local_addr inet[],
    local_port int[],
    remote_addr inet[],
    remote_port int[],
    role text[],
    tx_bytes bigint[],
    rx_bytes bigint[],
    nfs_server inet[],
    nfs_port int[],
    nfs_export text[],
    nfs_op text[],
    nfs_bytes bigint[],
    nfs_ops bigint[],
    pid int[],
    uid int[],
    user_name text[],
    program text[],
    workflow text[],
    container text[],
    namespace text[],
    pod text[],
    container_name text[],
    -- every flow has its host and source (the view's NOT NULL columns). The other arrays' lengths
    -- (n or NULL) are the writer's to keep: checking all 25 here cost nothing per COPY row but
    -- 65 us per single-row INSERT (the view's trigger), the constraint being prepared for every
    -- statement; a shorter array reads as NULLs, a longer one as flows without host.
    CONSTRAINT flow_packed_flows CHECK (
        cardinality(host) > 0 AND cardinality(source) = cardinality(host)
        AND array_position(host, NULL) IS NULL AND array_position(source, NULL) IS NULL)
) PARTITION BY RANGE (window_start);

ALTER TABLE flow_packed
    ALTER COLUMN host SET COMPRESSION lz4,
    ALTER COLUMN source SET COMPRESSION lz4,
    ALTER COLUMN proto SET COMPRESSION lz4,
    ALTER COLUMN local_addr SET COMPRESSION lz4,
    ALTER COLUMN local_port SET COMPRESSION lz4,
    ALTER COLUMN remote_addr SET COMPRESSION lz4,
    ALTER COLUMN remote_port SET COMPRESSION lz4,
    ALTER COLUMN role SET COMPRESSION lz4,
    ALTER COLUMN tx_bytes SET COMPRESSION lz4,
    ALTER COLUMN rx_bytes SET COMPRESSION lz4,
    ALTER COLUMN nfs_server SET COMPRESSION lz4,
    ALTER COLUMN nfs_port SET COMPRESSION lz4,
    ALTER COLUMN nfs_export SET COMPRESSION lz4,
    ALTER COLUMN nfs_op SET COMPRESSION lz4,
    ALTER COLUMN nfs_bytes SET COMPRESSION lz4,
    ALTER COLUMN nfs_ops SET COMPRESSION lz4,
    ALTER COLUMN pid SET COMPRESSION lz4,
    ALTER COLUMN uid SET COMPRESSION lz4,
    ALTER COLUMN user_name SET COMPRESSION lz4,
    ALTER COLUMN program SET COMPRESSION lz4,
    ALTER COLUMN workflow SET COMPRESSION lz4,
    ALTER COLUMN container SET COMPRESSION lz4,
    ALTER COLUMN namespace SET COMPRESSION lz4,
    ALTER COLUMN pod SET COMPRESSION lz4,
    ALTER COLUMN container_name SET COMPRESSION lz4;

CREATE INDEX flow_packed_window_brin ON flow_packed USING brin (window_start);

-- The stored flows, a partition at a time (one day's sort): runs of consecutive idx per report
-- (idx - row_number() is constant along a run), cut every 100 flows; an array whose elements are
-- all NULL (all the default, for the defaulted columns) is stored as NULL. ~7 s per 1 M flows
-- here, most of it the 25 ordered aggregates' sorts; no JIT (compiled again for every partition).
SET LOCAL jit = off;
DO $$
DECLARE
    r record;
    part text;
BEGIN
    FOR r IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'flow_records'::regclass
         ORDER BY c.relname
    LOOP
        part := 'flow_packed' || substr(r.relname, length('flow_records') + 1);
        EXECUTE format('CREATE TABLE %I PARTITION OF flow_packed %s', part, r.bound);
        EXECUTE format($q$
        INSERT INTO %I
        SELECT window_start, agent_id, seq, min(idx),
               array_agg(host ORDER BY idx), array_agg(source ORDER BY idx),
               CASE WHEN count(proto) > 0 THEN array_agg(proto ORDER BY idx) END,
               CASE WHEN count(local_addr) > 0 THEN array_agg(local_addr ORDER BY idx) END,
               CASE WHEN count(local_port) > 0 THEN array_agg(local_port ORDER BY idx) END,
               CASE WHEN count(remote_addr) > 0 THEN array_agg(remote_addr ORDER BY idx) END,
               CASE WHEN count(remote_port) > 0 THEN array_agg(remote_port ORDER BY idx) END,
               CASE WHEN count(role) > 0 THEN array_agg(role ORDER BY idx) END,
               CASE WHEN bool_or(tx_bytes <> 0) THEN array_agg(tx_bytes ORDER BY idx) END,
               CASE WHEN bool_or(rx_bytes <> 0) THEN array_agg(rx_bytes ORDER BY idx) END,
               CASE WHEN count(nfs_server) > 0 THEN array_agg(nfs_server ORDER BY idx) END,
               CASE WHEN count(nfs_port) > 0 THEN array_agg(nfs_port ORDER BY idx) END,
               CASE WHEN count(nfs_export) > 0 THEN array_agg(nfs_export ORDER BY idx) END,
               CASE WHEN count(nfs_op) > 0 THEN array_agg(nfs_op ORDER BY idx) END,
               CASE WHEN bool_or(nfs_bytes <> 0) THEN array_agg(nfs_bytes ORDER BY idx) END,
               CASE WHEN bool_or(nfs_ops <> 0) THEN array_agg(nfs_ops ORDER BY idx) END,
               CASE WHEN count(pid) > 0 THEN array_agg(pid ORDER BY idx) END,
               CASE WHEN count(uid) > 0 THEN array_agg(uid ORDER BY idx) END,
               CASE WHEN count(user_name) > 0 THEN array_agg(user_name ORDER BY idx) END,
               CASE WHEN count(program) > 0 THEN array_agg(program ORDER BY idx) END,
               CASE WHEN count(workflow) > 0 THEN array_agg(workflow ORDER BY idx) END,
               CASE WHEN count(container) > 0 THEN array_agg(container ORDER BY idx) END,
               CASE WHEN bool_or(namespace <> '') THEN array_agg(namespace ORDER BY idx) END,
               CASE WHEN bool_or(pod <> '') THEN array_agg(pod ORDER BY idx) END,
               CASE WHEN bool_or(container_name <> '') THEN array_agg(container_name ORDER BY idx)
               END
          FROM (SELECT f.*, idx - row_number() OVER w AS run, (row_number() OVER w - 1) / 100 AS cut
                  FROM ONLY %I f
                WINDOW w AS (PARTITION BY window_start, agent_id, seq ORDER BY idx)) f
         GROUP BY window_start, agent_id, seq, run, cut
         ORDER BY window_start, agent_id, seq, min(idx)$q$, part, r.relname);
    END LOOP;
END $$;

DROP TABLE flow_records;

-- The elements of a row as set-returning functions of the select list, which PostgreSQL runs in
-- step (ProjectSet) and pads with NULLs past a shorter or NULL array, as multi-argument unnest
-- does: a full read took 0.46 s for 1 M flows this way, 1.54 s as unnest(...) WITH ORDINALITY in
-- a LATERAL join (a tuplestore per array per row), 0.16-0.21 s from the old table. The defaults
-- are applied above it (a set-returning function may not be an argument of coalesce).
CREATE VIEW flow_records AS
SELECT window_start, agent_id, seq, idx, host, source, proto, local_addr, local_port,
       remote_addr, remote_port, role, coalesce(tx_bytes, 0) AS tx_bytes,
       coalesce(rx_bytes, 0) AS rx_bytes, nfs_server, nfs_port, nfs_export, nfs_op,
       coalesce(nfs_bytes, 0) AS nfs_bytes, coalesce(nfs_ops, 0) AS nfs_ops, pid, uid,
       user_name, program, workflow, container, coalesce(namespace, '') AS namespace,
       coalesce(pod, '') AS pod, coalesce(container_name, '') AS container_name
  FROM (SELECT p.window_start, p.agent_id, p.seq,
               generate_series(p.idx0, p.idx0 + cardinality(p.host) - 1) AS idx,
               unnest(p.host) AS host, unnest(p.source) AS source, unnest(p.proto) AS proto,
               unnest(p.local_addr) AS local_addr, unnest(p.local_port) AS local_port,
               unnest(p.remote_addr) AS remote_addr, unnest(p.remote_port) AS remote_port,
               unnest(p.role) AS role, unnest(p.tx_bytes) AS tx_bytes,
               unnest(p.rx_bytes) AS rx_bytes, unnest(p.nfs_server) AS nfs_server,
               unnest(p.nfs_port) AS nfs_port, unnest(p.nfs_export) AS nfs_export,
               unnest(p.nfs_op) AS nfs_op, unnest(p.nfs_bytes) AS nfs_bytes,
               unnest(p.nfs_ops) AS nfs_ops, unnest(p.pid) AS pid, unnest(p.uid) AS uid,
               unnest(p.user_name) AS user_name, unnest(p.program) AS program,
               unnest(p.workflow) AS workflow, unnest(p.container) AS container,
               unnest(p.namespace) AS namespace, unnest(p.pod) AS pod,
               unnest(p.container_name) AS container_name
          FROM flow_packed p) u;
-- the old table's defaults, for an INSERT naming fewer columns
ALTER VIEW flow_records ALTER COLUMN tx_bytes SET DEFAULT 0;
ALTER VIEW flow_records ALTER COLUMN rx_bytes SET DEFAULT 0;
ALTER VIEW flow_records ALTER COLUMN nfs_bytes SET DEFAULT 0;
ALTER VIEW flow_records ALTER COLUMN nfs_ops SET DEFAULT 0;
ALTER VIEW flow_records ALTER COLUMN namespace SET DEFAULT '';
ALTER VIEW flow_records ALTER COLUMN pod SET DEFAULT '';
ALTER VIEW flow_records ALTER COLUMN container_name SET DEFAULT '';

-- An INSERT into the view: one flow as a one-element row (NULL arrays for NULL values and for
-- the defaults), the old NOT NULLs enforced, NULL counts and Kubernetes names taken as the
-- defaults; NEW as the view gives it back, for RETURNING.
CREATE FUNCTION wl_flow_records_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    IF NEW.window_start IS NULL OR NEW.agent_id IS NULL OR NEW.seq IS NULL OR NEW.idx IS NULL
       OR NEW.host IS NULL OR NEW.source IS NULL THEN
        missing := CASE WHEN NEW.window_start IS NULL THEN 'window_start'
                        WHEN NEW.agent_id IS NULL THEN 'agent_id'
                        WHEN NEW.seq IS NULL THEN 'seq'
                        WHEN NEW.idx IS NULL THEN 'idx'
                        WHEN NEW.host IS NULL THEN 'host'
                        ELSE 'source' END;
        RAISE not_null_violation USING MESSAGE = format(
            'null value in column "%s" of relation "flow_records" violates not-null constraint',
            missing), COLUMN = missing, TABLE = 'flow_records';
    END IF;
    NEW.tx_bytes := coalesce(NEW.tx_bytes, 0);
    NEW.rx_bytes := coalesce(NEW.rx_bytes, 0);
    NEW.nfs_bytes := coalesce(NEW.nfs_bytes, 0);
    NEW.nfs_ops := coalesce(NEW.nfs_ops, 0);
    NEW.namespace := coalesce(NEW.namespace, '');
    NEW.pod := coalesce(NEW.pod, '');
    NEW.container_name := coalesce(NEW.container_name, '');
    INSERT INTO flow_packed VALUES (
        NEW.window_start, NEW.agent_id, NEW.seq, NEW.idx, ARRAY[NEW.host], ARRAY[NEW.source],
        CASE WHEN NEW.proto IS NOT NULL THEN ARRAY[NEW.proto] END,
        CASE WHEN NEW.local_addr IS NOT NULL THEN ARRAY[NEW.local_addr] END,
        CASE WHEN NEW.local_port IS NOT NULL THEN ARRAY[NEW.local_port] END,
        CASE WHEN NEW.remote_addr IS NOT NULL THEN ARRAY[NEW.remote_addr] END,
        CASE WHEN NEW.remote_port IS NOT NULL THEN ARRAY[NEW.remote_port] END,
        CASE WHEN NEW.role IS NOT NULL THEN ARRAY[NEW.role] END,
        CASE WHEN NEW.tx_bytes <> 0 THEN ARRAY[NEW.tx_bytes] END,
        CASE WHEN NEW.rx_bytes <> 0 THEN ARRAY[NEW.rx_bytes] END,
        CASE WHEN NEW.nfs_server IS NOT NULL THEN ARRAY[NEW.nfs_server] END,
        CASE WHEN NEW.nfs_port IS NOT NULL THEN ARRAY[NEW.nfs_port] END,
        CASE WHEN NEW.nfs_export IS NOT NULL THEN ARRAY[NEW.nfs_export] END,
        CASE WHEN NEW.nfs_op IS NOT NULL THEN ARRAY[NEW.nfs_op] END,
        CASE WHEN NEW.nfs_bytes <> 0 THEN ARRAY[NEW.nfs_bytes] END,
        CASE WHEN NEW.nfs_ops <> 0 THEN ARRAY[NEW.nfs_ops] END,
        CASE WHEN NEW.pid IS NOT NULL THEN ARRAY[NEW.pid] END,
        CASE WHEN NEW.uid IS NOT NULL THEN ARRAY[NEW.uid] END,
        CASE WHEN NEW.user_name IS NOT NULL THEN ARRAY[NEW.user_name] END,
        CASE WHEN NEW.program IS NOT NULL THEN ARRAY[NEW.program] END,
        CASE WHEN NEW.workflow IS NOT NULL THEN ARRAY[NEW.workflow] END,
        CASE WHEN NEW.container IS NOT NULL THEN ARRAY[NEW.container] END,
        CASE WHEN NEW.namespace <> '' THEN ARRAY[NEW.namespace] END,
        CASE WHEN NEW.pod <> '' THEN ARRAY[NEW.pod] END,
        CASE WHEN NEW.container_name <> '' THEN ARRAY[NEW.container_name] END);
    RETURN NEW;
END $$;

CREATE TRIGGER flow_records_insert INSTEAD OF INSERT ON flow_records
    FOR EACH ROW EXECUTE FUNCTION wl_flow_records_insert();

-- The sites of an agent's reports (sql/005): the local addresses read from their rows' one
-- array, not through the view (which unnests every column).
CREATE OR REPLACE FUNCTION wl_agent_sites(p_agent text, p_seqs bigint[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(DISTINCT s.name ORDER BY s.name), '{}')
    FROM flow_packed r CROSS JOIN LATERAL unnest(r.local_addr) AS a(local_addr)
    JOIN sites s ON EXISTS (SELECT 1 FROM unnest(s.prefixes) p WHERE a.local_addr <<= p::inet)
    WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs) AND a.local_addr IS NOT NULL
$$;

-- sql/001's partition functions with flow_packed for flow_records.
CREATE OR REPLACE FUNCTION wl_ensure_partitions(from_day date, to_day date) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    d date;
    t text;
    made int := 0;
    pname text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('wanledger.partitions'));
    d := from_day;
    WHILE d <= to_day LOOP
        FOREACH t IN ARRAY ARRAY['counter_samples', 'flow_reports', 'flow_packed', 'transfers'] LOOP
            pname := t || '_p' || to_char(d, 'YYYYMMDD');
            IF to_regclass(pname) IS NULL THEN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               pname, t, d::timestamp AT TIME ZONE 'UTC',
                               (d + 1)::timestamp AT TIME ZONE 'UTC');
                made := made + 1;
            END IF;
        END LOOP;
        d := d + 1;
    END LOOP;
    RETURN made;
END $$;

CREATE OR REPLACE FUNCTION wl_prune(cutoff timestamptz) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    dropped int := 0;
    upper_bound timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('wanledger.partitions'));
    FOR r IN
        SELECT c.relname AS part, p.relname AS parent
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname IN ('counter_samples', 'flow_reports', 'flow_packed', 'transfers')
    LOOP
        upper_bound := (to_date(right(r.part, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC';
        IF upper_bound <= cutoff THEN
            EXECUTE format('DROP TABLE %I', r.part);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END $$;
