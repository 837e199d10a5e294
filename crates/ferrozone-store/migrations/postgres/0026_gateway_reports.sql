-- What a gateway process says of its data plane. Mirrors
-- migrations/sqlite/0026_gateway_reports.sql.
ALTER TABLE gateways ADD COLUMN backend text;
ALTER TABLE gateways ADD COLUMN peers_applied bigint;
ALTER TABLE gateways ADD COLUMN peers_refused bigint;
ALTER TABLE gateways ADD COLUMN reconcile_failed boolean;
