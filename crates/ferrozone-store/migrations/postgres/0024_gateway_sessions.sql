-- A gateway process's session. Mirrors migrations/sqlite/0024_gateway_sessions.sql.
ALTER TABLE gateways ADD COLUMN session_id uuid;
ALTER TABLE gateways ADD COLUMN connected_since bigint;
