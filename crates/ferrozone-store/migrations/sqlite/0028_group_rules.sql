-- Group rules (docs/design/groups.md, "Group rules"): a rule names a user, a group, or
-- neither (every user), never both. Deleting the group deletes its rules, as deleting a
-- user deletes the user's.
ALTER TABLE rules ADD COLUMN group_id BLOB REFERENCES groups (id) ON DELETE CASCADE
    CHECK (group_id IS NULL OR user_id IS NULL);

CREATE INDEX rules_group_id ON rules (group_id);

-- A membership of a group changes whose traffic the group's rules decide: the data plane
-- rebuilds (0015_change_counters). A group's deletion reaches its rules through the cascade,
-- whose deletes move the counter through rules_count_peers_deleted.
CREATE TRIGGER group_members_count_peers_inserted AFTER INSERT ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER group_members_count_peers_deleted AFTER DELETE ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;

CREATE TRIGGER group_members_count_peers_updated AFTER UPDATE ON group_members
BEGIN
    UPDATE change_counters SET generation = generation + 1 WHERE topic = 'peers';
END;
