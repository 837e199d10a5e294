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
/// `$n` placeholders, which SQLite reads as names; `?n` binds by number.
pub(crate) fn prepare<'c>(conn: &'c Connection, statement: &str) -> rusqlite::Result<CachedStatement<'c>> {
    conn.prepare_cached(&statement.replace('$', "?"))
}
