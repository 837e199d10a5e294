-- Every process sharing the database learns of committed changes to the stored
-- configuration (the settings rows named configuration.<key>, docs/api.md section 8,
-- "Configuration") through LISTEN ferrozone_configuration, and reads the values again.
-- Identical notifications of one transaction are delivered once, at commit, so a PATCH of
-- several keys wakes each listener once. Other settings rows notify no one.
-- (SQLite has no counterpart: a process there polls PRAGMA data_version instead.)

CREATE FUNCTION ferrozone_notify_configuration() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ferrozone_configuration', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER settings_notify_configuration_written
    AFTER INSERT OR UPDATE ON settings
    FOR EACH ROW WHEN (NEW.key LIKE 'configuration.%')
    EXECUTE FUNCTION ferrozone_notify_configuration();

CREATE TRIGGER settings_notify_configuration_deleted
    AFTER DELETE ON settings
    FOR EACH ROW WHEN (OLD.key LIKE 'configuration.%')
    EXECUTE FUNCTION ferrozone_notify_configuration();
