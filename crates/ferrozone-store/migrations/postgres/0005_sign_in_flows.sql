-- Provider sign-ins in progress (docs/api.md section 8, "Provider sign-in"): one row per
-- browser sent to an OpenID Connect or SAML provider, deleted when it comes back (so each
-- `state` works once) or when it expires. Only the SHA-256 of the random `state` is kept;
-- what the flow must remember (nonce, PKCE verifier, request id) is sealed with the
-- server's secret key.
CREATE TABLE sign_in_flows (
    state_hash  bytea  NOT NULL PRIMARY KEY,
    provider_id text   NOT NULL,
    sealed      bytea  NOT NULL,
    return_to   text   NOT NULL,
    expires_at  bigint NOT NULL
);

CREATE INDEX sign_in_flows_expires_at ON sign_in_flows (expires_at);
