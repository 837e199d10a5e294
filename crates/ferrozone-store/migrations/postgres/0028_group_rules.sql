-- Group rules. Mirrors migrations/sqlite/0028_group_rules.sql.
ALTER TABLE rules ADD COLUMN group_id uuid REFERENCES groups (id) ON DELETE CASCADE
    CHECK (group_id IS NULL OR user_id IS NULL);

CREATE INDEX rules_group_id ON rules (group_id);

-- A membership change is a data-plane change (0003_peer_notify's channel). The cascade of a
-- group's deletion deletes its rules, which rules_notify_peers announces.
CREATE TRIGGER group_members_notify_peers
    AFTER INSERT OR UPDATE OR DELETE ON group_members
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_peers();
