//! One definition per row type, from which every column list, bind and read derives.
//!
//! [`columns!`] declares a row struct together with its table and, in order, its columns;
//! each column is the struct field of the same name. From that one list come:
//!
//! - the statement text ([`crate::sql::text`]): `SELECT` lists (plain or as `d.id AS d_id`),
//!   the `INSERT` column list and its placeholders, the `UPDATE … SET` list;
//! - the binds, through [`Binder`]: every column in order for an `INSERT`
//!   ([`Columns::bind_insert`]), the key then the editable columns for an `UPDATE`
//!   ([`Columns::bind_update`]); each backend implements [`Binder`] for its driver;
//! - the read, through [`Source`], which each backend implements to find a column **by
//!   name** (sqlx looks names up in its statement metadata; SQLite through column indexes
//!   looked up by name once per statement, see `sqlite/rows.rs`).
//!
//! Adding a column is one line here (plus the migrations and the conversion to the model in
//! [`crate::rows`]): nothing else is coupled to the column order.

use sqlx::Postgres;

/// What part a column plays in the generated `INSERT` and `UPDATE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The row's key: `WHERE <key> = $1` of the `UPDATE`.
    Key,
    /// Written by the `UPDATE` as well as the `INSERT`.
    Edit,
    /// Written by the `INSERT` only.
    Fixed,
    /// Read through the table's [`Join`], never written by the row's `INSERT` or `UPDATE`.
    Joined,
}

/// A table left-joined to every read of a row type, by a column of the same name in both:
/// a device's statistics live in a table of their own (`device_stats`, see its migration),
/// read with the device.
#[derive(Debug)]
pub(crate) struct Join {
    pub table: &'static str,
    pub alias: &'static str,
    pub on: &'static str,
}

/// A table's columns, in declaration order, as the statement text uses them.
#[derive(Debug)]
pub(crate) struct Table {
    /// The table's name.
    pub name: &'static str,
    /// The table's alias in joins; aliased columns are `<alias>_<column>`.
    pub alias: &'static str,
    /// The column names.
    pub names: &'static [&'static str],
    /// The column names as joins select them: `<alias>_<column>`.
    pub aliased: &'static [&'static str],
    /// Each column's [`Role`].
    pub roles: &'static [Role],
    /// The table the `[joined]` columns come from.
    pub join: Option<Join>,
}

impl Table {
    /// The position of the key column. Panics for a table declared without one (at compile
    /// time for the statements of [`crate::sql::text`] that need it).
    pub(crate) const fn key(&self) -> usize {
        let mut i = 0;
        while i < self.roles.len() {
            if matches!(self.roles[i], Role::Key) {
                return i;
            }
            i += 1;
        }
        panic!("a table without a key column");
    }

    /// Whether column `i` is the row's own (an `INSERT` writes it), not a joined one.
    pub(crate) const fn is_own(&self, i: usize) -> bool {
        !matches!(self.roles[i], Role::Joined)
    }

    /// How many columns an `INSERT` writes.
    pub(crate) const fn own_count(&self) -> usize {
        let (mut i, mut n) = (0, 0);
        while i < self.roles.len() {
            if self.is_own(i) {
                n += 1;
            }
            i += 1;
        }
        n
    }

    /// The names of the columns an `INSERT` writes, in order.
    pub(crate) fn own_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names.iter().enumerate().filter(|(i, _)| self.is_own(*i)).map(|(_, name)| *name)
    }
}

/// A column's Rust type: one that both drivers encode and decode the same way.
pub(crate) trait Value:
    rusqlite::ToSql
    + rusqlite::types::FromSql
    + for<'r> sqlx::Decode<'r, Postgres>
    + for<'q> sqlx::Encode<'q, Postgres>
    + sqlx::Type<Postgres>
    + Send
    + Sync
{
}

impl<T> Value for T where
    T: rusqlite::ToSql
        + rusqlite::types::FromSql
        + for<'r> sqlx::Decode<'r, Postgres>
        + for<'q> sqlx::Encode<'q, Postgres>
        + sqlx::Type<Postgres>
        + Send
        + Sync
{
}

