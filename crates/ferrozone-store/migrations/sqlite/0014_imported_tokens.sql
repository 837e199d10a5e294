-- API tokens imported from Firezone (docs/api.md section 8, "Importing from Firezone").
-- Their bearer strings are JWTs signed by the source installation: Ferrozone holds no hash
-- of them, only the row, which the JWT names. `origin` says which kind a row is, and the
-- CHECK keeps the two apart: a Ferrozone token always has its hash, an imported one never.
-- Mirrors the PostgreSQL migration. SQLite cannot drop a NOT NULL in place, so the table
-- is rebuilt (nothing references it); its indexes are made again.
CREATE TABLE api_tokens_rebuilt (
    id           BLOB    NOT NULL PRIMARY KEY,
    user_id      BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    -- SHA-256 of the token; the token itself is never stored. NULL for imported tokens.
    token_hash   BLOB,
    inserted_at  INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    origin       TEXT    NOT NULL DEFAULT 'ferrozone',
    CONSTRAINT api_tokens_token_hash_unique UNIQUE (token_hash),
    CONSTRAINT api_tokens_origin_check CHECK (
        (origin = 'ferrozone' AND token_hash IS NOT NULL) OR (origin = 'firezone' AND token_hash IS NULL)
    )
) STRICT;

INSERT INTO api_tokens_rebuilt (id, user_id, name, token_hash, inserted_at, expires_at, last_used_at, origin)
    SELECT id, user_id, name, token_hash, inserted_at, expires_at, last_used_at, 'ferrozone' FROM api_tokens;

DROP TABLE api_tokens;
ALTER TABLE api_tokens_rebuilt RENAME TO api_tokens;

CREATE INDEX api_tokens_user_id ON api_tokens (user_id);
CREATE INDEX api_tokens_inserted_at_id ON api_tokens (inserted_at, id);
