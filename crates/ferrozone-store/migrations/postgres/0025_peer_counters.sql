-- The traffic counters each gateway last reported per peer. Mirrors
-- migrations/sqlite/0025_peer_counters.sql.
CREATE TABLE peer_counters (
    source     uuid    NOT NULL,
    public_key text    NOT NULL
        REFERENCES devices (public_key) ON DELETE CASCADE ON UPDATE CASCADE,
    rx_bytes   bigint  NOT NULL,
    tx_bytes   bigint  NOT NULL,
    PRIMARY KEY (source, public_key)
);

CREATE INDEX peer_counters_public_key ON peer_counters (public_key);

INSERT INTO peer_counters (source, public_key, rx_bytes, tx_bytes)
    SELECT '00000000-0000-0000-0000-000000000000', public_key, COALESCE(rx_bytes, 0), COALESCE(tx_bytes, 0)
    FROM device_stats;
