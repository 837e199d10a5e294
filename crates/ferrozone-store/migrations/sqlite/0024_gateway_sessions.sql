-- A gateway process's session (ferrozone_domain::gateway::Lease): the random id of the one
-- process holding the gateway's credential, and since when. Its polls renew last_seen_at;
-- a session without a poll for 60 s has lapsed.
ALTER TABLE gateways ADD COLUMN session_id BLOB;
ALTER TABLE gateways ADD COLUMN connected_since INTEGER;
