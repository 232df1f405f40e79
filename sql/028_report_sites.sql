-- Each report keeps the sites of its flows' local addresses (flow_reports.local_sites, written by
-- wl_record_report from what ingest found: reconciler/README.md "Agent seq gaps"). The sites of
-- an agent's gap and lost-span rows came from its reports' flows in flow_packed (wl_agent_sites),
-- which ClickHouse mode does not keep in PostgreSQL: there every gap had no sites, so no cell
-- became incomplete for it. wl_agent_sites now reads both (older reports have no local_sites).
ALTER TABLE flow_reports ADD COLUMN IF NOT EXISTS local_sites text[];

CREATE OR REPLACE FUNCTION wl_agent_sites(p_agent text, p_seqs bigint[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(DISTINCT n ORDER BY n), '{}') FROM (
        SELECT unnest(r.local_sites) AS n FROM flow_reports r
         WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs)
        UNION ALL
        SELECT s.name FROM flow_packed r CROSS JOIN LATERAL unnest(r.local_addr) AS a(local_addr)
          JOIN sites s ON EXISTS (SELECT 1 FROM unnest(s.prefixes) p WHERE a.local_addr <<= p::inet)
         WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs) AND a.local_addr IS NOT NULL) x
$$;

-- wl_record_report_gaps (sql/025) after keeping the report's sites.
CREATE FUNCTION wl_record_report(p_agent text, p_seq bigint, p_ws timestamptz, p_window int,
                                 p_spool bigint, p_lost_from timestamptz, p_lost_to timestamptz,
                                 p_lost_reason text, p_sites text[])
RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    UPDATE flow_reports SET local_sites = p_sites
     WHERE agent_id = p_agent AND seq = p_seq AND window_start = p_ws;
    RETURN wl_record_report_gaps(p_agent, p_seq, p_ws, p_window, p_spool, p_lost_from, p_lost_to,
                                 p_lost_reason);
END $$;
