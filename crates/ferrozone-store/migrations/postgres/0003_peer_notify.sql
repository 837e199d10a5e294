-- Every process sharing the database learns of committed changes to the WireGuard peers
-- (devices added, removed or re-keyed; users disabled, enabled or deleted) through
-- LISTEN ferrozone_peers. A NOTIFY is delivered at commit, never before, and never for a
-- rolled-back transaction. Statistics writes touch other columns and notify no one.
-- (SQLite has no counterpart: a process there polls PRAGMA data_version instead.)

CREATE FUNCTION ferrozone_notify_peers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ferrozone_peers', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_notify_peers
    AFTER INSERT OR DELETE OR UPDATE OF public_key, preshared_key, ipv4, ipv6, user_id ON devices
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_peers();

CREATE TRIGGER users_notify_peers
    AFTER DELETE OR UPDATE OF disabled_at ON users
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_peers();
