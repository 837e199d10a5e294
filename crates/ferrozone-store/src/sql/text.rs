//! Statement text assembled at compile time from the column lists of [`crate::columns`].
//!
//! [`sql!`] joins literal text and lists derived from a row type into one `&'static str`
//! constant, so no statement is built at run time:
//!
//! ```text
//! const DEVICE_BY_ID: &str = sql![(select DeviceRow), " WHERE id = $1"];
//! const INSERT_DEVICE: &str = sql![(insert DeviceRow)];
//! ```
//!
//! The parts, for a row type `R` of table `t` (alias `a`):
//!
//! | part | text |
//! |---|---|
//! | `"…"` | the literal |
//! | `(columns R)` | `c1, c2, …` |
//! | `(aliased R)` | `a.c1 AS a_c1, a.c2 AS a_c2, …` |
//! | `(select R)` | `SELECT c1, c2, … FROM t` |
//! | `(insert R)` | `INSERT INTO t (c1, c2, …) VALUES ($1, $2, …)` |
//! | `(update R)` | `UPDATE t SET e1 = $2, e2 = $3, … WHERE key = $1` (the `[edit]` columns) |
//! | `(excluded R)` | `e1 = excluded.e1, …` (the `[edit]` columns, for an upsert) |
//! | `(after R k)` | the placeholder `k` places after the `insert`'s last: `$<columns + k>` |
//! | `(after R k..=m)` | those from `k` to `m` places after it: `$<columns + k>, …, $<columns + m>` |
//! | `(join R)` | ` LEFT JOIN j s ON s.k = a.k`, the join of the `[joined]` columns |
//!
//! A row type with `[joined]` columns reads them through its join: `select` qualifies every
//! column and joins, `aliased` takes them from the join's alias (the statement writes the
//! `(join R)` after its `FROM`), and `columns`, the list of a `RETURNING`, has them `NULL`.
//! The `INSERT` leaves them out.

use crate::columns::{Role, Table};

