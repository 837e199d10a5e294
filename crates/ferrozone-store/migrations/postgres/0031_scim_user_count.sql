-- The number of SCIM users and a generation that moves with every profile made or removed
-- (a user's deletion removes its profile through the cascade). A page of SCIM users reads
-- both in the statement that reads the page: the total is SCIM's totalResults without a
-- count, and an unchanged generation lets a walk by startIndex resume from the key its
-- previous page ended on instead of skipping rows (docs/design/scim.md, "Paging"). Mirrors
-- SQLite's 0031.
--
-- Both are sums over 16 shards, and a transaction updates the shard of its transaction id
-- alone: one row for every transaction would hold concurrent provisioning writes in line
-- until each commits. A sum of counters that only grow moves with every committed change,
-- so two reads with the same generation saw the same users.
CREATE TABLE scim_user_count (
    shard      INTEGER NOT NULL PRIMARY KEY CHECK (shard BETWEEN 0 AND 15),
    total      BIGINT  NOT NULL,
    generation BIGINT  NOT NULL
);
INSERT INTO scim_user_count (shard, total, generation) SELECT 0, count(*), 0 FROM scim_users;
INSERT INTO scim_user_count (shard, total, generation) SELECT shard, 0, 0 FROM generate_series(1, 15) AS shard;

CREATE FUNCTION ferrozone_count_scim_users() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    moved BIGINT := CASE TG_OP WHEN 'INSERT' THEN 1 WHEN 'DELETE' THEN -1 ELSE 0 END;
BEGIN
    UPDATE scim_user_count SET total = total + moved, generation = generation + 1
        WHERE shard = (txid_current() % 16)::INTEGER;
    RETURN NULL;
END
$$;

CREATE TRIGGER scim_users_counted
    AFTER INSERT OR DELETE ON scim_users
    FOR EACH ROW EXECUTE FUNCTION ferrozone_count_scim_users();
-- The order's key never changes today; should it, a walk must not resume past a moved row.
CREATE TRIGGER scim_users_counted_reordered
    AFTER UPDATE OF user_id, inserted_at ON scim_users
    FOR EACH ROW EXECUTE FUNCTION ferrozone_count_scim_users();
