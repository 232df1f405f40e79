-- Sampled flows from the routers (IPFIX, NetFlow v9, sFlow via `wanledger poll`), aggregated per
-- window, exporting device and (source, destination, protocol, destination port). A batch is
-- stored once (flow_sample_batches); records of a window that arrive in a later batch add up.
-- estimated_bytes = sum of rate x bytes over the sampled packets; variance = sum of
-- rate(rate-1) x bytes^2 (pollers/README.md "Flow samples"); the 95% interval is computed from
-- them when read (reconciler/unrec.c). Not partitioned: one row per host pair and window.
CREATE TABLE flow_sample_batches (
    batch text PRIMARY KEY,
    poller text NOT NULL,
    n_cells int NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE flow_samples (
    window_start timestamptz NOT NULL,
    window_seconds int NOT NULL,
    device text NOT NULL,
    src_addr inet NOT NULL,
    dst_addr inet NOT NULL,
    proto smallint NOT NULL,
    dst_port int NOT NULL,
    src_site text,                 -- from the site prefixes; NULL = outside every site
    dst_site text,
    samples bigint NOT NULL,       -- sampled packets
    sampled_bytes bigint NOT NULL, -- their IP bytes
    estimated_bytes bigint NOT NULL,
    variance double precision NOT NULL,
    rate_min int NOT NULL,
    rate_max int NOT NULL,
    PRIMARY KEY (window_start, device, src_addr, dst_addr, proto, dst_port)
);
CREATE INDEX flow_samples_pair ON flow_samples (src_site, dst_site, window_start);

-- The collectors' own counters (cumulative since the poller started), for /metrics.
CREATE TABLE flow_collector_stats (
    poller text NOT NULL,
    device text NOT NULL,
    protocol text NOT NULL,
    datagrams bigint NOT NULL,
    malformed bigint NOT NULL,
    records bigint NOT NULL,
    unknown_template_sets bigint NOT NULL,
    undecodable_samples bigint NOT NULL,
    agg_dropped bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (poller, device)
);
