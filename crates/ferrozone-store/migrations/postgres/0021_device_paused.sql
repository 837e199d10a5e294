-- A paused device (docs/design/devices.md, "Paused devices"): off the interface and out of
-- the egress rules' sources, its keys and addresses kept. NULL while active; the time it
-- was paused (microseconds) otherwise.
ALTER TABLE devices ADD COLUMN paused_at bigint;
