//! Ferrozone's storage: the domain's [`Store`] trait implemented for SQLite and PostgreSQL.
//!
//! The backend is chosen at run time by the URL scheme (`sqlite://…` or `postgres://…`), so
//! one binary serves both. Each backend has its own migration history, embedded in the
//! binary (`migrations/sqlite`, `migrations/postgres`, mirrored file names).
//!
//! Every guarantee that must hold across processes (unique addresses, the device limit,
//! the last admin) is enforced inside one database transaction, by the rules of
//! [`ferrozone_domain::rules`] run on this crate's transactions: on SQLite the write
//! transaction holds the database write lock from its first statement (`BEGIN IMMEDIATE`),
//! on PostgreSQL the transaction locks the rows it depends on (owner, address pool, admins).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use ferrozone_store::{open, StoreOptions};
//! let db = open("sqlite://./data/ferrozone.db", &StoreOptions::default()).await?;
//! db.migrate().await?;
//! let store = db.into_store();
//! store.ping().await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use ferrozone_domain::audit::AuditKey;
use ferrozone_domain::Store;

mod coalesce;
mod columns;
mod errors;
mod import;
pub mod metrics;
pub mod postgres;
mod rows;
mod sql;
pub mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// How an SQLite database syncs to disk (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is on disk before it is acknowledged, even across a power loss.
    #[default]
    Full,
    /// With WAL, commits survive a crash of the process (`kill -9`) but the last ones may
    /// be lost on a power loss or OS crash. Faster.
    Normal,
}

impl FromStr for Synchronous {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Self::Full),
            "normal" => Ok(Self::Normal),
            other => Err(format!("unknown synchronous mode `{other}`; use `full` or `normal`")),
        }
    }
}

/// Tuning of the connection pools. The defaults suit one server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// SQLite only: `PRAGMA synchronous`. Default [`Synchronous::Full`].
    pub synchronous: Synchronous,
    /// PostgreSQL: size of the connection pool. SQLite: size of the read pool (writes always
    /// go through one connection). Default 10.
    pub max_connections: u32,
    /// How long an operation waits for a pooled connection before the store reports
    /// [`ferrozone_domain::DomainError::Unavailable`]. Default 10 s.
    pub acquire_timeout: Duration,
    /// The MAC key of the audit chain. `serve` and the CLI derive it from the secret key
    /// ([`AuditKey::from_cipher`]); the default ([`AuditKey::unkeyed`]) suits tests only.
    pub audit_key: AuditKey,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            audit_key: AuditKey::unkeyed(),
        }
    }
}

/// An opened database of either backend. Use [`Database::migrate`] to apply the embedded
/// migrations, then [`Database::into_store`] for the handle the application keeps.
#[derive(Debug, Clone)]
pub enum Database {
    /// An SQLite file (or in-memory database).
    Sqlite(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

impl Database {
    /// `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self {
            Database::Sqlite(_) => "sqlite",
            Database::Postgres(_) => "postgres",
        }
    }

    /// Applies the pending migrations of this backend. Safe to run from several processes
    /// at once on PostgreSQL (sqlx takes an advisory lock).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Database::Sqlite(store) => store.migrate().await,
            Database::Postgres(store) => store.migrate().await,
        }
    }

    /// Closes every pooled connection, waiting for the ones in use.
    pub async fn close(&self) {
        match self {
            Database::Sqlite(store) => store.close().await,
            Database::Postgres(store) => store.close().await,
        }
    }

    /// The store as the application uses it.
    pub fn into_store(self) -> Arc<dyn Store> {
        match self {
            Database::Sqlite(store) => Arc::new(store),
            Database::Postgres(store) => Arc::new(store),
        }
    }
}

/// Which backend a database URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Sqlite,
    Postgres,
}

fn scheme_of(url: &str) -> anyhow::Result<Scheme> {
    let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or(url);
    match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => Ok(Scheme::Sqlite),
        "postgres" | "postgresql" => Ok(Scheme::Postgres),
        _ => bail!("unsupported database scheme `{scheme}`; use sqlite:// or postgres://"),
    }
}

/// Opens the database at `url` (`sqlite://path`, `sqlite::memory:`, `postgres://…`) and checks
/// that it answers. An SQLite file and its parent directories are created if missing.
/// Migrations are not applied: see [`Database::migrate`].
pub async fn open(url: &str, options: &StoreOptions) -> anyhow::Result<Database> {
    Ok(match scheme_of(url)? {
        Scheme::Sqlite => Database::Sqlite(SqliteStore::connect(url, options).await?),
        Scheme::Postgres => Database::Postgres(PgStore::connect(url, options).await?),
    })
}

/// Opens the database at `url` (see [`open`]) and returns it as the application's store.
pub async fn connect(url: &str, options: &StoreOptions) -> anyhow::Result<Arc<dyn Store>> {
    Ok(open(url, options).await?.into_store())
}

/// Opens the database at `url`, applies the pending migrations and closes it again
/// (`ferrozone migrate`).
pub async fn migrate(url: &str, options: &StoreOptions) -> anyhow::Result<()> {
    let db = open(url, options).await?;
    let result = db.migrate().await;
    db.close().await;
    result
}

/// A database URL that is safe to print: the password (in the authority or as a
/// `password=` parameter) is replaced by `***`.
pub struct Redacted<'a>(pub &'a str);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(mut url) = url::Url::parse(self.0) else {
            // Not parseable as a URL: it may still hold a secret, so show only the scheme.
            let scheme = self.0.split_once(':').map_or("", |(scheme, _)| scheme);
            return write!(f, "{scheme}:<unparseable URL>");
        };
        if url.password().is_some() {
            // Cannot fail for URLs that already have a password.
            let _ = url.set_password(Some("***"));
        }
        if url.query_pairs().any(|(key, _)| key == "password") {
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k == "password" { "***".to_owned() } else { v.into_owned() };
                    (k.into_owned(), v)
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        write!(f, "{url}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_dispatched_with_an_actionable_error() {
        assert_eq!(scheme_of("sqlite://data/x.db").unwrap(), Scheme::Sqlite);
        assert_eq!(scheme_of("sqlite::memory:").unwrap(), Scheme::Sqlite);
        assert_eq!(scheme_of("postgres://u@h/db").unwrap(), Scheme::Postgres);
        assert_eq!(scheme_of("PostgreSQL://u@h/db").unwrap(), Scheme::Postgres);
        let err = scheme_of("mysql://u@h/db").unwrap_err().to_string();
        assert_eq!(err, "unsupported database scheme `mysql`; use sqlite:// or postgres://");
    }

    #[test]
    fn passwords_are_redacted() {
        let shown = Redacted("postgres://me:s3cret@db:5432/fz?sslmode=require&password=other").to_string();
        assert!(!shown.contains("s3cret") && !shown.contains("other"), "{shown}");
        assert!(shown.contains("me:***@db:5432/fz"), "{shown}");
        assert_eq!(Redacted("sqlite://data/x.db").to_string(), "sqlite://data/x.db");
    }

    #[test]
    fn synchronous_parses() {
        assert_eq!("FULL".parse::<Synchronous>(), Ok(Synchronous::Full));
        assert_eq!("normal".parse::<Synchronous>(), Ok(Synchronous::Normal));
        assert!("off".parse::<Synchronous>().is_err());
    }
}
