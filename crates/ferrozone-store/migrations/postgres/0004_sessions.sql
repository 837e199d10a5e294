-- Browser sessions of the web sign-in (docs/api.md section 8, "Sign-in and sessions").
-- Only the SHA-256 of the session's random secret is stored; the secret lives in the
-- browser's cookie. The CSRF token is derived from that secret, so it needs no column.
-- Deleting the user deletes its sessions.
CREATE TABLE sessions (
    id          uuid   NOT NULL PRIMARY KEY,
    user_id     uuid   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    secret_hash bytea  NOT NULL,
    inserted_at bigint NOT NULL,
    expires_at  bigint NOT NULL,
    CONSTRAINT sessions_secret_hash_unique UNIQUE (secret_hash)
);

CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
