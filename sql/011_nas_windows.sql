-- The NAS view (docs/design.md "NAS view"): the agents' NFS records per window, NAS instance
-- (server address, port, export), operation and owner, written at ingest in the same transaction
-- as the report's flow_reports row (so a resent report adds nothing). Latency is the merged
-- log-linear histogram of common/llhist_layout.h: latency_us[i + 1] counts requests in bucket i
-- (microseconds), trailing empty buckets cut; quantiles are computed by the reader from it.

-- Bucket-wise sum of two histograms (either may be shorter or NULL).
CREATE FUNCTION wl_llhist_add(a bigint[], b bigint[]) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE
        (SELECT coalesce(array_agg(coalesce(a[i], 0) + coalesce(b[i], 0) ORDER BY i), '{}')
           FROM generate_series(1, greatest(cardinality(a), cardinality(b))) AS i) END
$$;
CREATE AGGREGATE wl_llhist_sum(bigint[]) (SFUNC = wl_llhist_add, STYPE = bigint[]);

CREATE TABLE nas_windows (
    window_start timestamptz NOT NULL,
    window_seconds int NOT NULL,
    server text NOT NULL,              -- the NFS server's address (canonical text form)
    port int NOT NULL,
    export text NOT NULL DEFAULT '',
    op text NOT NULL,                  -- 'read' | 'write'
    host text NOT NULL,                -- the client host (the report's host)
    workflow text NOT NULL DEFAULT '',
    user_name text NOT NULL DEFAULT '',
    program text NOT NULL DEFAULT '',
    namespace text NOT NULL DEFAULT '', -- Kubernetes pod namespace, pod and container name
    pod text NOT NULL DEFAULT '',
    container text NOT NULL DEFAULT '',
    ops bigint NOT NULL DEFAULT 0,      -- completed requests
    bytes bigint NOT NULL DEFAULT 0,    -- bytes of the requests completed without error
    errors bigint NOT NULL DEFAULT 0,   -- requests completed with an error, out of detail_ops
    detail_ops bigint NOT NULL DEFAULT 0, -- ops of the records that carried errors and latency
    latency_us bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (window_start, server, port, export, op, host, workflow, user_name, program,
                 namespace, pod, container)
);
CREATE INDEX nas_windows_instance ON nas_windows (server, export, window_start);

