-- The number of SCIM users and a generation that moves with every profile made or removed
-- (a user's deletion removes its profile through the cascade). A page of SCIM users reads
-- both in the statement that reads the page: the total is SCIM's totalResults without a
-- count, and an unchanged generation lets a walk by startIndex resume from the key its
-- previous page ended on instead of skipping rows (docs/design/scim.md, "Paging"). Mirrors
-- PostgreSQL's 0031, which sums 16 shards of it; SQLite writes one transaction at a time
-- and has the one shard.
CREATE TABLE scim_user_count (
    shard      INTEGER NOT NULL PRIMARY KEY CHECK (shard = 0),
    total      INTEGER NOT NULL,
    generation INTEGER NOT NULL
) STRICT;
INSERT INTO scim_user_count (shard, total, generation) SELECT 0, count(*), 0 FROM scim_users;

CREATE TRIGGER scim_users_counted_inserted AFTER INSERT ON scim_users
BEGIN
    UPDATE scim_user_count SET total = total + 1, generation = generation + 1;
END;

CREATE TRIGGER scim_users_counted_deleted AFTER DELETE ON scim_users
BEGIN
    UPDATE scim_user_count SET total = total - 1, generation = generation + 1;
END;

-- The order's key never changes today; should it, a walk must not resume past a moved row.
CREATE TRIGGER scim_users_counted_reordered AFTER UPDATE OF user_id, inserted_at ON scim_users
BEGIN
    UPDATE scim_user_count SET generation = generation + 1;
END;
