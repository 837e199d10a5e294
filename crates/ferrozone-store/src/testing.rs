//! Fresh, migrated databases for tests, of the backend the environment asks for.
//!
//! [`fresh`] returns an SQLite file in a temporary directory by default. When
//! `FERROZONE_TEST_DATABASE_URL` is set (a `postgres://` URL, see `scripts/pg-test-db`),
//! it creates a schema of its own in that database instead, so that many tests (and test
//! binaries) can run in parallel against one PostgreSQL database. A set but unreachable
//! URL is an error: the tests fail, they never silently fall back to SQLite.
//!
//! A PostgreSQL schema is reused by later tests, its rows reset ([`schemas`]): making one
//! per test cost the server more than most tests.
//!
//! [`TestDb::url`] opens the same database again, for a `ferrozone serve` process spawned
//! by a test: pass it as `FERROZONE_DATABASE_URL`. For PostgreSQL it carries the schema as a
//! connection parameter (`?options=-c search_path=t_…`), which sqlx and libpq both honour,
//! and as the application name: a schema that still has sessions is not given to another
//! test.
//!
//! Dropping the [`TestDb`] deletes the SQLite directory, or frees the schema for the next
//! test (or drops it, where schemas are not reused); the schema of a test that panicked is
//! kept (its name is printed) for a look with `psql`.
//!
//! Built only with the `testing` feature (and for this crate's unit tests), which the
//! dev-dependencies of the crates that use it turn on: release builds leave it out.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use ferrozone_domain::Store;
use sqlx::{Connection, PgConnection};
use tempfile::TempDir;
use uuid::Uuid;

use crate::{open, Database, PgStore, Redacted, StoreOptions};

mod schemas;

/// The environment variable that selects PostgreSQL for tests.
pub const DATABASE_URL_ENV: &str = "FERROZONE_TEST_DATABASE_URL";

/// Connections per test database: enough for concurrency tests to contend, small enough
/// for many databases at once on one PostgreSQL server.
const TEST_MAX_CONNECTIONS: u32 = 5;

/// A migrated, empty database that lives as long as this value.
pub struct TestDb {
    /// The store on the database.
    pub store: Arc<dyn Store>,
    /// A URL that opens this same database (and, on PostgreSQL, the same schema).
    pub url: String,
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    cleanup: Cleanup,
}

enum Cleanup {
    /// The SQLite file's directory, deleted on drop.
    Dir(#[allow(dead_code)] TempDir),
    /// The schema, the URL to connect with to free or drop it, and whether it is freed for
    /// the next test (else dropped).
    Schema { base_url: String, schema: String, reused: bool },
}

impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDb").field("backend", &self.backend).field("url", &Redacted(&self.url).to_string()).finish()
    }
}

/// The options [`fresh`] opens databases with.
pub fn test_options() -> StoreOptions {
    StoreOptions { max_connections: TEST_MAX_CONNECTIONS, ..StoreOptions::default() }
}

/// A new, migrated database: PostgreSQL if `FERROZONE_TEST_DATABASE_URL` is set, else SQLite.
pub async fn fresh() -> anyhow::Result<TestDb> {
    match std::env::var(DATABASE_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => fresh_postgres(url.trim()).await,
        _ => fresh_sqlite().await,
    }
}

async fn fresh_sqlite() -> anyhow::Result<TestDb> {
    let dir = tempfile::Builder::new().prefix("ferrozone-test-").tempdir().context("create a temporary directory")?;
    let url = format!("sqlite://{}", dir.path().join("ferrozone.db").display());
    let db = open(&url, &test_options()).await?;
    db.migrate().await?;
    Ok(TestDb { store: db.into_store(), url, backend: "sqlite", cleanup: Cleanup::Dir(dir) })
}

