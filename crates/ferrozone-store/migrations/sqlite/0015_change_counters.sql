-- What PostgreSQL announces with NOTIFY (0003_peer_notify, 0008_rule_notify,
-- 0009_configuration_notify), SQLite counts: each topic's generation moves inside the
-- transaction of every change the matching PostgreSQL trigger announces, and a process
-- polls the counters (SqliteStore::watch_peer_changes, watch_configuration_changes).
-- Statistics writes touch other columns and move no counter, so they wake no one: before
-- this, a process polled PRAGMA data_version, which every statistics cycle moved.

CREATE TABLE change_counters (
    topic      TEXT    NOT NULL PRIMARY KEY CHECK (topic IN ('peers', 'configuration')),
    generation INTEGER NOT NULL
) STRICT;

INSERT INTO change_counters (topic, generation) VALUES ('peers', 0), ('configuration', 0);

-- peers: devices added, removed or re-keyed; users disabled, enabled or deleted; rules.
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

CREATE TRIGGER rules_count_peers_inserted AFTER INSERT ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER rules_count_peers_deleted AFTER DELETE ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER rules_count_peers_updated AFTER UPDATE ON rules
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
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