/// A driver's result row, seen through the columns of one row type: `field` is the position
/// of a column in that type's declaration, which the backend maps to a column by name.
pub(crate) trait Source {
    type Error;
    /// The value of the row type's column `field`.
    fn get<T: Value>(&self, field: usize) -> Result<T, Self::Error>;
    /// Whether column `field` is NULL (an outer join that found no row).
    fn is_null(&self, field: usize) -> Result<bool, Self::Error>;
}

/// A driver's statement parameters, bound one after the other (`$1`, `$2`, …).
pub(crate) trait Binder<'q> {
    fn bind<T: Value>(self, value: &'q T) -> Self;
}

/// A row type declared with [`columns!`].
pub(crate) trait Columns: Sized {
    /// Its table and columns.
    const TABLE: Table;
    /// Reads the row from `src`.
    fn read<S: Source>(src: &S) -> Result<Self, S::Error>;
    /// Binds the row's own columns, in order: the parameters of [`crate::sql::text`]'s `insert`.
    fn bind_insert<'q, B: Binder<'q>>(&'q self, binder: B) -> B;
    /// Binds the key, then the editable columns: the parameters of `update`.
    fn bind_update<'q, B: Binder<'q>>(&'q self, binder: B) -> B;
    /// Binds the key, then the editable columns whose value differs from `before`'s, and
    /// names those in `changed`: the parameters of an `UPDATE` that sets only what changed.
    fn bind_changed<'q, B: Binder<'q>>(&'q self, before: &Self, binder: B, changed: &mut Vec<&'static str>) -> B;

    /// Reads the row, or `None` when its key is NULL (an outer join that found none). For
    /// tables declared with a `[key]`.
    fn read_optional<S: Source>(src: &S) -> Result<Option<Self>, S::Error> {
        if src.is_null(Self::TABLE.key())? {
            return Ok(None);
        }
        Self::read(src).map(Some)
    }
}

/// `[0, 1, …, N - 1]`: the field positions of a row type of `N` columns.
pub(crate) const fn positions<const N: usize>() -> [usize; N] {
    let mut all = [0; N];
    let mut i = 0;
    while i < N {
        all[i] = i;
        i += 1;
    }
    all
}

/// The [`Role`] of a column as [`columns!`] marks it: `[key]`, `[edit]`, `[joined]` or nothing.
macro_rules! role {
    () => {
        $crate::columns::Role::Fixed
    };
    (key) => {
        $crate::columns::Role::Key
    };
    (edit) => {
        $crate::columns::Role::Edit
    };
    (joined) => {
        $crate::columns::Role::Joined
    };
}

/// Declares a row struct and implements [`Columns`] for it:
///
/// ```text
/// columns! {
///     /// A `users` row.
///     pub(crate) struct UserRow in "users" as "u" {
///         id: Uuid [key],
///         email: String [edit],
///         inserted_at: i64,
///     }
/// }
/// ```
///
/// Fields are the columns, in the order of every generated list; `[key]` marks the column
/// an `UPDATE` finds the row by, `[edit]` the columns it writes, `[joined]` those read from
/// the table named by `join "<table>" as "<alias>" on "<column>"` after the alias.
macro_rules! columns {
    (
        $(#[$meta:meta])*
        $vis:vis struct $row:ident in $table:literal as $alias:literal
            $(join $jtable:literal as $jalias:literal on $jon:literal)? {
            $( $field:ident : $ty:ty $([$role:ident])? ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        $vis struct $row {
            $( pub $field: $ty, )+
        }

        impl $row {
            /// How many columns the row has.
            const COUNT: usize = [$(stringify!($field)),+].len();
        }

        impl $crate::columns::Columns for $row {
            const TABLE: $crate::columns::Table = $crate::columns::Table {
                name: $table,
                alias: $alias,
                names: &[$(stringify!($field)),+],
                aliased: &[$(concat!($alias, "_", stringify!($field))),+],
                roles: &[$($crate::columns::role!($($role)?)),+],
                join: $crate::columns::join!($($jtable, $jalias, $jon)?),
            };

            fn read<S: $crate::columns::Source>(src: &S) -> Result<Self, S::Error> {
                let [$($field),+] = $crate::columns::positions::<{ $row::COUNT }>();
                Ok(Self { $( $field: src.get($field)?, )+ })
            }

            fn bind_insert<'q, B: $crate::columns::Binder<'q>>(&'q self, binder: B) -> B {
                use $crate::columns::Role;
                let mut binder = binder;
                $( if $crate::columns::role!($($role)?) != Role::Joined { binder = binder.bind(&self.$field); } )+
                binder
            }

            fn bind_update<'q, B: $crate::columns::Binder<'q>>(&'q self, binder: B) -> B {
                use $crate::columns::Role;
                let mut binder = binder;
                $( if $crate::columns::role!($($role)?) == Role::Key { binder = binder.bind(&self.$field); } )+
                $( if $crate::columns::role!($($role)?) == Role::Edit { binder = binder.bind(&self.$field); } )+
                binder
            }

            fn bind_changed<'q, B: $crate::columns::Binder<'q>>(
                &'q self,
                before: &Self,
                binder: B,
                changed: &mut Vec<&'static str>,
            ) -> B {
                use $crate::columns::Role;
                let mut binder = binder;
                $( if $crate::columns::role!($($role)?) == Role::Key { binder = binder.bind(&self.$field); } )+
                $(
                    if $crate::columns::role!($($role)?) == Role::Edit && self.$field != before.$field {
                        changed.push(stringify!($field));
                        binder = binder.bind(&self.$field);
                    }
                )+
                binder
            }
        }
    };
}

/// The [`Join`] of [`columns!`]'s optional `join … as … on …`.
macro_rules! join {
    () => {
        None
    };
    ($table:literal, $alias:literal, $on:literal) => {
        Some($crate::columns::Join { table: $table, alias: $alias, on: $on })
    };
}

pub(crate) use {columns, join, role};

#[cfg(test)]
mod tests {
    use rusqlite::types::{ToSqlOutput, Value as Owned};
    use rusqlite::ToSql;

    use super::*;

    columns! {
        /// A table for the tests.
        struct PetRow in "pets" as "p" {
            name: String [edit],
            id: i64 [key],
            born_at: i64,
            updated_at: i64 [edit],
        }
    }

    fn values(bound: Vec<&dyn ToSql>) -> Vec<Owned> {
        let owned = |v: &dyn ToSql| match v.to_sql().unwrap() {
            ToSqlOutput::Owned(v) => v,
            ToSqlOutput::Borrowed(v) => v.into(),
            other => panic!("{other:?}"),
        };
        bound.into_iter().map(owned).collect()
    }

    #[test]
    fn an_insert_binds_every_column_in_order_an_update_the_key_then_the_edits() {
        let pet = PetRow { name: "rex".into(), id: 1, born_at: 2, updated_at: 3 };
        let name = Owned::Text("rex".into());
        let insert = values(pet.bind_insert(Vec::new()));
        assert_eq!(insert, [name.clone(), Owned::Integer(1), Owned::Integer(2), Owned::Integer(3)]);
        assert_eq!(values(pet.bind_update(Vec::new())), [Owned::Integer(1), name, Owned::Integer(3)]);
        assert_eq!(PetRow::TABLE.key(), 1);
    }

    #[test]
    fn a_narrow_update_binds_the_key_then_the_edits_that_differ() {
        let before = PetRow { name: "rex".into(), id: 1, born_at: 2, updated_at: 3 };
        let after = PetRow { name: "rex".into(), id: 1, born_at: 9, updated_at: 4 };
        let mut changed = Vec::new();
        let bound = values(after.bind_changed(&before, Vec::new(), &mut changed));
        assert_eq!(changed, ["updated_at"], "a fixed column is never written, an equal edit neither");
        assert_eq!(bound, [Owned::Integer(1), Owned::Integer(4)]);
        assert_eq!(PetRow::TABLE.aliased, ["p_name", "p_id", "p_born_at", "p_updated_at"]);
    }
}
