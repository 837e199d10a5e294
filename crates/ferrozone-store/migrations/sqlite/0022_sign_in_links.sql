-- Sign-in links (ferrozone_domain::sign_in_link): invitations an administrator sends and
-- the links of magic-link sign-in. Only the SHA-256 of a link's secret is stored; a link
-- signs in once (`used_at`), until `expires_at`, unless revoked. Deleting the user deletes
-- its links. Times are microseconds since the epoch.
CREATE TABLE sign_in_links (
    id          BLOB    NOT NULL PRIMARY KEY,
    user_id     BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        TEXT    NOT NULL CHECK (kind IN ('invitation', 'magic_link')),
    secret_hash BLOB    NOT NULL UNIQUE,
    created_by  BLOB,
    email_id    BLOB,
    inserted_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER,
    revoked_at  INTEGER
) STRICT;

CREATE INDEX sign_in_links_kind ON sign_in_links (kind, inserted_at);
CREATE INDEX sign_in_links_user ON sign_in_links (user_id, kind, expires_at);

-- The email outbox (ferrozone_domain::email): each message until it is sent or given up.
-- The message is sealed with the secret key (it carries a sign-in link) and emptied once
-- it is sent or given up. A sending process leases a message (`lease_owner` until
-- `lease_until`), so that one process at a time sends it.
CREATE TABLE email_outbox (
    id              BLOB    NOT NULL PRIMARY KEY,
    recipient       TEXT    NOT NULL,
    message         BLOB    NOT NULL,
    inserted_at     INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    lease_owner     BLOB,
    lease_until     INTEGER NOT NULL,
    last_error      TEXT,
    sent_at         INTEGER,
    gave_up_at      INTEGER
) STRICT;

CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at) WHERE sent_at IS NULL AND gave_up_at IS NULL;
CREATE INDEX email_outbox_inserted ON email_outbox (inserted_at);
