-- wanledger schema v1: the contract tables of DESIGN.md ("PostgreSQL"), the raw inputs kept for
-- audit and replay (partitioned by day, partitions made ahead by the program through
-- wl_ensure_partitions), and the reconciler's own bookkeeping.

-- Sites and links, loaded from the configuration by `wanledger migrate` / `reconcile`.
CREATE TABLE sites (
    name text PRIMARY KEY,
    prefixes text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE links (
    device text NOT NULL,
    interface text NOT NULL,
    site text NOT NULL,
    peer_site text NOT NULL,
    circuit text NOT NULL,
    capacity_bps bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (device, interface)
);

-- Raw interface counter samples from pollers. Counters are unsigned 64-bit: numeric(20,0).
CREATE TABLE counter_samples (
    device text NOT NULL,
    interface text NOT NULL,
    at timestamptz NOT NULL,
    poller text NOT NULL DEFAULT '',
    uptime_cs bigint,
    in_octets numeric(20,0),
    out_octets numeric(20,0),
    in_pkts numeric(20,0),
    out_pkts numeric(20,0),
    speed_bps bigint,
    counter_bits smallint NOT NULL DEFAULT 64,
    discontinuity_cs bigint NOT NULL DEFAULT 0,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device, interface, at)
) PARTITION BY RANGE (at);

-- One row per agent report (agent_id + seq is the idempotency key; window_start is the
-- partition key and is part of every resend of the same report).
CREATE TABLE flow_reports (
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    host text NOT NULL,
    window_start timestamptz NOT NULL,
    window_seconds int NOT NULL,
    dropped_events bigint NOT NULL DEFAULT 0,
    sampling_k int,
    sampling_threshold double precision,
    flows_seen bigint,
    n_flows int NOT NULL DEFAULT 0,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, seq, window_start)
) PARTITION BY RANGE (window_start);

-- The flows of each report; written only when the report row was new.
CREATE TABLE flow_records (
    window_start timestamptz NOT NULL,
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    idx int NOT NULL,
    host text NOT NULL,
    source text NOT NULL,          -- 'socket' | 'nfs'
    proto text,                    -- socket: 'tcp' | 'udp'
    local_addr inet,
    local_port int,
    remote_addr inet,
    remote_port int,
    role text,                     -- 'client' | 'server' | 'unknown'
    tx_bytes bigint NOT NULL DEFAULT 0,
    rx_bytes bigint NOT NULL DEFAULT 0,
    nfs_server inet,               -- nfs: server address
    nfs_port int,
    nfs_export text,
    nfs_op text,                   -- 'read' | 'write'
    nfs_bytes bigint NOT NULL DEFAULT 0,
    nfs_ops bigint NOT NULL DEFAULT 0,
    pid int,
    uid int,
    user_name text,
    program text,
    workflow text,
    container text,
    PRIMARY KEY (agent_id, seq, window_start, idx)
) PARTITION BY RANGE (window_start);

-- Transfer records from data-transfer services; (service, id) is the idempotency key.
CREATE TABLE transfers (
    service text NOT NULL,
    id text NOT NULL,
    requester text,
    workflow text,
    src text NOT NULL,
    dst text NOT NULL,
    bytes bigint NOT NULL,
    start_at timestamptz NOT NULL,
    end_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (service, id, start_at)
) PARTITION BY RANGE (start_at);
CREATE INDEX transfers_span ON transfers (start_at, end_at);

-- The coverage heatmap: one row per window and site pair.
CREATE TABLE heatmap_cells (
    window_start timestamptz NOT NULL,
    window_seconds int NOT NULL,
    src_site text NOT NULL,
    dst_site text NOT NULL,
    observed_bytes bigint,
    observed_payload_bytes bigint,
    attributed_bytes bigint,
    socket_bytes bigint,
    nfs_bytes bigint,
    service_bytes bigint,
    unattributed_bytes bigint,
    coverage double precision,
    status text NOT NULL CHECK (status IN ('ok', 'warn', 'red', 'over', 'idle', 'incomplete',
                                           'no_counter')),
    valid_fraction double precision NOT NULL DEFAULT 1,   -- share of the window with counters
    capacity_bps bigint NOT NULL DEFAULT 0,
    reconciled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (window_start, src_site, dst_site)
);
CREATE INDEX heatmap_cells_pair ON heatmap_cells (src_site, dst_site, window_start);

