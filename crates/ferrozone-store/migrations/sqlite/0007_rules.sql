-- Egress rules (Firezone's `/v0/rules`, docs/api.md section 8, "Egress rules").
-- `destination` and `port_range` are kept as the client sent them; what they mean is
-- parsed by the domain. No two rules of the same action and scope overlap: the domain
-- checks it inside the write transaction, with the table locked against other rule
-- writers (`ferrozone_domain::rules::egress`). Deleting the user deletes its rules.
CREATE TABLE rules (
    id          BLOB    PRIMARY KEY,
    user_id     BLOB    REFERENCES users (id) ON DELETE CASCADE,
    destination TEXT    NOT NULL,
    action      TEXT    NOT NULL CHECK (action IN ('accept', 'drop')),
    port_type   TEXT    CHECK (port_type IN ('tcp', 'udp')),
    port_range  TEXT,
    inserted_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    CHECK ((port_type IS NULL) = (port_range IS NULL))
) STRICT;

CREATE INDEX rules_user_id ON rules (user_id);
