//! The rusqlite side of [`crate::columns`]: rows read by column name, parameters bound in
//! the order the row declarations give.
//!
//! rusqlite finds a column by name with a scan of the statement's columns, which would cost
//! more than the rest of a point read; so each reader looks its columns up once, on its first
//! row, and keeps their indexes ([`Layout`]). A reader serves statements whose result columns
//! are the same: the ones built from the same `sql!` list.

use std::sync::OnceLock;

use rusqlite::types::ValueRef;
use rusqlite::{Row, Statement, ToSql};

use crate::columns::{Binder, Columns, Source, Value};
use crate::rows::{
    ActivePeerRow, DeviceRow, OidcConnectionRow, RuleMembershipRow, RuleRow, RuleSourceRow, SessionRow, SessionUserRow,
    SignInFlowRow, TokenRow, TokenUserRow, UserRow,
};

impl<'q> Binder<'q> for Vec<&'q dyn ToSql> {
    fn bind<T: Value>(mut self, value: &'q T) -> Self {
        self.push(value);
        self
    }
}

/// The parameters of `row`'s `(insert R)` statement.
pub(crate) fn insert_args<R: Columns>(row: &R) -> Vec<&dyn ToSql> {
    row.bind_insert(Vec::with_capacity(R::TABLE.names.len()))
}

/// The parameters of `row`'s `(update R)` statement.
pub(crate) fn update_args<R: Columns>(row: &R) -> Vec<&dyn ToSql> {
    row.bind_update(Vec::with_capacity(R::TABLE.names.len()))
}

/// The `UPDATE` of the editable columns of `row` that differ from `before` (the row as
/// stored), and its parameters; `None` when none differs.
///
/// SQLite rewrites the entry of every index on a column an `UPDATE` sets, and fires every
/// `AFTER UPDATE OF` trigger naming one, whether its value changed or not: setting every
/// column of a device to rename it rewrote its four unique indexes and counted a peer
/// change no one needed to hear of. Setting only what changed writes a few pages, not ten.
pub(crate) fn narrow_update<'q, R: Columns>(row: &'q R, before: &R) -> Option<(String, Vec<&'q dyn ToSql>)> {
    let mut changed = Vec::new();
    let args = row.bind_changed(before, Vec::with_capacity(R::TABLE.names.len()), &mut changed);
    if changed.is_empty() {
        return None;
    }
    let set: Vec<String> = changed.iter().enumerate().map(|(i, name)| format!("{name} = ${}", i + 2)).collect();
    let key = R::TABLE.names[R::TABLE.key()];
    Some((format!("UPDATE {} SET {} WHERE {key} = $1", R::TABLE.name, set.join(", ")), args))
}

/// Where the columns named `names` are in a statement's results, found by name on the first
/// read. The indexes are kept with the statement's column count: a statement with another
/// count has its columns looked up again, on every read.
pub(crate) struct Layout {
    names: &'static [&'static str],
    found: OnceLock<(usize, Box<[usize]>)>,
}

impl Layout {
    pub(crate) const fn new(names: &'static [&'static str]) -> Self {
        Self { names, found: OnceLock::new() }
    }

    /// Reads an `R` whose columns are `self.names` from `row`.
    fn read<R: Columns>(&self, row: &Row<'_>) -> rusqlite::Result<R> {
        self.with(row, |src| R::read(src))
    }

    /// Reads an `R` from `row`, or `None` if its key column is NULL.
    fn read_optional<R: Columns>(&self, row: &Row<'_>) -> rusqlite::Result<Option<R>> {
        self.with(row, |src| R::read_optional(src))
    }

    fn with<T>(
        &self,
        row: &Row<'_>,
        read: impl FnOnce(&Located<'_, '_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let statement: &Statement<'_> = row.as_ref();
        let count = statement.column_count();
        if let Some((_, at)) = self.found.get().filter(|(n, _)| *n == count) {
            debug_assert!(
                self.names.iter().zip(at.iter()).all(|(name, &i)| statement.column_name(i).is_ok_and(|n| n == *name)),
                "a reader's statements differ in their columns"
            );
            return read(&Located { row, at });
        }
        let at =
            self.names.iter().map(|name| statement.column_index(name)).collect::<rusqlite::Result<Box<[usize]>>>()?;
        let value = read(&Located { row, at: &at });
        let _ = self.found.set((count, at));
        value
    }
}

/// A row, with the indexes of one row type's columns.
struct Located<'a, 'r> {
    row: &'a Row<'r>,
    at: &'a [usize],
}

impl Source for Located<'_, '_> {
    type Error = rusqlite::Error;

    fn get<T: Value>(&self, field: usize) -> rusqlite::Result<T> {
        self.row.get(self.at[field])
    }

