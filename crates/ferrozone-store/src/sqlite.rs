//! The SQLite backend: one file in WAL mode.
//!
//! Writes go through a pool of exactly one connection, so they queue in-process instead of
//! fighting over the file lock, and every write transaction starts with `BEGIN IMMEDIATE`:
//! it holds the write lock from its first statement, so a second process on the same file
//! waits (`busy_timeout`) instead of failing with `SQLITE_BUSY_SNAPSHOT` halfway through.
//! Reads use a separate pool and, thanks to WAL, never wait for writers.
//! Row locks are not needed: a write transaction holds the whole database.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous};
use sqlx::Sqlite;

use crate::backend::{Dialect, SqlStore};
use crate::{sql, StoreOptions, Synchronous};

/// The embedded SQLite migration history.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// How long a statement waits for another process's write lock before `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The [`ferrozone_domain::Store`] on an SQLite database.
pub type SqliteStore = SqlStore<Sqlite>;

impl Dialect for Sqlite {
    const BEGIN_WRITE: Option<&'static str> = Some("BEGIN IMMEDIATE");
    const LOCK_USER: &'static str = sql::USER_BY_ID;
    const LOCK_ADMINS: &'static str = sql::ADMIN_IDS;
    const LOCK_DEVICE: &'static str = sql::DEVICE_BY_ID;
    const LOCK_POOL: &'static str = sql::POOL_OFFSET;
    const POP_RELEASED: &'static str = sql::POP_RELEASED;

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

impl SqlStore<Sqlite> {
    /// Opens (creating if missing, with its parent directories) the database at `url`:
    /// `sqlite://relative/path.db`, `sqlite:///absolute/path.db` or `sqlite::memory:`.
    pub async fn connect(url: &str, options: &StoreOptions) -> anyhow::Result<Self> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let connect = SqliteConnectOptions::from_str(url)
            .with_context(|| format!("invalid SQLite database URL {url}"))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT)
            .synchronous(match options.synchronous {
                Synchronous::Full => SqliteSynchronous::Full,
                Synchronous::Normal => SqliteSynchronous::Normal,
            });
        if !in_memory {
            create_parent_dir(connect.get_filename())?;
        }
        // Connecting eagerly creates the file and switches it to WAL before any reader opens it.
        let mut write = SqlitePoolOptions::new().max_connections(1).acquire_timeout(options.acquire_timeout);
        if in_memory {
            // The database lives as long as its one connection: never recycle it.
            write = write.min_connections(1).idle_timeout(None).max_lifetime(None);
        }
        let write = write
            .connect_with(connect.clone())
            .await
            .with_context(|| format!("cannot open the SQLite database {url}"))?;
        // An in-memory database lives on its one connection: reads must share it.
        let read = if in_memory {
            write.clone()
        } else {
            SqlitePoolOptions::new()
                .max_connections(options.max_connections.max(1))
                .acquire_timeout(options.acquire_timeout)
                .connect_lazy_with(connect)
        };
        Ok(Self { read, write })
    }

    /// Applies the pending migrations.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        MIGRATOR.run(&self.write).await.context("cannot migrate the SQLite database")
    }
}

fn create_parent_dir(file: &Path) -> anyhow::Result<()> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the database directory {}", dir.display())),
        _ => Ok(()),
    }
}
