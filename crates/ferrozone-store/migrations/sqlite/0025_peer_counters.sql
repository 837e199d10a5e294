-- The traffic counters each gateway last reported per peer (ferrozone_domain::store::
-- DataPlane::record_stats_from): a device's totals in device_stats grow by each report's
-- increase over the same gateway's previous counter, or by the whole counter when it went
-- down (the interface was recreated), so totals are summed across gateways and never go
-- backwards. `source` is the gateway's id; serve's embedded gateway is the nil UUID.
CREATE TABLE peer_counters (
    source     BLOB    NOT NULL,
    public_key TEXT    NOT NULL
        REFERENCES devices (public_key) ON DELETE CASCADE ON UPDATE CASCADE,
    rx_bytes   INTEGER NOT NULL,
    tx_bytes   INTEGER NOT NULL,
    PRIMARY KEY (source, public_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX peer_counters_public_key ON peer_counters (public_key);

-- The totals so far came from the embedded gateway's counters: they are its last counters,
-- so that its next report adds only what is new.
INSERT INTO peer_counters (source, public_key, rx_bytes, tx_bytes)
    SELECT X'00000000000000000000000000000000', public_key, COALESCE(rx_bytes, 0), COALESCE(tx_bytes, 0)
    FROM device_stats;
