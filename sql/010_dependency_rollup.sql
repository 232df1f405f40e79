-- The dependency map (docs/design.md "Dependency map"): per window, owner and local site, every
-- remote endpoint the owner exchanged bytes with, after the same de-duplication as
-- attribution_rollup. bytes_out: local_site -> remote_site; bytes_in: remote_site -> local_site.
CREATE TABLE dependency_rollup (
    window_start timestamptz NOT NULL,
    local_site text NOT NULL,
    workflow text NOT NULL DEFAULT '',
    user_name text NOT NULL DEFAULT '',
    program text NOT NULL DEFAULT '',
    remote_site text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('peer', 'service', 'nfs', 'transfer')),
    endpoint text NOT NULL,
    bytes_out bigint NOT NULL DEFAULT 0,
    bytes_in bigint NOT NULL DEFAULT 0,
    connections bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (window_start, local_site, workflow, user_name, program, remote_site, kind,
                 endpoint)
);
CREATE INDEX dependency_rollup_workflow ON dependency_rollup (workflow, window_start);
CREATE INDEX dependency_rollup_program ON dependency_rollup (program, window_start);
CREATE INDEX dependency_rollup_user ON dependency_rollup (user_name, window_start);
