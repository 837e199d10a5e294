-- The console's user list (and GET /v0/users?limit=) pages in (inserted_at, id) order:
-- a page reads its rows from this index, not the whole table.
CREATE INDEX users_inserted_at_id ON users (inserted_at, id);
