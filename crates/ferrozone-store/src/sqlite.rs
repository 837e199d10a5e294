//! The SQLite backend: one file in WAL mode, driven through rusqlite.
//!
//! - Writes go to one writer thread ([`writer`]) that owns the only writing connection and
//!   commits queued writes together: one fsync per batch, every answer after its commit.
//!   Its transactions begin with `BEGIN IMMEDIATE`, so another process on the same file
//!   (the CLI) waits for the write lock (`busy_timeout`) instead of failing halfway.
//! - Reads run on the calling thread, on a pooled read-only connection: a point read is a
//!   few microseconds of SQLite, with no hand-off to another thread. Thanks to WAL they never
//!   wait for the writer. Reads of unbounded size (lists) move to a blocking thread. The
//!   hot read of an authenticated `GET` of one device goes to a reader task instead, which
//!   answers the ones waiting at one moment in one read transaction ([`crate::coalesce`]).
//!
//! Row locks are not needed: a write transaction holds the whole database.

mod audit;
pub mod backup;
mod conn;
mod errors;
mod migrate;
mod point_reads;
mod rows;
mod store;
mod tx;
mod writer;

use rusqlite::{CachedStatement, Connection};

use self::store::Inner;

pub use self::migrate::{Migration, MIGRATIONS};
pub use self::store::SqliteStore;

/// Prepares (or takes from the connection's cache) `statement`, written with the shared
/// `$n` placeholders, which SQLite reads as names; `?n` binds by number. The text SQLite
/// reads is made once per statement of the program ([`sqlite_text`]).
pub(crate) fn prepare<'c>(conn: &'c Connection, statement: &'static str) -> rusqlite::Result<CachedStatement<'c>> {
    conn.prepare_cached(sqlite_text(statement))
}

/// [`prepare`] for a statement built at run time: its text is rewritten on every call.
pub(crate) fn prepare_built<'c>(conn: &'c Connection, statement: &str) -> rusqlite::Result<CachedStatement<'c>> {
    conn.prepare_cached(&statement.replace('$', "?"))
}

/// `statement` with `?n` placeholders, rewritten on its first use and kept: a point read's
/// statement is a kilobyte, and rewriting it cost every read an allocation and a copy. The
/// program's statements are constants, so what is kept is bounded; each is found by its
/// address and length, which no other text shares while the program runs.
fn sqlite_text(statement: &'static str) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{LazyLock, PoisonError, RwLock};
    static REWRITTEN: LazyLock<RwLock<HashMap<(usize, usize), &'static str>>> = LazyLock::new(Default::default);
    let key = (statement.as_ptr() as usize, statement.len());
    if let Some(text) = REWRITTEN.read().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return text;
    }
    let mut rewritten = REWRITTEN.write().unwrap_or_else(PoisonError::into_inner);
    rewritten.entry(key).or_insert_with(|| match statement.contains('$') {
        true => Box::leak(statement.replace('$', "?").into_boxed_str()),
        false => statement,
    })
}
