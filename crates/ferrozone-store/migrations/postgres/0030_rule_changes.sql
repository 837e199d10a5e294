-- Rule and membership changes are announced apart from the peers' (0008_rule_notify and
-- 0028_group_rules announced them as peer changes): the same channel, ferrozone_peers, with
-- the payload 'rules'. The WireGuard peers do not depend on them, and the nftables table
-- re-reads only the rules and the memberships for them, not every device
-- (docs/design/groups.md, "Membership changes"). Mirrors SQLite's 0030, which counts them
-- as the topic 'rules'.
CREATE FUNCTION ferrozone_notify_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ferrozone_peers', 'rules');
    RETURN NULL;
END
$$;

DROP TRIGGER rules_notify_peers ON rules;
CREATE TRIGGER rules_notify_rules
    AFTER INSERT OR UPDATE OR DELETE ON rules
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_rules();

DROP TRIGGER group_members_notify_peers ON group_members;
CREATE TRIGGER group_members_notify_rules
    AFTER INSERT OR UPDATE OR DELETE ON group_members
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_rules();
