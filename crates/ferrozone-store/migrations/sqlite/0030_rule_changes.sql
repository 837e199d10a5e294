-- Rule and membership changes get a counter of their own, 'rules' (0015_change_counters
-- counted them as 'peers'): the WireGuard peers do not depend on them, and the nftables
-- table re-reads only the rules and the memberships for them, not every device
-- (docs/design/groups.md, "Membership changes"). Mirrors PostgreSQL's 0030, which sends
-- them on the same channel with the payload 'rules'.
--
-- The topic list is a CHECK, so the table is rebuilt; the triggers that name it are
-- dropped first and created again after.
DROP TRIGGER devices_count_peers_inserted;
DROP TRIGGER devices_count_peers_deleted;
DROP TRIGGER devices_count_peers_updated;
DROP TRIGGER users_count_peers_deleted;
DROP TRIGGER users_count_peers_updated;
DROP TRIGGER rules_count_peers_inserted;
DROP TRIGGER rules_count_peers_deleted;
DROP TRIGGER rules_count_peers_updated;
DROP TRIGGER group_members_count_peers_inserted;
DROP TRIGGER group_members_count_peers_deleted;
DROP TRIGGER group_members_count_peers_updated;
DROP TRIGGER settings_count_configuration_inserted;
DROP TRIGGER settings_count_configuration_updated;
DROP TRIGGER settings_count_configuration_deleted;

CREATE TABLE change_counters_new (
    topic      TEXT    NOT NULL PRIMARY KEY CHECK (topic IN ('peers', 'rules', 'configuration')),
    generation INTEGER NOT NULL
) STRICT;
INSERT INTO change_counters_new (topic, generation) SELECT topic, generation FROM change_counters;
INSERT INTO change_counters_new (topic, generation) VALUES ('rules', 0);
DROP TABLE change_counters;
ALTER TABLE change_counters_new RENAME TO change_counters;

-- peers: devices added, removed or re-keyed; users disabled, enabled or deleted.
CREATE TRIGGER devices_count_peers_inserted AFTER INSERT ON devices
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER devices_count_peers_deleted AFTER DELETE ON devices
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER devices_count_peers_updated
    AFTER UPDATE OF public_key, preshared_key, ipv4, ipv6, user_id ON devices
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER users_count_peers_deleted AFTER DELETE ON users
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER users_count_peers_updated AFTER UPDATE OF disabled_at ON users
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

-- rules: rules written; memberships (a group's deletion reaches both through the cascade).
CREATE TRIGGER rules_count_rules_inserted AFTER INSERT ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

CREATE TRIGGER rules_count_rules_deleted AFTER DELETE ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

CREATE TRIGGER rules_count_rules_updated AFTER UPDATE ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

CREATE TRIGGER group_members_count_rules_inserted AFTER INSERT ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

CREATE TRIGGER group_members_count_rules_deleted AFTER DELETE ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

CREATE TRIGGER group_members_count_rules_updated AFTER UPDATE ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'rules';
END;

-- configuration: the settings rows named configuration.<key>.
CREATE TRIGGER settings_count_configuration_inserted AFTER INSERT ON settings
    WHEN NEW.key LIKE 'configuration.%'
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'configuration';
END;

CREATE TRIGGER settings_count_configuration_updated AFTER UPDATE ON settings
    WHEN NEW.key LIKE 'configuration.%' OR OLD.key LIKE 'configuration.%'
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'configuration';
END;

CREATE TRIGGER settings_count_configuration_deleted AFTER DELETE ON settings
    WHEN OLD.key LIKE 'configuration.%'
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'configuration';
END;
