-- Records of a /v1/transfers batch that were refused while the rest of the batch was stored
-- (reconciler/quarantine.c): kept with their text and the reason, so nothing a log shipper sent
-- vanishes. A resend of the same record with the same error is one row (ON CONFLICT DO NOTHING
-- on the digest). Listed by `wanledger rejects` and /rejects; counted in /metrics.
CREATE TABLE rejected_records (
    id bigserial PRIMARY KEY,
    endpoint text NOT NULL,              -- 'transfers'
    peer text NOT NULL DEFAULT '',       -- the client's address
    received_at timestamptz NOT NULL DEFAULT now(),
    record_index int NOT NULL,           -- $[i] in its batch
    error text NOT NULL,
    path text NOT NULL,                  -- JSON path of the error, "$[2].bytes"
    raw text NOT NULL,                   -- the record as received (JSON text)
    raw_digest text NOT NULL,            -- md5(raw || path): the resend key
    UNIQUE (endpoint, raw_digest)
);
CREATE INDEX rejected_records_received ON rejected_records (received_at);
