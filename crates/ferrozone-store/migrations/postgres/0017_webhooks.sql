-- Webhook endpoints (ferrozone_domain::webhook). Mirrors migrations/sqlite/0017_webhooks.sql.
-- The outbox is the audit log itself: each endpoint keeps the seq of the last event it
-- handled (`delivered_seq`) and reads the events after it in seq order. A delivering
-- process leases an endpoint (`lease_owner` until `lease_until`, micros) so that one
-- process at a time delivers to it. Times are microseconds since the epoch.

CREATE TABLE webhooks (
    id              uuid    NOT NULL PRIMARY KEY,
    url             text    NOT NULL,
    -- the event filter, a JSON array of actions and prefixes (empty: every event)
    events          text    NOT NULL,
    -- the signing secret, sealed with the secret key (it must be recovered to sign)
    secret          bytea   NOT NULL,
    enabled         boolean NOT NULL,
    delivered_seq   bigint  NOT NULL,
    next_attempt_at bigint  NOT NULL,
    failing_since   bigint,
    -- attempts on the current event
    attempts        bigint  NOT NULL,
    lease_owner     uuid,
    lease_until     bigint  NOT NULL,
    last_attempt_at bigint,
    last_outcome    text,
    last_status     integer,
    inserted_at     bigint  NOT NULL,
    updated_at      bigint  NOT NULL
);

CREATE INDEX webhooks_inserted_at ON webhooks (inserted_at, id);

-- The last attempts of each endpoint (the store keeps 100).
CREATE TABLE webhook_attempts (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id  uuid    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    seq         bigint  NOT NULL,
    at          bigint  NOT NULL,
    outcome     text    NOT NULL,
    status      integer,
    error       text,
    duration_ms bigint  NOT NULL
);

CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id);
