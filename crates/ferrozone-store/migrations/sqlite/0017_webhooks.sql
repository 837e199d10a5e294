-- Webhook endpoints (ferrozone_domain::webhook). Mirrors migrations/postgres/0017_webhooks.sql.
-- The outbox is the audit log itself: each endpoint keeps the seq of the last event it
-- handled (`delivered_seq`) and reads the events after it in seq order. A delivering
-- process leases an endpoint (`lease_owner` until `lease_until`, micros) so that one
-- process at a time delivers to it. Times are microseconds since the epoch.

CREATE TABLE webhooks (
    id              BLOB    NOT NULL PRIMARY KEY,
    url             TEXT    NOT NULL,
    -- the event filter, a JSON array of actions and prefixes (empty: every event)
    events          TEXT    NOT NULL,
    -- the signing secret, sealed with the secret key (it must be recovered to sign)
    secret          BLOB    NOT NULL,
    enabled         INTEGER NOT NULL,
    delivered_seq   INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    failing_since   INTEGER,
    -- attempts on the current event
    attempts        INTEGER NOT NULL,
    lease_owner     BLOB,
    lease_until     INTEGER NOT NULL,
    last_attempt_at INTEGER,
    last_outcome    TEXT,
    last_status     INTEGER,
    inserted_at     INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX webhooks_inserted_at ON webhooks (inserted_at, id);

-- The last attempts of each endpoint (the store keeps 100).
CREATE TABLE webhook_attempts (
    id          INTEGER NOT NULL PRIMARY KEY,
    webhook_id  BLOB    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    outcome     TEXT    NOT NULL,
    status      INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id);