-- Who used each pair in each window, after de-duplication.
CREATE TABLE attribution_rollup (
    window_start timestamptz NOT NULL,
    src_site text NOT NULL,
    dst_site text NOT NULL,
    source text NOT NULL,      -- 'socket' | 'nfs' | 'service'
    workflow text NOT NULL DEFAULT '',
    user_name text NOT NULL DEFAULT '',
    program text NOT NULL DEFAULT '',
    host text NOT NULL DEFAULT '',
    bytes bigint NOT NULL,
    PRIMARY KEY (window_start, src_site, dst_site, source, workflow, user_name, program, host)
);
CREATE INDEX attribution_rollup_pair ON attribution_rollup (src_site, dst_site, window_start);

-- Per circuit direction and window: what the counters said (the drill-down's "counters behind
-- the observed figure") and the saturation check's input.
CREATE TABLE link_windows (
    window_start timestamptz NOT NULL,
    circuit text NOT NULL,
    src_site text NOT NULL,
    dst_site text NOT NULL,
    device text NOT NULL,
    interface text NOT NULL,
    counter text NOT NULL,     -- 'out' (sender side) | 'in' (receiver side)
    observed_bytes bigint,
    observed_payload_bytes bigint,
    valid_fraction double precision NOT NULL DEFAULT 0,
    capacity_bps bigint NOT NULL DEFAULT 0,
    utilization double precision,
    PRIMARY KEY (window_start, circuit, src_site, dst_site)
);

CREATE TABLE gap_alerts (
    id bigserial PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('gap', 'over', 'saturation')),
    src_site text NOT NULL,
    dst_site text NOT NULL,
    state text NOT NULL CHECK (state IN ('open', 'resolved')),
    opened_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    first_window timestamptz,
    last_window timestamptz,
    peak_unattributed_bytes bigint,
    peak_ratio double precision,
    summary text,
    circuit text NOT NULL DEFAULT '',
    last_sent_at timestamptz,       -- last successful webhook delivery
    resolved_sent boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX gap_alerts_one_open ON gap_alerts (kind, src_site, dst_site) WHERE state = 'open';
CREATE INDEX gap_alerts_pair ON gap_alerts (src_site, dst_site, opened_at);

-- Windows that need (re)reconciliation: marked by ingest, cleared by the loop.
CREATE TABLE window_state (
    window_start timestamptz PRIMARY KEY,
    window_seconds int NOT NULL,
    dirty boolean NOT NULL DEFAULT true,
    last_data_at timestamptz NOT NULL DEFAULT now(),
    reconciled_at timestamptz
);
CREATE INDEX window_state_dirty ON window_state (window_start) WHERE dirty;

-- Weekly coverage per ISO week and pair.
CREATE VIEW coverage_weekly AS
SELECT to_char(window_start AT TIME ZONE 'UTC', 'IYYY-"W"IW') AS iso_week,
       date_trunc('week', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS week_start,
       src_site, dst_site,
       sum(observed_bytes)::bigint AS observed_bytes,
       sum(observed_payload_bytes)::bigint AS observed_payload_bytes,
       sum(attributed_bytes)::bigint AS attributed_bytes,
       sum(unattributed_bytes)::bigint AS unattributed_bytes,
       CASE WHEN sum(observed_payload_bytes) > 0
            THEN sum(attributed_bytes)::double precision / sum(observed_payload_bytes) END AS coverage,
       count(*) FILTER (WHERE status = 'red') AS red_windows,
       count(*) FILTER (WHERE status = 'incomplete') AS incomplete_windows,
       count(*) AS windows
FROM heatmap_cells

GROUP BY 1, 2, src_site, dst_site;

-- Creates the daily partitions of every raw table for [from_day, to_day] (inclusive). Serialised
-- by an advisory lock so concurrent ingest never races on CREATE TABLE.
CREATE FUNCTION wl_ensure_partitions(from_day date, to_day date) RETURNS int
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
        FOREACH t IN ARRAY ARRAY['counter_samples', 'flow_reports', 'flow_records', 'transfers'] LOOP
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

-- Drops whole raw partitions that end at or before cutoff; returns how many were dropped.
CREATE FUNCTION wl_prune(cutoff timestamptz) RETURNS int
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
        WHERE p.relname IN ('counter_samples', 'flow_reports', 'flow_records', 'transfers')
    LOOP
        upper_bound := (to_date(right(r.part, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC';
        IF upper_bound <= cutoff THEN
            EXECUTE format('DROP TABLE %I', r.part);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END $$;
