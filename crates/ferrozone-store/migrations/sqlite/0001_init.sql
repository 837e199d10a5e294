-- Ferrozone schema, SQLite flavour. Mirrors migrations/postgres/0001_init.sql:
-- same tables, columns, constraint names and triggers; only the types differ.
-- Timestamps are INTEGER microseconds since the Unix epoch (domain `Timestamp`).
-- UUIDs are 16-byte BLOBs (sqlx's encoding). Tables are STRICT so that a wrong
-- type is an error instead of a silently stored value.

CREATE TABLE users (
    id                    BLOB    NOT NULL PRIMARY KEY,
    email                 TEXT    NOT NULL,
    -- lower-cased, trimmed email (model::email_key): uniqueness and look-ups
    email_key             TEXT    NOT NULL,
    role                  TEXT    NOT NULL,
    password_hash         TEXT,
    disabled_at           INTEGER,
    last_signed_in_at     INTEGER,
    last_signed_in_method TEXT,
    inserted_at           INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    CONSTRAINT users_email_key_unique UNIQUE (email_key),
    CONSTRAINT users_role_check CHECK (role IN ('admin', 'unprivileged'))
) STRICT;

-- The last-admin rule locks and counts admins; keep that cheap.
CREATE INDEX users_admins ON users (id) WHERE role = 'admin';

CREATE TABLE api_tokens (
    id           BLOB    NOT NULL PRIMARY KEY,
    user_id      BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    -- SHA-256 of the token; the token itself is never stored
    token_hash   BLOB    NOT NULL,
    inserted_at  INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    CONSTRAINT api_tokens_token_hash_unique UNIQUE (token_hash)
) STRICT;

CREATE INDEX api_tokens_user_id ON api_tokens (user_id);

CREATE TABLE devices (
    id                               BLOB    NOT NULL PRIMARY KEY,
    user_id                          BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name                             TEXT    NOT NULL,
    description                      TEXT,
    public_key                       TEXT    NOT NULL,
    -- the sealed (encrypted) preshared key, opaque to the store
    preshared_key                    BLOB    NOT NULL,
    -- canonical text of the address (Ipv4Addr / Ipv6Addr Display)
    ipv4                             TEXT,
    ipv6                             TEXT,
    -- JSON arrays of strings
    allowed_ips                      TEXT    NOT NULL DEFAULT '[]',
    dns                              TEXT    NOT NULL DEFAULT '[]',
    endpoint                         TEXT,
    mtu                              INTEGER,
    persistent_keepalive             INTEGER,
    use_default_allowed_ips          INTEGER NOT NULL CHECK (use_default_allowed_ips IN (0, 1)),
    use_default_dns                  INTEGER NOT NULL CHECK (use_default_dns IN (0, 1)),
    use_default_endpoint             INTEGER NOT NULL CHECK (use_default_endpoint IN (0, 1)),
    use_default_mtu                  INTEGER NOT NULL CHECK (use_default_mtu IN (0, 1)),
    use_default_persistent_keepalive INTEGER NOT NULL CHECK (use_default_persistent_keepalive IN (0, 1)),
    latest_handshake                 INTEGER,
    remote_ip                        TEXT,
    rx_bytes                         INTEGER,
    tx_bytes                         INTEGER,
    inserted_at                      INTEGER NOT NULL,
    updated_at                       INTEGER NOT NULL,
    CONSTRAINT devices_public_key_unique UNIQUE (public_key),
    CONSTRAINT devices_user_id_name_unique UNIQUE (user_id, name),
    CONSTRAINT devices_ipv4_unique UNIQUE (ipv4),
    CONSTRAINT devices_ipv6_unique UNIQUE (ipv6)
) STRICT;

-- List order (and keyset pagination) of GET /v0/devices, overall and per user.
CREATE INDEX devices_inserted_at_id ON devices (inserted_at, id);
CREATE INDEX devices_user_id_inserted_at_id ON devices (user_id, inserted_at, id);

CREATE TABLE settings (
    key   TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;

-- Address assignment cursor per tunnel network (key: ipam::Pool::key()).
CREATE TABLE ip_pools (
    network     TEXT    NOT NULL PRIMARY KEY,
    next_offset INTEGER NOT NULL
) STRICT;

-- Addresses given back by deleted or re-addressed devices, reused before the cursor moves on.
-- Filled by the triggers below, so that the ON DELETE CASCADE from users releases too.
CREATE TABLE ip_released (
    family  INTEGER NOT NULL CHECK (family IN (4, 6)),
    address TEXT    NOT NULL,
    PRIMARY KEY (family, address)
) STRICT;

CREATE TRIGGER devices_release_on_delete AFTER DELETE ON devices
BEGIN
    INSERT INTO ip_released (family, address)
        SELECT 4, OLD.ipv4 WHERE OLD.ipv4 IS NOT NULL
        ON CONFLICT DO NOTHING;
    INSERT INTO ip_released (family, address)
        SELECT 6, OLD.ipv6 WHERE OLD.ipv6 IS NOT NULL
        ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER devices_release_on_update AFTER UPDATE OF ipv4, ipv6 ON devices
BEGIN
    INSERT INTO ip_released (family, address)
        SELECT 4, OLD.ipv4 WHERE OLD.ipv4 IS NOT NULL AND OLD.ipv4 IS NOT NEW.ipv4
        ON CONFLICT DO NOTHING;
    INSERT INTO ip_released (family, address)
        SELECT 6, OLD.ipv6 WHERE OLD.ipv6 IS NOT NULL AND OLD.ipv6 IS NOT NEW.ipv6
        ON CONFLICT DO NOTHING;
END;
