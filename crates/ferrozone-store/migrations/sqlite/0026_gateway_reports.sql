-- What a gateway process says of its data plane with each poll (ferrozone_domain::gateway::
-- GatewayReport): its backend, the peers on its interface, those over its backend's limit,
-- and whether its last reconcile failed. NULL until it says.
ALTER TABLE gateways ADD COLUMN backend TEXT;
ALTER TABLE gateways ADD COLUMN peers_applied INTEGER;
ALTER TABLE gateways ADD COLUMN peers_refused INTEGER;
ALTER TABLE gateways ADD COLUMN reconcile_failed INTEGER;
