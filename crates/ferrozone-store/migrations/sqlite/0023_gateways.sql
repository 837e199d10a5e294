-- Gateways on other hosts (ferrozone_domain::gateway, docs/design/gateways.md): each with its
-- single-use enrolment token (only its SHA-256, until used) and then its credential (only
-- its SHA-256, until revoked). Times are microseconds since the epoch.
CREATE TABLE gateways (
    id                   BLOB    NOT NULL PRIMARY KEY,
    name                 TEXT    NOT NULL,
    enrolment_hash       BLOB    UNIQUE,
    enrolment_expires_at INTEGER,
    credential_hash      BLOB    UNIQUE,
    enrolled_at          INTEGER,
    revoked_at           INTEGER,
    last_seen_at         INTEGER,
    version              TEXT,
    inserted_at          INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    CONSTRAINT gateways_name_unique UNIQUE (name)
) STRICT;
