-- Each user's number of devices, kept by triggers, so that the device limit is checked
-- with one row read however many devices the owner has. Mirrors the PostgreSQL migration.

ALTER TABLE users ADD COLUMN device_count INTEGER NOT NULL DEFAULT 0;

UPDATE users SET device_count = (SELECT COUNT(*) FROM devices WHERE devices.user_id = users.id);

CREATE TRIGGER devices_count_on_insert AFTER INSERT ON devices
BEGIN
    UPDATE users SET device_count = device_count + 1 WHERE id = NEW.user_id;
END;

-- Also fires for the devices an ON DELETE CASCADE from users removes.
CREATE TRIGGER devices_count_on_delete AFTER DELETE ON devices
BEGIN
    UPDATE users SET device_count = device_count - 1 WHERE id = OLD.user_id;
END;
