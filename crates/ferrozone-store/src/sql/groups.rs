//! The groups' statements, shared by both backends ([`ferrozone_domain::group`]).

use ferrozone_domain::group::{Group, Member};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

/// The columns [`GroupColumns`] decodes, in its order (`g` the group).
macro_rules! columns {
    () => {
        "g.id, g.name, g.description, g.source, \
         (SELECT count(*) FROM group_members m WHERE m.group_id = g.id), g.inserted_at, g.updated_at"
    };
}

pub(crate) const INSERT: &str = "INSERT INTO groups (id, name, name_key, description, source, inserted_at, \
     updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)";
pub(crate) const LIST: &str = concat!("SELECT ", columns!(), " FROM groups g ORDER BY g.name_key, g.id");
/// The groups user `$1` is a member of, by name.
pub(crate) const OF_USER: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM groups g JOIN group_members um ON um.group_id = g.id WHERE um.user_id = $1 ORDER BY g.name_key, g.id"
);
/// Group `$1`, held against its deletion until the transaction ends (PostgreSQL): a rule
/// naming it waits for a delete rather than failing its foreign key.
pub(crate) const EXISTS_LOCKED_POSTGRES: &str = "SELECT 1 FROM groups WHERE id = $1 FOR KEY SHARE";
pub(crate) const BY_ID: &str = concat!("SELECT ", columns!(), " FROM groups g WHERE g.id = $1");
/// Locks the row on PostgreSQL (`FOR UPDATE`): an update reads what it changes.
pub(crate) const BY_ID_FOR_UPDATE_POSTGRES: &str =
    concat!("SELECT ", columns!(), " FROM groups g WHERE g.id = $1 FOR UPDATE");
pub(crate) const UPDATE: &str =
    "UPDATE groups SET name = $2, name_key = $3, description = $4, updated_at = $5 WHERE id = $1";
pub(crate) const DELETE: &str = "DELETE FROM groups WHERE id = $1";
pub(crate) const EXISTS: &str = "SELECT 1 FROM groups WHERE id = $1";
pub(crate) const USER_EXISTS: &str = "SELECT 1 FROM users WHERE id = $1";
/// [`USER_EXISTS`] holding the user's row until the transaction ends (PostgreSQL): a delete
/// of the user waits for the membership rather than failing its foreign key.
pub(crate) const USER_EXISTS_LOCKED_POSTGRES: &str = "SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE";
pub(crate) const MEMBERS: &str = "SELECT m.user_id, u.email, m.source, m.inserted_at FROM group_members m \
     JOIN users u ON u.id = m.user_id WHERE m.group_id = $1 ORDER BY u.email_key, u.id";
pub(crate) const MEMBER: &str = "SELECT m.user_id, u.email, m.source, m.inserted_at FROM group_members m \
     JOIN users u ON u.id = m.user_id WHERE m.group_id = $1 AND m.user_id = $2";
/// Inserts a membership unless there is one: one row affected when added.
pub(crate) const ADD_MEMBER: &str = "INSERT INTO group_members (group_id, user_id, source, inserted_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (group_id, user_id) DO NOTHING";
pub(crate) const REMOVE_MEMBER: &str = "DELETE FROM group_members WHERE group_id = $1 AND user_id = $2";

/// The id of the group named `$1` whatever its case (`$1` lower-cased).
pub(crate) const ID_BY_KEY: &str = "SELECT id FROM groups WHERE name_key = $1";
/// [`ID_BY_KEY`] holding the group's row until the transaction ends (PostgreSQL).
pub(crate) const ID_BY_KEY_LOCKED_POSTGRES: &str = "SELECT id FROM groups WHERE name_key = $1 FOR KEY SHARE";
/// A group an identity provider named, unless one of that name exists (made meanwhile by
/// another sign-in): one row affected when made.
pub(crate) const INSERT_IF_NEW: &str = "INSERT INTO groups (id, name, name_key, description, source, \
     inserted_at, updated_at) VALUES ($1, $2, $3, '', $4, $5, $5) ON CONFLICT (name_key) DO NOTHING";
/// The groups user `$1` is a member of through source `$2`.
pub(crate) const SOURCED_MEMBERSHIPS: &str = "SELECT group_id FROM group_members WHERE user_id = $1 AND source = $2";
/// Ends user `$2`'s membership of group `$1` when it comes from source `$3`.
pub(crate) const REMOVE_SOURCED_MEMBER: &str =
    "DELETE FROM group_members WHERE group_id = $1 AND user_id = $2 AND source = $3";

/// A group's row as both backends decode it.
pub(crate) struct GroupColumns {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub source: String,
    pub member_count: i64,
    pub inserted_at: i64,
    pub updated_at: i64,
}

impl From<GroupColumns> for Group {
    fn from(c: GroupColumns) -> Self {
        Group {
            id: c.id,
            name: c.name,
            description: c.description,
            source: c.source,
            member_count: c.member_count,
            inserted_at: Timestamp::from_micros(c.inserted_at),
            updated_at: Timestamp::from_micros(c.updated_at),
        }
    }
}

/// A member's row: the user's id and email, the membership's source and start.
pub(crate) fn member(user_id: Uuid, email: String, source: String, inserted_at: i64) -> Member {
    Member { user_id, email, source, inserted_at: Timestamp::from_micros(inserted_at) }
}
