-- Sign-in links and the email outbox. Mirrors migrations/sqlite/0022_sign_in_links.sql.
CREATE TABLE sign_in_links (
    id          uuid    NOT NULL PRIMARY KEY,
    user_id     uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        text    NOT NULL CHECK (kind IN ('invitation', 'magic_link')),
    secret_hash bytea   NOT NULL UNIQUE,
    created_by  uuid,
    email_id    uuid,
    inserted_at bigint  NOT NULL,
    expires_at  bigint  NOT NULL,
    used_at     bigint,
    revoked_at  bigint
);

CREATE INDEX sign_in_links_kind ON sign_in_links (kind, inserted_at);
CREATE INDEX sign_in_links_user ON sign_in_links (user_id, kind, expires_at);

CREATE TABLE email_outbox (
    id              uuid    NOT NULL PRIMARY KEY,
    recipient       text    NOT NULL,
    message         bytea   NOT NULL,
    inserted_at     bigint  NOT NULL,
    next_attempt_at bigint  NOT NULL,
    attempts        bigint  NOT NULL,
    lease_owner     uuid,
    lease_until     bigint  NOT NULL,
    last_error      text,
    sent_at         bigint,
    gave_up_at      bigint
);

CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at) WHERE sent_at IS NULL AND gave_up_at IS NULL;
CREATE INDEX email_outbox_inserted ON email_outbox (inserted_at);
