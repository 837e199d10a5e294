-- Gateways on other hosts. Mirrors migrations/sqlite/0023_gateways.sql.
CREATE TABLE gateways (
    id                   uuid    NOT NULL PRIMARY KEY,
    name                 text    NOT NULL,
    enrolment_hash       bytea   UNIQUE,
    enrolment_expires_at bigint,
    credential_hash      bytea   UNIQUE,
    enrolled_at          bigint,
    revoked_at           bigint,
    last_seen_at         bigint,
    version              text,
    inserted_at          bigint  NOT NULL,
    updated_at           bigint  NOT NULL,
    CONSTRAINT gateways_name_unique UNIQUE (name)
);