/// One piece of a statement; see the module documentation.
#[derive(Debug)]
pub(crate) enum Part {
    Text(&'static str),
    Columns(&'static Table),
    Aliased(&'static Table),
    Select(&'static Table),
    Insert(&'static Table),
    Update(&'static Table),
    Excluded(&'static Table),
    After(&'static Table, usize, usize),
    Join(&'static Table),
}

/// Statement text being written into `N` bytes. With `N = 0` it only counts: [`sql!`]
/// builds each statement twice, once to learn its length and once to write it.
pub(crate) struct Text<const N: usize> {
    pub bytes: [u8; N],
    pub len: usize,
}

impl<const N: usize> Text<N> {
    /// The text of `parts`.
    pub(crate) const fn of(parts: &[Part]) -> Self {
        let mut text = Self { bytes: [0; N], len: 0 };
        let mut i = 0;
        while i < parts.len() {
            text = text.part(&parts[i]);
            i += 1;
        }
        text
    }

    const fn part(self, part: &Part) -> Self {
        match *part {
            Part::Text(s) => self.push(s),
            Part::Columns(t) => self.returning(t),
            Part::Aliased(t) => self.aliased(t),
            Part::Select(t) => self.select(t),
            Part::Insert(t) => self.insert(t),
            Part::Update(t) => self.update(t),
            Part::Excluded(t) => self.excluded(t),
            Part::After(t, first, last) => self.placeholders(t.own_count() + first, t.own_count() + last),
            Part::Join(t) => self.join(t),
        }
    }

    const fn push(mut self, s: &str) -> Self {
        let s = s.as_bytes();
        let mut i = 0;
        while i < s.len() {
            if N > 0 {
                self.bytes[self.len] = s[i];
            }
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn number(self, n: usize) -> Self {
        let text = if n >= 10 { self.number(n / 10) } else { self };
        let digit = [b'0' + (n % 10) as u8];
        match std::str::from_utf8(&digit) {
            Ok(digit) => text.push(digit),
            Err(_) => panic!("not a digit"),
        }
    }

    /// `$first, …, $last`.
    const fn placeholders(mut self, first: usize, last: usize) -> Self {
        let mut n = first;
        while n <= last {
            if n > first {
                self = self.push(", ");
            }
            self = self.push("$").number(n);
            n += 1;
        }
        self
    }

    const fn list(mut self, names: &[&str], separator: &str) -> Self {
        let mut i = 0;
        while i < names.len() {
            if i > 0 {
                self = self.push(separator);
            }
            self = self.push(names[i]);
            i += 1;
        }
        self
    }

    /// The alias column `i` is read from: the table's, or its join's.
    const fn source(t: &Table, i: usize) -> &'static str {
        match (&t.join, t.is_own(i)) {
            (Some(join), false) => join.alias,
            _ => t.alias,
        }
    }

    const fn aliased(mut self, t: &Table) -> Self {
        let mut i = 0;
        while i < t.names.len() {
            if i > 0 {
                self = self.push(", ");
            }
            self = self.push(Self::source(t, i)).push(".").push(t.names[i]).push(" AS ").push(t.aliased[i]);
            i += 1;
        }
        self
    }

    const fn select(mut self, t: &Table) -> Self {
        if t.join.is_none() {
            return self.push("SELECT ").list(t.names, ", ").push(" FROM ").push(t.name);
        }
        self = self.push("SELECT ");
        let mut i = 0;
        while i < t.names.len() {
            if i > 0 {
                self = self.push(", ");
            }
            self = self.push(Self::source(t, i)).push(".").push(t.names[i]).push(" AS ").push(t.names[i]);
            i += 1;
        }
        self.push(" FROM ").push(t.name).push(" ").push(t.alias).join(t)
    }

    const fn join(self, t: &Table) -> Self {
        let Some(join) = &t.join else { panic!("a table without a join") };
        let text = self.push(" LEFT JOIN ").push(join.table).push(" ").push(join.alias);
        text.push(" ON ").push(join.alias).push(".").push(join.on).push(" = ").push(t.alias).push(".").push(join.on)
    }

    /// A `RETURNING` list: a statement on the table alone has no joined values.
    const fn returning(mut self, t: &Table) -> Self {
        let mut i = 0;
        while i < t.names.len() {
            if i > 0 {
                self = self.push(", ");
            }
            if !t.is_own(i) {
                self = self.push("NULL AS ");
            }
            self = self.push(t.names[i]);
            i += 1;
        }
        self
    }

    const fn insert(mut self, t: &Table) -> Self {
        self = self.push("INSERT INTO ").push(t.name).push(" (");
        let (mut i, mut n) = (0, 0);
        while i < t.names.len() {
            if t.is_own(i) {
                if n > 0 {
                    self = self.push(", ");
                }
                n += 1;
                self = self.push(t.names[i]);
            }
            i += 1;
        }
        self = self.push(") VALUES (");
        let mut i = 0;
        while i < n {
            if i > 0 {
                self = self.push(", ");
            }
            self = self.push("$").number(i + 1);
            i += 1;
        }
        self.push(")")
    }

    /// The `[edit]` columns get `$2`, `$3`, … in order; the key is `$1`.
    const fn update(mut self, t: &Table) -> Self {
        self = self.push("UPDATE ").push(t.name).push(" SET ");
        let (mut i, mut n) = (0, 1);
        while i < t.names.len() {
            if matches!(t.roles[i], Role::Edit) {
                n += 1;
                if n > 2 {
                    self = self.push(", ");
                }
                self = self.push(t.names[i]).push(" = $").number(n);
            }
            i += 1;
        }
        self.push(" WHERE ").push(t.names[t.key()]).push(" = $1")
    }

    const fn excluded(mut self, t: &Table) -> Self {
        let (mut i, mut first) = (0, true);
        while i < t.names.len() {
            if matches!(t.roles[i], Role::Edit) {
                if !first {
                    self = self.push(", ");
                }
                first = false;
                self = self.push(t.names[i]).push(" = excluded.").push(t.names[i]);
            }
            i += 1;
        }
        self
    }
}

/// One [`Part`] of [`sql!`].
macro_rules! part {
    ($text:literal) => {
        $crate::sql::text::Part::Text($text)
    };
    ((columns $row:ty)) => {
        $crate::sql::text::Part::Columns(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((aliased $row:ty)) => {
        $crate::sql::text::Part::Aliased(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((select $row:ty)) => {
        $crate::sql::text::Part::Select(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((insert $row:ty)) => {
        $crate::sql::text::Part::Insert(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((update $row:ty)) => {
        $crate::sql::text::Part::Update(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((excluded $row:ty)) => {
        $crate::sql::text::Part::Excluded(&<$row as $crate::columns::Columns>::TABLE)
    };
    ((after $row:ty, $k:literal)) => {
        $crate::sql::text::Part::After(&<$row as $crate::columns::Columns>::TABLE, $k, $k)
    };
    ((after $row:ty, $k:literal ..= $m:literal)) => {
        $crate::sql::text::Part::After(&<$row as $crate::columns::Columns>::TABLE, $k, $m)
    };
    ((join $row:ty)) => {
        $crate::sql::text::Part::Join(&<$row as $crate::columns::Columns>::TABLE)
    };
}

/// A statement's text from its parts (see the module documentation), as a constant.
macro_rules! sql {
    ($($part:tt),+ $(,)?) => {{
        const PARTS: &[$crate::sql::text::Part] = &[$($crate::sql::text::part!($part)),+];
        const LEN: usize = $crate::sql::text::Text::<0>::of(PARTS).len;
        const BYTES: [u8; LEN] = $crate::sql::text::Text::<LEN>::of(PARTS).bytes;
        match ::std::str::from_utf8(&BYTES) {
            Ok(text) => text,
            Err(_) => panic!("statement text is not UTF-8"),
        }
    }};
}

pub(crate) use {part, sql};

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use crate::columns::columns;

    columns! {
        /// A table for the tests.
        struct PetRow in "pets" as "p" {
            id: Uuid [key],
            name: String [edit],
            born_at: i64,
            updated_at: i64 [edit],
        }
    }

    #[test]
    fn every_part_derives_from_the_declaration() {
        assert_eq!(
            sql![(select PetRow), " WHERE id = $1"],
            "SELECT id, name, born_at, updated_at FROM pets WHERE id = $1"
        );
        assert_eq!(
            sql!["SELECT ", (aliased PetRow), " FROM pets p"],
            "SELECT p.id AS p_id, p.name AS p_name, p.born_at AS p_born_at, p.updated_at AS p_updated_at FROM pets p"
        );
        assert_eq!(sql![(insert PetRow)], "INSERT INTO pets (id, name, born_at, updated_at) VALUES ($1, $2, $3, $4)");
        assert_eq!(sql![(update PetRow)], "UPDATE pets SET name = $2, updated_at = $3 WHERE id = $1");
        assert_eq!(sql![(excluded PetRow)], "name = excluded.name, updated_at = excluded.updated_at");
        assert_eq!(sql!["(", (columns PetRow), ") ", (after PetRow, 1)], "(id, name, born_at, updated_at) $5");
    }

    #[test]
    fn joined_columns_are_read_through_the_join_and_never_written() {
        columns! {
            struct PlantRow in "plants" as "p" join "plant_care" as "c" on "tag" {
                id: i64 [key],
                tag: String [edit],
                watered_at: Option<i64> [joined],
                born_at: i64,
            }
        }
        assert_eq!(
            sql![(select PlantRow), " WHERE id = $1"],
            "SELECT p.id AS id, p.tag AS tag, c.watered_at AS watered_at, p.born_at AS born_at \
             FROM plants p LEFT JOIN plant_care c ON c.tag = p.tag WHERE id = $1"
        );
        assert_eq!(
            sql!["SELECT ", (aliased PlantRow), " FROM x LEFT JOIN plants p ON p.id = x.id", (join PlantRow)],
            "SELECT p.id AS p_id, p.tag AS p_tag, c.watered_at AS p_watered_at, p.born_at AS p_born_at \
             FROM x LEFT JOIN plants p ON p.id = x.id LEFT JOIN plant_care c ON c.tag = p.tag"
        );
        assert_eq!(sql![(insert PlantRow)], "INSERT INTO plants (id, tag, born_at) VALUES ($1, $2, $3)");
        assert_eq!(sql![(after PlantRow, 1)], "$4");
        assert_eq!(sql![(after PlantRow, 2..=4)], "$5, $6, $7");
        assert_eq!(sql![(update PlantRow)], "UPDATE plants SET tag = $2 WHERE id = $1");
        assert_eq!(sql![(columns PlantRow)], "id, tag, NULL AS watered_at, born_at");
    }

    #[test]
    fn placeholders_count_past_nine() {
        columns! {
            struct WideRow in "wide" as "w" {
                c1: i64 [key], c2: i64, c3: i64, c4: i64, c5: i64, c6: i64,
                c7: i64, c8: i64, c9: i64, c10: i64 [edit], c11: i64 [edit],
            }
        }
        assert!(sql![(insert WideRow)].ends_with("$9, $10, $11)"));
        assert_eq!(sql![(update WideRow)], "UPDATE wide SET c10 = $2, c11 = $3 WHERE c1 = $1");
        assert_eq!(sql![(after WideRow, 2)], "$13");
    }
}
