//! SCIM provisioning's statements, shared by both backends ([`ferrozone_domain::scim`]).
//!
//! The lists are built from fixed parts by filter: `$1` the limit, `$2` the offset, `$3`
//! the filter's value (when there is a filter).

use ferrozone_domain::scim::{GroupFilter, UserFilter};

use super::sql;
use crate::rows::{ScimTokenRow, ScimUserRow, UserRow};

pub(crate) const INSERT_TOKEN: &str = sql![(insert ScimTokenRow)];
pub(crate) const TOKEN_BY_HASH: &str = sql![(select ScimTokenRow), " WHERE token_hash = $1"];
pub(crate) const LIST_TOKENS: &str = sql![(select ScimTokenRow), " ORDER BY inserted_at DESC, id DESC"];
/// Revokes token `$1` at `$2`, unless it was revoked already (it keeps its first time).
pub(crate) const REVOKE_TOKEN: &str = sql![
    "UPDATE scim_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING ",
    (columns ScimTokenRow)
];
pub(crate) const TOUCH_TOKEN: &str = "UPDATE scim_tokens SET last_used_at = $2 WHERE id = $1";

pub(crate) const PROFILE: &str = sql![(select ScimUserRow), " WHERE user_id = $1"];
/// Writes a profile, making it or replacing every column but `inserted_at`.
pub(crate) const PUT_PROFILE: &str =
    sql![(insert ScimUserRow), " ON CONFLICT (user_id) DO UPDATE SET ", (excluded ScimUserRow)];
pub(crate) const DELETE_PROFILE: &str = "DELETE FROM scim_users WHERE user_id = $1";
pub(crate) const IS_SCIM_USER: &str = "SELECT 1 FROM scim_users WHERE user_id = $1";

/// A profile's and its user's columns, aliased (`s_…`, `u_…`).
const PROFILE_AND_USER: &str = sql![(aliased ScimUserRow), ", ", (aliased UserRow)];
const USERS_SELECT: &str = sql![
    "SELECT ",
    (aliased ScimUserRow),
    ", ",
    (aliased UserRow),
    " FROM scim_users s JOIN users u ON u.id = s.user_id"
];
const USERS_COUNT: &str = "SELECT count(*) FROM scim_users s JOIN users u ON u.id = s.user_id";
pub(crate) const USER: &str = sql![
    "SELECT ",
    (aliased ScimUserRow),
    ", ",
    (aliased UserRow),
    " FROM scim_users s JOIN users u ON u.id = s.user_id WHERE s.user_id = $1"
];

/// The condition of a user filter on `$3`.
fn user_condition(filter: &UserFilter) -> &'static str {
    match filter {
        UserFilter::All => "",
        UserFilter::UserName(_) => " WHERE s.user_name_key = $3",
        UserFilter::ExternalId(_) => " WHERE s.external_id = $3",
        UserFilter::DisplayName(_) => " WHERE s.display_name_key = $3",
        UserFilter::Id(_) => " WHERE s.user_id = $3",
        UserFilter::Email(_) => " WHERE u.email_key = $3",
    }
}

/// The page of the users a filter selects and their count, in the order they were
/// provisioned. The domain reads every user ([`UserFilter::All`]) by [`every_user`].
pub(crate) fn users(filter: &UserFilter) -> (String, String) {
    let condition = user_condition(filter);
    let page = format!("{USERS_SELECT}{condition} ORDER BY s.inserted_at, s.user_id LIMIT $1 OFFSET $2");
    (page, format!("{USERS_COUNT}{condition}").replace("$3", "$1"))
}

/// The sums of the count's shards (0031_scim_user_count): the total and the generation.
pub(crate) const USER_COUNT: &str = "SELECT CAST(sum(total) AS BIGINT) AS total, \
     CAST(sum(generation) AS BIGINT) AS generation FROM scim_user_count";

/// A page of every user with [`USER_COUNT`]'s columns in front (`count_total`,
/// `count_generation`): `$1` users after skipping `$2` of them, or, `after`, the `$1`
/// users after the key (`$2`, `$3`) — docs/design/scim.md, "Paging".
///
/// The page is found on the profiles' order index alone and only its rows are looked up:
/// the rows an `OFFSET` skips are index entries, and a resumed page reads no other. On
/// PostgreSQL the look-ups are `LATERAL` (with `OFFSET 0`, which keeps them per row): a
/// plain join of the page is planned as a hash join over every profile and user, three
/// times the cost at 10,000.
pub(crate) fn every_user(after: bool, postgres: bool) -> String {
    let range = if after {
        "WHERE (inserted_at, user_id) > ($2, $3) ORDER BY inserted_at, user_id LIMIT $1"
    } else {
        "ORDER BY inserted_at, user_id LIMIT $1 OFFSET $2"
    };
    let page = format!("(SELECT user_id, inserted_at FROM scim_users {range}) p");
    let rows = if postgres {
        "CROSS JOIN LATERAL (SELECT * FROM scim_users WHERE user_id = p.user_id OFFSET 0) s \
         CROSS JOIN LATERAL (SELECT * FROM users WHERE id = p.user_id OFFSET 0) u"
    } else {
        "JOIN scim_users s ON s.user_id = p.user_id JOIN users u ON u.id = s.user_id"
    };
    format!(
        "SELECT c.total AS count_total, c.generation AS count_generation, {PROFILE_AND_USER} \
         FROM {page} CROSS JOIN ({USER_COUNT}) c {rows} ORDER BY p.inserted_at, p.user_id"
    )
}

