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
    ActivePeerRow, DeviceRow, OidcConnectionRow, SessionRow, SessionUserRow, SignInFlowRow, TokenRow, TokenUserRow,
    UserRow,
};

impl<'q> Binder<'q> for Vec<&'q dyn ToSql> {
    fn bind<T: Value>(mut self, value: &'q T) -> Self {
        self.push(value);
        self
    }
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

/// A row of [`crate::sql::LIST_OIDC_CONNECTIONS`].
pub(crate) fn oidc_connection(row: &Row<'_>) -> rusqlite::Result<OidcConnectionRow> {
    static AT: Layout = Layout::new(OidcConnectionRow::TABLE.names);
    AT.read(row)
}
