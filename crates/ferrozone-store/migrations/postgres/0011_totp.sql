-- Two-factor sign-in with an authenticator app (docs/api.md section 8, "Two-factor
-- sign-in"). One authenticator per user: its secret sealed with the server's secret key,
-- when its set-up was confirmed (NULL: pending, not yet in force) and the last step whose
-- code was accepted (each code works once). Recovery codes are kept only as keyed hashes
-- and go with the authenticator; both go with the user.
CREATE TABLE user_totp (
    user_id       uuid   NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    sealed_secret bytea  NOT NULL,
    confirmed_at  bigint,
    last_step     bigint,
    inserted_at   bigint NOT NULL
);

CREATE TABLE totp_recovery_codes (
    user_id   uuid  NOT NULL REFERENCES user_totp (user_id) ON DELETE CASCADE,
    code_hash bytea NOT NULL,
    PRIMARY KEY (user_id, code_hash)
);
