-- wl_record_report (sql/028, with wl_record_report_gaps of sql/025) runs once per agent report.
-- Its statements read flow_reports, partitioned by day, with the report's values as parameters:
-- PostgreSQL's default plan cache mode planned them afresh for every call (custom plans; a
-- profile of bench/clickhouse put 29 % of PostgreSQL's CPU there). A generic plan, pruned to the
-- report's partition at execution where the statement names window_start, is planned once per
-- connection. Measured on PostgreSQL 15 (the report's INSERT and this call for 2,000 reports of
-- one agent in a loop, n = 2 each): 4 day partitions 512-518 -> 216-217 us per report; 35
-- partitions (a month kept) 882-917 -> 537-568 us.
ALTER FUNCTION wl_record_report(text, bigint, timestamptz, int, bigint, timestamptz, timestamptz,
                                text, text[])
    SET plan_cache_mode = force_generic_plan;
