-- The sites of an agent's gap rows come from its reports' local_sites (sql/028); the flows are
-- read only for reports stored before that column, in those reports' own window.
--
-- wl_agent_sites (sql/028) also read flow_packed for the agent's seqs whatever the reports held,
-- and flow_packed has no index on (agent_id, seq) (a BRIN on window_start only): every call read
-- every stored packed row of every day and matched every local address against every site's
-- prefixes. It runs for each report that follows a seq gap (wl_record_report_gaps), which after an
-- outage that made the agents' spools drop reports is every agent's next report: 1,000 agents
-- with a gap each, 1 M flows stored, took ~0.4 s a report and ingest fell to ~2,000 flow records
-- a second (bench_fleet with the agents' seq jumping; BENCHMARKS.md). A report's local_sites
-- were found at ingest from the same local addresses and the same sites, so for the reports
-- that have them the flows add nothing. Now flow_packed is only read for a report without
-- local_sites, joined on its window_start (its day's partition, its BRIN range), and, as before,
-- for a seq with no report row at all (flows written without one: ingest never does).
CREATE OR REPLACE FUNCTION wl_agent_sites(p_agent text, p_seqs bigint[]) RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
    found text[];
    orphans bigint[];
BEGIN
    SELECT coalesce(array_agg(DISTINCT n ORDER BY n), '{}') INTO found FROM (
        SELECT unnest(r.local_sites) AS n FROM flow_reports r
         WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs)) x;
    SELECT array_agg(q.seq) INTO orphans FROM unnest(p_seqs) AS q (seq)
     WHERE NOT EXISTS (SELECT 1 FROM flow_reports r WHERE r.agent_id = p_agent AND r.seq = q.seq);
    IF EXISTS (SELECT 1 FROM flow_reports r
                WHERE r.agent_id = p_agent AND r.seq = ANY (p_seqs) AND r.local_sites IS NULL) THEN
        SELECT coalesce(array_agg(DISTINCT n ORDER BY n), '{}') INTO found FROM (
            SELECT unnest(found) AS n
            UNION ALL
            SELECT st.name FROM flow_reports fr
              JOIN flow_packed p ON p.agent_id = fr.agent_id AND p.seq = fr.seq
                                AND p.window_start = fr.window_start
              CROSS JOIN LATERAL unnest(p.local_addr) AS a (local_addr)
              JOIN sites st
                ON EXISTS (SELECT 1 FROM unnest(st.prefixes) q WHERE a.local_addr <<= q::inet)
             WHERE fr.agent_id = p_agent AND fr.seq = ANY (p_seqs) AND fr.local_sites IS NULL
               AND a.local_addr IS NOT NULL) x;
    END IF;
    IF orphans IS NOT NULL THEN
        SELECT coalesce(array_agg(DISTINCT n ORDER BY n), '{}') INTO found FROM (
            SELECT unnest(found) AS n
            UNION ALL
            SELECT st.name FROM flow_packed p
              CROSS JOIN LATERAL unnest(p.local_addr) AS a (local_addr)
              JOIN sites st
                ON EXISTS (SELECT 1 FROM unnest(st.prefixes) q WHERE a.local_addr <<= q::inet)
             WHERE p.agent_id = p_agent AND p.seq = ANY (orphans) AND a.local_addr IS NOT NULL) x;
    END IF;
    RETURN found;
END $$;