    fn is_null(&self, field: usize) -> rusqlite::Result<bool> {
        Ok(self.row.get_ref(self.at[field])? == ValueRef::Null)
    }
}

/// The row of a statement built on `(select UserRow)`.
pub(crate) fn user(row: &Row<'_>) -> rusqlite::Result<UserRow> {
    static AT: Layout = Layout::new(UserRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::TOKEN_WITH_USER`].
pub(crate) fn token_with_user(row: &Row<'_>) -> rusqlite::Result<TokenUserRow> {
    static TOKEN: Layout = Layout::new(TokenRow::TABLE.aliased);
    static USER: Layout = Layout::new(UserRow::TABLE.aliased);
    Ok(TokenUserRow { token: TOKEN.read(row)?, user: USER.read(row)? })
}

/// A row of [`crate::sql::SESSION_WITH_USER`].
pub(crate) fn session_with_user(row: &Row<'_>) -> rusqlite::Result<SessionUserRow> {
    static SESSION: Layout = Layout::new(SessionRow::TABLE.aliased);
    static USER: Layout = Layout::new(UserRow::TABLE.aliased);
    Ok(SessionUserRow { session: SESSION.read(row)?, user: USER.read(row)? })
}

/// A row of [`crate::sql::users_page::USER_SESSIONS`].
pub(crate) fn session(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    static AT: Layout = Layout::new(SessionRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::users_page::list`]: a user and its device count.
pub(crate) fn listed_user(row: &Row<'_>) -> rusqlite::Result<(UserRow, i64)> {
    static AT: Layout = Layout::new(UserRow::TABLE.names);
    Ok((AT.read(row)?, row.get("device_count")?))
}

/// A row of [`crate::sql::TAKE_SIGN_IN_FLOW`].
pub(crate) fn sign_in_flow(row: &Row<'_>) -> rusqlite::Result<SignInFlowRow> {
    static AT: Layout = Layout::new(SignInFlowRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::LIST_TOKENS`].
pub(crate) fn token(row: &Row<'_>) -> rusqlite::Result<TokenRow> {
    static AT: Layout = Layout::new(TokenRow::TABLE.names);
    AT.read(row)
}

/// The row of a statement built on [`crate::sql::SELECT_DEVICES`].
pub(crate) fn device(row: &Row<'_>) -> rusqlite::Result<DeviceRow> {
    static AT: Layout = Layout::new(DeviceRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::TOKEN_AND_DEVICE`]: the token with its owner, and the device
/// when the join found one.
pub(crate) fn token_and_device(row: &Row<'_>) -> rusqlite::Result<(TokenUserRow, Option<DeviceRow>)> {
    static TOKEN: Layout = Layout::new(TokenRow::TABLE.aliased);
    static USER: Layout = Layout::new(UserRow::TABLE.aliased);
    static DEVICE: Layout = Layout::new(DeviceRow::TABLE.aliased);
    let token = TokenUserRow { token: TOKEN.read(row)?, user: USER.read(row)? };
    Ok((token, DEVICE.read_optional(row)?))
}

/// A row of [`crate::sql::ACTIVE_PEERS`].
pub(crate) fn active_peer(row: &Row<'_>) -> rusqlite::Result<ActivePeerRow> {
    static AT: Layout = Layout::new(ActivePeerRow::TABLE.aliased);
    AT.read(row)
}

/// A row of [`crate::sql::LIST_RULES`] or [`crate::sql::RULE_BY_ID`].
pub(crate) fn rule(row: &Row<'_>) -> rusqlite::Result<RuleRow> {
    static AT: Layout = Layout::new(RuleRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::RULE_SOURCES`].
pub(crate) fn rule_source(row: &Row<'_>) -> rusqlite::Result<RuleSourceRow> {
    static AT: Layout = Layout::new(RuleSourceRow::TABLE.aliased);
    AT.read(row)
}

/// A row of [`crate::sql::RULE_MEMBERSHIPS`].
pub(crate) fn rule_membership(row: &Row<'_>) -> rusqlite::Result<RuleMembershipRow> {
    static AT: Layout = Layout::new(RuleMembershipRow::TABLE.aliased);
    AT.read(row)
}

/// A row of [`crate::sql::LIST_OIDC_CONNECTIONS`].
pub(crate) fn oidc_connection(row: &Row<'_>) -> rusqlite::Result<OidcConnectionRow> {
    static AT: Layout = Layout::new(OidcConnectionRow::TABLE.names);
    AT.read(row)
}

/// A row of [`crate::sql::scim::USER`] and the SCIM user lists: a profile and its user.
pub(crate) fn scim_user(row: &Row<'_>) -> rusqlite::Result<crate::rows::ScimUserJoinRow> {
    static PROFILE: Layout = Layout::new(crate::rows::ScimUserRow::TABLE.aliased);
    static USER: Layout = Layout::new(UserRow::TABLE.aliased);
    Ok(crate::rows::ScimUserJoinRow { profile: PROFILE.read(row)?, user: USER.read(row)? })
}

/// A row of [`crate::sql::scim::every_user`]: the count's columns, then [`scim_user`]'s
/// (with layouts of their own: the statement has two columns more).
pub(crate) fn counted_scim_user(row: &Row<'_>) -> rusqlite::Result<((i64, i64), crate::rows::ScimUserJoinRow)> {
    static PROFILE: Layout = Layout::new(crate::rows::ScimUserRow::TABLE.aliased);
    static USER: Layout = Layout::new(UserRow::TABLE.aliased);
    let counted = (row.get("count_total")?, row.get("count_generation")?);
    Ok((counted, crate::rows::ScimUserJoinRow { profile: PROFILE.read(row)?, user: USER.read(row)? }))
}

/// A row of [`crate::sql::scim::PROFILE`].
pub(crate) fn scim_profile(row: &Row<'_>) -> rusqlite::Result<crate::rows::ScimUserRow> {
    static AT: Layout = Layout::new(crate::rows::ScimUserRow::TABLE.names);
    AT.read(row)
}

/// A row of the provisioning tokens' statements.
pub(crate) fn scim_token(row: &Row<'_>) -> rusqlite::Result<crate::rows::ScimTokenRow> {
    static AT: Layout = Layout::new(crate::rows::ScimTokenRow::TABLE.names);
    AT.read(row)
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    /// A statement that selects a sign-in flow's columns `names`, in that order, after
    /// another column: each value is its column's name (7 for the integer `expires_at`).
    fn select(names: &[&str]) -> String {
        let value = |name: &str| match name {
            "expires_at" => "7".to_owned(),
            "state_hash" | "sealed" => format!("CAST('{name}' AS BLOB)"),
            _ => format!("'{name}'"),
        };
        let columns: Vec<String> = names.iter().map(|n| format!("{} AS {n}", value(n))).collect();
        format!("SELECT 1 AS extra, {}", columns.join(", "))
    }

    fn flow(conn: &Connection, layout: &Layout, names: &[&str]) -> SignInFlowRow {
        conn.query_row(&select(names), [], |row| layout.read::<SignInFlowRow>(row)).unwrap()
    }

    #[test]
    fn columns_are_read_by_name_whatever_their_order() {
        let conn = Connection::open_in_memory().unwrap();
        let layout = Layout::new(SignInFlowRow::TABLE.names);
        let mut names = SignInFlowRow::TABLE.names.to_vec();
        names.reverse();
        let row = flow(&conn, &layout, &names);
        assert_eq!(row.state_hash, b"state_hash");
        assert_eq!((row.provider_id.as_str(), row.return_to.as_str(), row.expires_at), ("provider_id", "return_to", 7));
        // The indexes it keeps serve the next row of the same statement.
        assert_eq!(flow(&conn, &layout, &names).sealed, b"sealed");
    }

    #[test]
    fn a_statement_with_other_columns_is_looked_up_again() {
        let conn = Connection::open_in_memory().unwrap();
        let layout = Layout::new(SignInFlowRow::TABLE.names);
        let names = SignInFlowRow::TABLE.names.to_vec();
        assert_eq!(flow(&conn, &layout, &names).provider_id, "provider_id");
        let sql = format!("{}, 'more' AS more", select(&names));
        let row = conn.query_row(&sql, [], |row| layout.read::<SignInFlowRow>(row)).unwrap();
        assert_eq!((row.return_to.as_str(), row.expires_at), ("return_to", 7));
    }

    #[test]
    fn a_missing_column_is_an_error_naming_it() {
        let conn = Connection::open_in_memory().unwrap();
        let layout = Layout::new(SignInFlowRow::TABLE.names);
        let err = conn.query_row("SELECT 1 AS state_hash", [], |row| layout.read::<SignInFlowRow>(row)).unwrap_err();
        assert!(matches!(&err, rusqlite::Error::InvalidColumnName(name) if name == "provider_id"), "{err:?}");
    }

    #[test]
    fn a_null_key_reads_as_no_row() {
        let conn = Connection::open_in_memory().unwrap();
        let layout = Layout::new(SignInFlowRow::TABLE.names);
        let sql = select(SignInFlowRow::TABLE.names).replace("CAST('state_hash' AS BLOB)", "NULL");
        let row = conn.query_row(&sql, [], |row| layout.read_optional::<SignInFlowRow>(row)).unwrap();
        assert!(row.is_none());
    }
}
