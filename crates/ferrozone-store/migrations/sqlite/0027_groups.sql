-- Groups of users (ferrozone_domain::group, docs/design/groups.md): a name unique whatever
-- its case (name_key, lower-cased), a description, where the group comes from, and its
-- members, each membership with where it comes from. Times are microseconds since the epoch.
CREATE TABLE groups (
    id          BLOB    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    name_key    TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    source      TEXT    NOT NULL DEFAULT 'manual',
    inserted_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    CONSTRAINT groups_name_key_unique UNIQUE (name_key)
) STRICT;

CREATE TABLE group_members (
    group_id    BLOB    NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    source      TEXT    NOT NULL DEFAULT 'manual',
    inserted_at INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
) STRICT, WITHOUT ROWID;

-- A user's groups, and the cascade when a user is deleted.
CREATE INDEX group_members_user_id ON group_members (user_id);
