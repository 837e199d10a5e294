//! The sqlx side of [`crate::columns`]: rows read by column name (sqlx keeps each
//! statement's names in a map), parameters bound in the order the row declarations give.

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{Postgres, Row, ValueRef};

use crate::columns::{Binder, Columns, Source, Value};
use crate::rows::{DeviceRow, SessionUserRow, TokenUserRow};

impl<'q> Binder<'q> for Query<'q, Postgres, PgArguments> {
    fn bind<T: Value>(self, value: &'q T) -> Self {
        Query::bind(self, value)
    }
}

/// A row, seen through the columns `names` of one row type.
struct Named<'a> {
    row: &'a PgRow,
    names: &'static [&'static str],
}

impl Source for Named<'_> {
    type Error = sqlx::Error;

    fn get<T: Value>(&self, field: usize) -> sqlx::Result<T> {
        self.row.try_get(self.names[field])
    }

    fn is_null(&self, field: usize) -> sqlx::Result<bool> {
        Ok(self.row.try_get_raw(self.names[field])?.is_null())
    }
}

/// An `R` from its columns under their own names (`id`).
pub(super) fn read<R: Columns>(row: &PgRow) -> sqlx::Result<R> {
    R::read(&Named { row, names: R::TABLE.names })
}

/// An `R` from [`read`] of a row taken by value, for `try_map`.
pub(super) fn from_row<R: Columns>(row: PgRow) -> sqlx::Result<R> {
    read(&row)
}

/// An `R` from its columns as joins select them (`d_id`).
pub(super) fn read_aliased<R: Columns>(row: &PgRow) -> sqlx::Result<R> {
    R::read(&Named { row, names: R::TABLE.aliased })
}

/// [`read_aliased`], or `None` when the outer join found no row.
pub(super) fn read_aliased_optional<R: Columns>(row: &PgRow) -> sqlx::Result<Option<R>> {
    R::read_optional(&Named { row, names: R::TABLE.aliased })
}

/// A row of [`crate::sql::TOKEN_WITH_USER`].
pub(super) fn token_with_user(row: PgRow) -> sqlx::Result<TokenUserRow> {
    Ok(TokenUserRow { token: read_aliased(&row)?, user: read_aliased(&row)? })
}

/// A row of [`crate::sql::SESSION_WITH_USER`].
pub(super) fn session_with_user(row: PgRow) -> sqlx::Result<SessionUserRow> {
    Ok(SessionUserRow { session: read_aliased(&row)?, user: read_aliased(&row)? })
}

/// The token, its owner and the device (if the outer join found one) of a row that selects
/// all three aliased (`TOKEN_AND_DEVICE` and its batch form).
pub(super) fn token_and_device(row: &PgRow) -> sqlx::Result<(TokenUserRow, Option<DeviceRow>)> {
    let token = TokenUserRow { token: read_aliased(row)?, user: read_aliased(row)? };
    Ok((token, read_aliased_optional(row)?))
}
