-- The admin console's lists at scale. Online devices (a handshake in the last three
-- minutes) are found through their latest handshake, not by scanning every device in list
-- order; every user's tokens are paged in creation order.

CREATE INDEX devices_latest_handshake ON devices (latest_handshake);
CREATE INDEX api_tokens_inserted_at_id ON api_tokens (inserted_at, id);
