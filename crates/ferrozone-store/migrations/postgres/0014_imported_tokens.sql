-- API tokens imported from Firezone (docs/api.md section 8, "Importing from Firezone").
-- Their bearer strings are JWTs signed by the source installation: Ferrozone holds no hash
-- of them, only the row, which the JWT names. `origin` says which kind a row is, and the
-- CHECK keeps the two apart: a Ferrozone token always has its hash, an imported one never.
-- Mirrors the SQLite migration.
ALTER TABLE api_tokens
    ALTER COLUMN token_hash DROP NOT NULL,
    ADD COLUMN origin text NOT NULL DEFAULT 'ferrozone',
    ADD CONSTRAINT api_tokens_origin_check CHECK (
        (origin = 'ferrozone' AND token_hash IS NOT NULL) OR (origin = 'firezone' AND token_hash IS NULL)
    );
