-- SCIM 2.0 provisioning (ferrozone_domain::scim, docs/design/scim.md): the provisioning
-- tokens (only their SHA-256 is kept), the SCIM attributes of the users a SCIM client
-- provisioned or linked (userName unique whatever its case: user_name_key, lower-cased), and
-- the externalId of the groups it keeps (source 'scim'). Times are microseconds since the epoch.
CREATE TABLE scim_tokens (
    id           BLOB    NOT NULL PRIMARY KEY,
    name         TEXT    NOT NULL,
    token_hash   BLOB    NOT NULL,
    created_by   BLOB    REFERENCES users (id) ON DELETE SET NULL,
    inserted_at  INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER,
    CONSTRAINT scim_tokens_token_hash_unique UNIQUE (token_hash)
) STRICT;

CREATE TABLE scim_users (
    user_id          BLOB    NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    user_name        TEXT    NOT NULL,
    user_name_key    TEXT    NOT NULL,
    external_id      TEXT,
    display_name     TEXT,
    display_name_key TEXT,
    given_name       TEXT,
    family_name      TEXT,
    inserted_at      INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CONSTRAINT scim_users_user_name_key_unique UNIQUE (user_name_key)
) STRICT;

-- The filters a client pages by, and the order of the pages.
CREATE INDEX scim_users_external_id ON scim_users (external_id);
CREATE INDEX scim_users_display_name_key ON scim_users (display_name_key);
CREATE INDEX scim_users_order ON scim_users (inserted_at, user_id);

ALTER TABLE groups ADD COLUMN external_id TEXT;