/// The columns of a group as [`super::groups`] reads them, then its `external_id`.
macro_rules! group_columns {
    () => {
        "g.id, g.name, g.description, g.source, \
         (SELECT count(*) FROM group_members m WHERE m.group_id = g.id), g.inserted_at, g.updated_at, g.external_id"
    };
}
const GROUP_COLUMNS: &str = group_columns!();
pub(crate) const GROUP: &str =
    concat!("SELECT ", group_columns!(), " FROM groups g WHERE g.id = $1 AND g.source = 'scim'");
/// [`GROUP`] locked until the transaction ends (PostgreSQL): a write reads what it changes.
pub(crate) const GROUP_FOR_UPDATE_POSTGRES: &str =
    concat!("SELECT ", group_columns!(), " FROM groups g WHERE g.id = $1 AND g.source = 'scim' FOR UPDATE OF g");

fn group_condition(filter: &GroupFilter) -> &'static str {
    match filter {
        GroupFilter::All => "",
        GroupFilter::DisplayName(_) => " AND g.name_key = $3",
        GroupFilter::ExternalId(_) => " AND g.external_id = $3",
        GroupFilter::Id(_) => " AND g.id = $3",
    }
}

/// The page of SCIM groups and their count, by name.
pub(crate) fn groups(filter: &GroupFilter) -> (String, String) {
    let condition = group_condition(filter);
    let page = format!(
        "SELECT {GROUP_COLUMNS} FROM groups g WHERE g.source = 'scim'{condition} \
         ORDER BY g.name_key, g.id LIMIT $1 OFFSET $2"
    );
    let count = format!("SELECT count(*) FROM groups g WHERE g.source = 'scim'{condition}").replace("$3", "$1");
    (page, count)
}

/// The SCIM members of the groups `$1` … `$count`: `(group, user, userName)`.
pub(crate) fn members(count: usize) -> String {
    let placeholders: Vec<String> = (1..=count).map(|n| format!("${n}")).collect();
    format!(
        "SELECT m.group_id, m.user_id, s.user_name FROM group_members m \
         JOIN scim_users s ON s.user_id = m.user_id \
         WHERE m.source = 'scim' AND m.group_id IN ({}) ORDER BY m.group_id, s.user_name_key",
        placeholders.join(", ")
    )
}

/// The id and source of the group named `$1` (its name key).
pub(crate) const GROUP_BY_NAME: &str = "SELECT id, source FROM groups WHERE name_key = $1";
/// [`GROUP_BY_NAME`], locked (PostgreSQL).
pub(crate) const GROUP_BY_NAME_FOR_UPDATE_POSTGRES: &str =
    "SELECT id, source FROM groups WHERE name_key = $1 FOR UPDATE";
/// The user with email key `$1`, locked as PostgreSQL's user writes lock it.
pub(crate) const USER_BY_EMAIL_LOCKED_POSTGRES: &str =
    sql![(select UserRow), " WHERE email_key = $1 FOR NO KEY UPDATE"];
/// Whether `$1` is a SCIM user, its user row held against a delete (PostgreSQL).
pub(crate) const IS_SCIM_USER_LOCKED_POSTGRES: &str =
    "SELECT 1 FROM scim_users s JOIN users u ON u.id = s.user_id WHERE s.user_id = $1 FOR KEY SHARE OF u";
/// Makes group `$1` a SCIM group, with `externalId` `$2`, at `$3`.
pub(crate) const ADOPT_GROUP: &str =
    "UPDATE groups SET source = 'scim', external_id = $2, updated_at = $3 WHERE id = $1";
pub(crate) const INSERT_GROUP: &str = "INSERT INTO groups (id, name, name_key, description, source, external_id, \
     inserted_at, updated_at) VALUES ($1, $2, $3, '', 'scim', $4, $5, $5)";
pub(crate) const RENAME_GROUP: &str = "UPDATE groups SET name = $2, name_key = $3 WHERE id = $1";
pub(crate) const SET_EXTERNAL_ID: &str = "UPDATE groups SET external_id = $2 WHERE id = $1";
pub(crate) const TOUCH_GROUP: &str = "UPDATE groups SET updated_at = $2 WHERE id = $1";
/// The users of group `$1`'s SCIM memberships.
pub(crate) const SCIM_MEMBER_IDS: &str = "SELECT user_id FROM group_members WHERE group_id = $1 AND source = 'scim'";
/// A SCIM membership of user `$2` in group `$1` at `$3`, unless the user is a member already.
pub(crate) const ADD_MEMBER: &str = "INSERT INTO group_members (group_id, user_id, source, inserted_at) \
     VALUES ($1, $2, 'scim', $3) ON CONFLICT (group_id, user_id) DO NOTHING";
pub(crate) const REMOVE_MEMBER: &str =
    "DELETE FROM group_members WHERE group_id = $1 AND user_id = $2 AND source = 'scim'";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_user_resumes_on_the_key_or_skips() {
        for postgres in [false, true] {
            let (skipping, resuming) = (every_user(false, postgres), every_user(true, postgres));
            assert!(skipping.contains("LIMIT $1 OFFSET $2") && !skipping.contains("$3"), "{skipping}");
            assert!(resuming.contains("> ($2, $3)") && !resuming.contains("OFFSET $"), "{resuming}");
        }
    }

    #[test]
    fn a_filter_adds_one_condition_on_its_parameter() {
        let (page, count) = users(&UserFilter::UserName("a".into()));
        assert!(page.ends_with("WHERE s.user_name_key = $3 ORDER BY s.inserted_at, s.user_id LIMIT $1 OFFSET $2"));
        assert!(count.ends_with("WHERE s.user_name_key = $1"), "{count}");
        let (_, count) = groups(&GroupFilter::DisplayName("x".into()));
        assert!(count.ends_with("AND g.name_key = $1"), "{count}");
    }
}
