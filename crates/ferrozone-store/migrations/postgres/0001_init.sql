-- Ferrozone schema, PostgreSQL flavour. Mirrors migrations/sqlite/0001_init.sql:
-- same tables, columns, constraint names and triggers; only the types differ.
-- Timestamps are BIGINT microseconds since the Unix epoch (domain `Timestamp`).

CREATE TABLE users (
    id                    uuid   NOT NULL PRIMARY KEY,
    email                 text   NOT NULL,
    -- lower-cased, trimmed email (model::email_key): uniqueness and look-ups
    email_key             text   NOT NULL,
    role                  text   NOT NULL,
    password_hash         text,
    disabled_at           bigint,
    last_signed_in_at     bigint,
    last_signed_in_method text,
    inserted_at           bigint NOT NULL,
    updated_at            bigint NOT NULL,
    CONSTRAINT users_email_key_unique UNIQUE (email_key),
    CONSTRAINT users_role_check CHECK (role IN ('admin', 'unprivileged'))
);

-- The last-admin rule locks and counts admins; keep that cheap.
CREATE INDEX users_admins ON users (id) WHERE role = 'admin';

CREATE TABLE api_tokens (
    id           uuid   NOT NULL PRIMARY KEY,
    user_id      uuid   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text   NOT NULL,
    -- SHA-256 of the token; the token itself is never stored
    token_hash   bytea  NOT NULL,
    inserted_at  bigint NOT NULL,
    expires_at   bigint NOT NULL,
    last_used_at bigint,
    CONSTRAINT api_tokens_token_hash_unique UNIQUE (token_hash)
);

CREATE INDEX api_tokens_user_id ON api_tokens (user_id);

CREATE TABLE devices (
    id                               uuid    NOT NULL PRIMARY KEY,
    user_id                          uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name                             text    NOT NULL,
    description                      text,
    public_key                       text    NOT NULL,
    -- the sealed (encrypted) preshared key, opaque to the store
    preshared_key                    bytea   NOT NULL,
    -- canonical text of the address (Ipv4Addr / Ipv6Addr Display)
    ipv4                             text,
    ipv6                             text,
    -- JSON arrays of strings
    allowed_ips                      text    NOT NULL DEFAULT '[]',
    dns                              text    NOT NULL DEFAULT '[]',
    endpoint                         text,
    mtu                              integer,
    persistent_keepalive             integer,
    use_default_allowed_ips          boolean NOT NULL,
    use_default_dns                  boolean NOT NULL,
    use_default_endpoint             boolean NOT NULL,
    use_default_mtu                  boolean NOT NULL,
    use_default_persistent_keepalive boolean NOT NULL,
    latest_handshake                 bigint,
    remote_ip                        text,
    rx_bytes                         bigint,
    tx_bytes                         bigint,
    inserted_at                      bigint  NOT NULL,
    updated_at                       bigint  NOT NULL,
    CONSTRAINT devices_public_key_unique UNIQUE (public_key),
    CONSTRAINT devices_user_id_name_unique UNIQUE (user_id, name),
    CONSTRAINT devices_ipv4_unique UNIQUE (ipv4),
    CONSTRAINT devices_ipv6_unique UNIQUE (ipv6)
);

-- List order (and keyset pagination) of GET /v0/devices, overall and per user.
CREATE INDEX devices_inserted_at_id ON devices (inserted_at, id);
CREATE INDEX devices_user_id_inserted_at_id ON devices (user_id, inserted_at, id);

CREATE TABLE settings (
    key   text  NOT NULL PRIMARY KEY,
    value bytea NOT NULL
);

-- Address assignment cursor per tunnel network (key: ipam::Pool::key()).
CREATE TABLE ip_pools (
    network     text   NOT NULL PRIMARY KEY,
    next_offset bigint NOT NULL
);

-- Addresses given back by deleted or re-addressed devices, reused before the cursor moves on.
-- Filled by the trigger below, so that the ON DELETE CASCADE from users releases too.
CREATE TABLE ip_released (
    family  smallint NOT NULL CHECK (family IN (4, 6)),
    address text     NOT NULL,
    PRIMARY KEY (family, address)
);

CREATE FUNCTION devices_release_addresses() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.ipv4 IS NOT NULL THEN
            INSERT INTO ip_released (family, address) VALUES (4, OLD.ipv4) ON CONFLICT DO NOTHING;
        END IF;
        IF OLD.ipv6 IS NOT NULL THEN
            INSERT INTO ip_released (family, address) VALUES (6, OLD.ipv6) ON CONFLICT DO NOTHING;
        END IF;
    ELSE
        IF OLD.ipv4 IS NOT NULL AND OLD.ipv4 IS DISTINCT FROM NEW.ipv4 THEN
            INSERT INTO ip_released (family, address) VALUES (4, OLD.ipv4) ON CONFLICT DO NOTHING;
        END IF;
        IF OLD.ipv6 IS NOT NULL AND OLD.ipv6 IS DISTINCT FROM NEW.ipv6 THEN
            INSERT INTO ip_released (family, address) VALUES (6, OLD.ipv6) ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_release_on_delete AFTER DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_release_addresses();

CREATE TRIGGER devices_release_on_update AFTER UPDATE OF ipv4, ipv6 ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_release_addresses();
