-- Groups of users. Mirrors migrations/sqlite/0027_groups.sql.
CREATE TABLE groups (
    id          uuid    NOT NULL PRIMARY KEY,
    name        text    NOT NULL,
    name_key    text    NOT NULL,
    description text    NOT NULL DEFAULT '',
    source      text    NOT NULL DEFAULT 'manual',
    inserted_at bigint  NOT NULL,
    updated_at  bigint  NOT NULL,
    CONSTRAINT groups_name_key_unique UNIQUE (name_key)
);

CREATE TABLE group_members (
    group_id    uuid    NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    source      text    NOT NULL DEFAULT 'manual',
    inserted_at bigint  NOT NULL,
    PRIMARY KEY (group_id, user_id)
);

CREATE INDEX group_members_user_id ON group_members (user_id);