async fn fresh_postgres(base_url: &str) -> anyhow::Result<TestDb> {
    if !(base_url.starts_with("postgres://") || base_url.starts_with("postgresql://")) {
        bail!("{DATABASE_URL_ENV} must be a postgres:// URL, got {}", Redacted(base_url));
    }
    let mut admin = PgConnection::connect(base_url)
        .await
        .with_context(|| format!("{DATABASE_URL_ENV} is set, but {} is unreachable", Redacted(base_url)))?;
    let claimed = schemas::claim(&mut admin, base_url).await;
    let made = match claimed {
        Ok(schemas::Claim::Reused(schema)) => Ok((schema, true)),
        Ok(schemas::Claim::New { reusable }) => new_schema(&mut admin, base_url, reusable).await,
        Err(err) => Err(err),
    };
    // A failed close only leaks a connection the server will reap.
    let _ = admin.close().await;
    let (schema, reused) = made?;
    let opened = async { PgStore::connect(&schema_url(base_url, &schema)?, &test_options()).await }.await;
    let store = match opened {
        Ok(store) => Database::Postgres(store).into_store(),
        Err(err) => {
            // Best effort: the error is what matters.
            let _ = release(base_url, &schema, reused).await;
            return Err(err);
        }
    };
    let url = schema_url(base_url, &schema)?;
    let cleanup = Cleanup::Schema { base_url: base_url.to_owned(), schema, reused };
    Ok(TestDb { store, url, backend: "postgres", cleanup })
}

/// Frees `schema` for the next test if it is `reused`, else drops it.
async fn release(base_url: &str, schema: &str, reused: bool) -> sqlx::Result<()> {
    let mut conn = PgConnection::connect(base_url).await?;
    if reused {
        schemas::free(&mut conn, schema).await?;
    } else {
        sqlx::query("SET lock_timeout = '5s'").execute(&mut conn).await?;
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&mut conn).await?;
    }
    conn.close().await
}

/// A new schema, migrated, and listed for reuse if `reusable`; dropped again if that fails.
async fn new_schema(admin: &mut PgConnection, base_url: &str, reusable: bool) -> anyhow::Result<(String, bool)> {
    let schema = format!("t_{}", Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut *admin)
        .await
        .with_context(|| format!("create schema {schema}"))?;
    let made = async {
        let store = PgStore::connect(&schema_url(base_url, &schema)?, &test_options()).await?;
        store.migrate_private_schema().await?;
        if reusable {
            schemas::register(admin, &schema).await?;
        }
        anyhow::Ok(())
    }
    .await;
    if made.is_err() {
        // Best effort: the error below is what matters.
        let _ = sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&mut *admin).await;
    }
    made.map(|()| (schema, reusable))
}

/// `base_url` with the schema as the search path (`options=-c search_path=<schema>`) and as
/// the application name.
fn schema_url(base_url: &str, schema: &str) -> anyhow::Result<String> {
    let mut url = url::Url::parse(base_url).with_context(|| format!("invalid URL {}", Redacted(base_url)))?;
    // Spaces as %20, not `+`: libpq (psql) does not read `+` as a space.
    let option = format!("options=-c%20search_path%3D{schema}&application_name={schema}");
    let query = match url.query() {
        Some(query) if !query.is_empty() => format!("{query}&{option}"),
        _ => option,
    };
    url.set_query(Some(&query));
    Ok(url.into())
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Cleanup::Schema { base_url, schema, reused } = &self.cleanup else { return };
        if std::thread::panicking() {
            eprintln!("test database kept for inspection: schema {schema} ({})", Redacted(&self.url));
            return;
        }
        // Drop may run inside the test's runtime, which cannot be blocked on: do the async
        // work on a thread with a runtime of its own. Best effort: a failure is only reported.
        let (base_url, schema, reused) = (base_url.clone(), schema.clone(), *reused);
        let dropper = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            let work = release(&base_url, &schema, reused);
            // The timer must be created inside the runtime.
            match runtime.block_on(async { tokio::time::timeout(Duration::from_secs(15), work).await }) {
                Ok(Ok(())) => {}
                Ok(Err(err)) => eprintln!("could not release test schema {schema}: {err}"),
                Err(_) => eprintln!("could not release test schema {schema}: timed out"),
            }
        });
        let _ = dropper.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_rides_in_the_url() {
        let url = schema_url("postgres://u:p@h:5432/db?sslmode=disable", "t_1").unwrap();
        assert_eq!(url, "postgres://u:p@h:5432/db?sslmode=disable&options=-c%20search_path%3Dt_1&application_name=t_1");
    }

    #[tokio::test]
    async fn an_unreachable_postgres_is_an_error_not_a_skip() {
        let err = fresh_postgres("postgres://nobody:secret@127.0.0.1:1/none").await.unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("is unreachable") && !message.contains("secret"), "{message}");
        assert!(fresh_postgres("sqlite://x.db").await.is_err());
    }
}
