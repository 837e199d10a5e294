-- A device's statistics in a table of their own.
--
-- The statistics collector rewrites every peer's figures each cycle. In `devices` that
-- rewrote a wide row and, the handshake being in the list index, an index entry per device:
-- 10,000 changed peers cost more to write than to read from the interface. Here a cycle
-- rewrites narrow rows of one table found by their key, and no index of `devices`
-- (docs/benchmarks.md, "Data plane"). A device without a row has never reported.
--
-- Keyed by the public key, which is what the collector reports: deleting a device deletes
-- its row, and a new key carries the figures along, as they were kept before.
CREATE TABLE device_stats (
    public_key       text    NOT NULL PRIMARY KEY
        REFERENCES devices (public_key) ON DELETE CASCADE ON UPDATE CASCADE,
    latest_handshake bigint,
    remote_ip        text,
    rx_bytes         bigint,
    tx_bytes         bigint
);

INSERT INTO device_stats (public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes)
    SELECT public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes FROM devices
    WHERE latest_handshake IS NOT NULL OR remote_ip IS NOT NULL OR rx_bytes IS NOT NULL OR tx_bytes IS NOT NULL;

-- Devices filtered by presence are still read in list order with the filter checked
-- before a device row is read: the list index carries the key the statistics are found by.
CREATE INDEX devices_inserted_at_id_key ON devices (inserted_at, id, public_key);
DROP INDEX devices_inserted_at_id_handshake;

ALTER TABLE devices DROP COLUMN latest_handshake;
ALTER TABLE devices DROP COLUMN remote_ip;
ALTER TABLE devices DROP COLUMN rx_bytes;
ALTER TABLE devices DROP COLUMN tx_bytes;
