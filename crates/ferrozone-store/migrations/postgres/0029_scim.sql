-- SCIM 2.0 provisioning. Mirrors migrations/sqlite/0029_scim.sql.
CREATE TABLE scim_tokens (
    id           uuid    NOT NULL PRIMARY KEY,
    name         text    NOT NULL,
    token_hash   bytea   NOT NULL,
    created_by   uuid    REFERENCES users (id) ON DELETE SET NULL,
    inserted_at  bigint  NOT NULL,
    last_used_at bigint,
    revoked_at   bigint,
    CONSTRAINT scim_tokens_token_hash_unique UNIQUE (token_hash)
);

CREATE TABLE scim_users (
    user_id          uuid    NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    user_name        text    NOT NULL,
    user_name_key    text    NOT NULL,
    external_id      text,
    display_name     text,
    display_name_key text,
    given_name       text,
    family_name      text,
    inserted_at      bigint  NOT NULL,
    updated_at       bigint  NOT NULL,
    CONSTRAINT scim_users_user_name_key_unique UNIQUE (user_name_key)
);

CREATE INDEX scim_users_external_id ON scim_users (external_id);
CREATE INDEX scim_users_display_name_key ON scim_users (display_name_key);
CREATE INDEX scim_users_order ON scim_users (inserted_at, user_id);

ALTER TABLE groups ADD COLUMN external_id text;
