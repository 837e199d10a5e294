-- OpenID Connect connections: the refresh token a provider sign-in left, per user and
-- provider, for the refresh job (docs/api.md section 8, "OpenID Connect"). The refresh
-- token is sealed with the secret key (nonce, ciphertext and tag); `refreshed_at` is when a
-- process last claimed it for a refresh, and doubles as the claim's compare-and-set value,
-- so that processes sharing the database never refresh one token twice at once.
-- Deleting the user deletes its connections.
CREATE TABLE oidc_connections (
    user_id       BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider_id   TEXT    NOT NULL,
    refresh_token BLOB    NOT NULL,
    refreshed_at  INTEGER NOT NULL,
    inserted_at   INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (user_id, provider_id)
) STRICT;
