-- wanledger schema: throttle rules (issue 12). A rule limits the egress of the processes whose
-- owner matches its selector (the names the heatmap shows), on the hosts of its scope, to
-- rate_bps per host ('per_host') or for the selector as a whole ('total': split across hosts by
-- their share of the last window's bytes). Every rule expires (bounded); proposals (from
-- saturation alerts) run as dry_run until approved. throttle_audit is append-only.
CREATE TABLE IF NOT EXISTS throttle_rules (
    id             bigserial PRIMARY KEY,
    selector_kind  text NOT NULL CHECK (selector_kind IN ('workflow', 'user', 'program', 'container')),
    selector_value text NOT NULL CHECK (selector_value <> ''),
    scope_hosts    text[],      -- NULL: every host
    scope_site     text,        -- NULL: every site
    dst_sites      text[],      -- NULL: every destination (recorded; hosts limit all egress)
    rate_bps       bigint NOT NULL CHECK (rate_bps > 0),
    rate_scope     text NOT NULL DEFAULT 'per_host' CHECK (rate_scope IN ('per_host', 'total')),
    mode           text NOT NULL CHECK (mode IN ('dry_run', 'enforce')),
    status         text NOT NULL DEFAULT 'active' CHECK (status IN ('proposed', 'active')),
    reason         text NOT NULL CHECK (reason <> ''),
    created_by     text NOT NULL,
    approved_by    text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    approved_at    timestamptz,
    expires_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    revoked_by     text,
    alert_src      text,        -- proposals: the saturated link's site pair
    alert_dst      text,
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '7 days')
);
CREATE INDEX IF NOT EXISTS throttle_rules_live ON throttle_rules (expires_at)
    WHERE revoked_at IS NULL;

-- Selectors never throttled (wanledger's own traffic, the transfer service, ...). NFS sent by
-- the kernel's RPC sockets is never throttled by the agent (no process owns those sockets).
CREATE TABLE IF NOT EXISTS throttle_allow (
    selector_kind  text NOT NULL CHECK (selector_kind IN ('workflow', 'user', 'program', 'container')),
    selector_value text NOT NULL CHECK (selector_value <> ''),
    reason         text NOT NULL,
    PRIMARY KEY (selector_kind, selector_value)
);
INSERT INTO throttle_allow VALUES
    ('program', 'wanledger-agent', 'wanledger''s own reports'),
    ('program', 'wanledger', 'wanledger''s own traffic (ship, pollers, reconciler)'),
    ('workflow', 'wanledger', 'wanledger''s own traffic')
ON CONFLICT DO NOTHING;

-- What each host did with each rule (cumulative since the host applied it; the latest report).
CREATE TABLE IF NOT EXISTS throttle_host_stats (
    rule_id         bigint NOT NULL REFERENCES throttle_rules (id),
    host            text NOT NULL,
    agent_id        text NOT NULL DEFAULT '',
    mode            text NOT NULL,
    processes       bigint NOT NULL DEFAULT 0,
    passed_bytes    bigint NOT NULL DEFAULT 0,
    delayed_bytes   bigint NOT NULL DEFAULT 0,
    dropped_bytes   bigint NOT NULL DEFAULT 0,
    passed_packets  bigint NOT NULL DEFAULT 0,
    delayed_packets bigint NOT NULL DEFAULT 0,
    dropped_packets bigint NOT NULL DEFAULT 0,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    last_seen       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rule_id, host)
);

CREATE TABLE IF NOT EXISTS throttle_audit (
    id            bigserial PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    rule_id       bigint REFERENCES throttle_rules (id),
    event         text NOT NULL CHECK (event IN ('proposal', 'creation', 'approval', 'application',
                                                 'expiry', 'revocation', 'failure',
                                                 'kill_switch')),
    host          text,
    actor         text,
    detail        text NOT NULL DEFAULT '',
    passed_bytes  bigint,
    delayed_bytes bigint,
    dropped_bytes bigint
);
CREATE INDEX IF NOT EXISTS throttle_audit_rule ON throttle_audit (rule_id, at);

CREATE OR REPLACE FUNCTION wl_throttle_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'throttle_audit is append-only (% refused)', TG_OP;
END $$;
DROP TRIGGER IF EXISTS throttle_audit_append_only ON throttle_audit;
CREATE TRIGGER throttle_audit_append_only BEFORE UPDATE OR DELETE ON throttle_audit
    FOR EACH STATEMENT EXECUTE FUNCTION wl_throttle_audit_append_only();

-- One expiry event per rule (the reconciler records it when it first sees the rule expired).
CREATE UNIQUE INDEX IF NOT EXISTS throttle_audit_one_expiry ON throttle_audit (rule_id)
    WHERE event = 'expiry';

-- The global kill switch: on, agents remove every rule and no rule can be created or approved.
CREATE TABLE IF NOT EXISTS throttle_settings (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    kill_switch boolean NOT NULL DEFAULT false,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    changed_by  text NOT NULL DEFAULT ''
);
INSERT INTO throttle_settings (one) VALUES (true) ON CONFLICT DO NOTHING;
