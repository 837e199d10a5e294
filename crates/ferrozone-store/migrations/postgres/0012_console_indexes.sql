-- The admin console's lists at scale.
--
-- Devices filtered by presence (online: a handshake in the last three minutes) are read in
-- list order with the handshake in the index itself: the filter is checked on the index
-- entries, a device row is read only when it matches, whatever share of devices is online.
-- The new index starts with the old list index's columns, which it replaces.
CREATE INDEX devices_inserted_at_id_handshake ON devices (inserted_at, id, latest_handshake);
DROP INDEX devices_inserted_at_id;

-- Every user's tokens, paged in creation order.
CREATE INDEX api_tokens_inserted_at_id ON api_tokens (inserted_at, id);
