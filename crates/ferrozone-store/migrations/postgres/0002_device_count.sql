-- Each user's number of devices, kept by a trigger, so that the device limit is checked
-- with one row read however many devices the owner has. Mirrors the SQLite migration.
-- The device insert flow holds the owner's row lock already; a delete takes it briefly.

ALTER TABLE users ADD COLUMN device_count BIGINT NOT NULL DEFAULT 0;

UPDATE users SET device_count = (SELECT COUNT(*) FROM devices WHERE devices.user_id = users.id);

CREATE FUNCTION devices_count() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE users SET device_count = device_count + 1 WHERE id = NEW.user_id;
    ELSE
        -- Also for the devices an ON DELETE CASCADE from users removes.
        UPDATE users SET device_count = device_count - 1 WHERE id = OLD.user_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_count AFTER INSERT OR DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_count();
