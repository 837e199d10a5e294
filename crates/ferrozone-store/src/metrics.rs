//! The store's metrics, emitted through the `metrics` facade: whatever recorder the process
//! installed (a Prometheus exporter, a test's recorder) receives them; with none, they cost
//! next to nothing.
//!
//! Emitted where they happen: the SQLite writer's batches and commits, and every error that
//! says the database is unavailable. Sampled by [`publish`], which `serve` runs every
//! [`SAMPLE_PERIOD`]: the connection pool's use, and the users and devices the database
//! holds (one small query, over the users only: each user row keeps its device count).
//!
//! Labels are bounded by construction: states and backend names, never an id or a value.

use std::time::Duration;

use ferrozone_domain::error::Result;
use metrics::{describe_counter, describe_gauge, describe_histogram, gauge, Unit};

use crate::Database;

/// `ferrozone_db_pool_connections{state="idle"|"in_use"}`.
pub const POOL_CONNECTIONS: &str = "ferrozone_db_pool_connections";
/// `ferrozone_db_pool_max_connections`.
pub const POOL_MAX_CONNECTIONS: &str = "ferrozone_db_pool_max_connections";
/// `ferrozone_db_errors_total{backend="sqlite"|"postgres"}`.
pub const DB_ERRORS: &str = "ferrozone_db_errors_total";
/// `ferrozone_sqlite_write_batch_size`.
pub const WRITE_BATCH_SIZE: &str = "ferrozone_sqlite_write_batch_size";
/// `ferrozone_sqlite_commit_duration_seconds`.
pub const COMMIT_DURATION: &str = "ferrozone_sqlite_commit_duration_seconds";
/// `ferrozone_users{state="enabled"|"disabled"}`.
pub const USERS: &str = "ferrozone_users";
/// `ferrozone_devices`.
pub const DEVICES: &str = "ferrozone_devices";

/// How often `serve` samples the gauges of [`publish`]: as often as a scraper usually
/// asks, and rarely enough that counting the users costs nothing worth measuring.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(15);

/// Gives every metric of the store its unit and help text. Call once, after the recorder
/// is installed (descriptions sent to no recorder are lost).
pub fn describe() {
    describe_gauge!(
        POOL_CONNECTIONS,
        Unit::Count,
        "Database connections of the pool by state (idle, in_use). PostgreSQL: the main pool. \
         SQLite: the read connections (writes have one connection of their own)."
    );
    describe_gauge!(
        POOL_MAX_CONNECTIONS,
        Unit::Count,
        "Size of the pool (FERROZONE_DATABASE_MAX_CONNECTIONS). SQLite: the idle read connections kept."
    );
    describe_counter!(DB_ERRORS, Unit::Count, "Database operations that failed because the database was unavailable.");
    describe_histogram!(WRITE_BATCH_SIZE, Unit::Count, "Writes committed together in one SQLite transaction.");
    describe_histogram!(
        COMMIT_DURATION,
        Unit::Seconds,
        "Time of one SQLite write batch from BEGIN to COMMIT, the sync to disk included."
    );
    describe_gauge!(USERS, Unit::Count, "Users by state (enabled, disabled).");
    describe_gauge!(DEVICES, Unit::Count, "Devices of all users.");
}

/// How the pool's connections are used at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    pub idle: usize,
    pub in_use: usize,
    pub max: u32,
}

/// What the database holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inventory {
    pub users_enabled: u64,
    pub users_disabled: u64,
    pub devices: u64,
}

/// The users by state and the devices, in one statement both backends read alike. The
/// devices are the sum of the users' device counts (kept by triggers), so the devices
/// table is not read. Cast because PostgreSQL sums a `BIGINT` column to a `NUMERIC`.
pub(crate) const INVENTORY: &str = "SELECT \
     CAST(COALESCE(SUM(CASE WHEN disabled_at IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT), \
     CAST(COALESCE(SUM(CASE WHEN disabled_at IS NULL THEN 0 ELSE 1 END), 0) AS BIGINT), \
     CAST(COALESCE(SUM(device_count), 0) AS BIGINT) \
     FROM users";

impl Inventory {
    /// From the three columns of [`INVENTORY`]; a negative count (impossible) reads as 0.
    pub(crate) fn from_counts((enabled, disabled, devices): (i64, i64, i64)) -> Self {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Self { users_enabled: count(enabled), users_disabled: count(disabled), devices: count(devices) }
    }
}

impl Database {
    /// The pool's use now.
    pub fn pool_use(&self) -> PoolUse {
        match self {
            Database::Sqlite(store) => store.pool_use(),
            Database::Postgres(store) => store.pool_use(),
        }
    }

    /// Counts the users and devices.
    pub async fn inventory(&self) -> Result<Inventory> {
        match self {
            Database::Sqlite(store) => store.inventory().await,
            Database::Postgres(store) => store.inventory().await,
        }
    }
}

/// Sets the pool gauges, then (one query) the users and devices gauges. A failed count
/// leaves those at their last value and is returned.
pub async fn publish(db: &Database) -> Result<()> {
    let pool = db.pool_use();
    gauge!(POOL_CONNECTIONS, "state" => "idle").set(pool.idle as f64);
    gauge!(POOL_CONNECTIONS, "state" => "in_use").set(pool.in_use as f64);
    gauge!(POOL_MAX_CONNECTIONS).set(f64::from(pool.max));
    let inventory = db.inventory().await?;
    gauge!(USERS, "state" => "enabled").set(inventory.users_enabled as f64);
    gauge!(USERS, "state" => "disabled").set(inventory.users_disabled as f64);
    gauge!(DEVICES).set(inventory.devices as f64);
    Ok(())
}

/// [`publish`] every `period`, until dropped. A failure is logged at debug level only: a
/// database that cannot answer is reported by the requests that fail and `/healthz`.
pub async fn publish_every(db: Database, period: Duration) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = publish(&db).await {
            tracing::debug!(error = %e, "counting users and devices for the metrics failed");
        }
    }
}

/// Counts one operation that found the database unavailable (`backend`: `sqlite` or
/// `postgres`).
pub(crate) fn unavailable(backend: &'static str) {
    metrics::counter!(DB_ERRORS, "backend" => backend).increment(1);
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use super::*;
    use crate::testing::{fresh, test_options};

    /// A metric as a test's recorder received it: name, labels, value.
    type Recorded = (String, Vec<(String, String)>, DebugValue);

    /// Every metric the recorder holds; taking them resets them.
    fn take(recorder: &DebuggingRecorder) -> Vec<Recorded> {
        let snapshot = recorder.snapshotter().snapshot().into_vec().into_iter();
        snapshot
            .map(|(key, _, _, value)| {
                let labels = key.key().labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
                (key.key().name().to_owned(), labels, value)
            })
            .collect()
    }

    /// A database of the backend the environment asks for, opened as `serve` opens it.
    async fn database() -> (crate::testing::TestDb, Database) {
        let db = fresh().await.expect("a test database");
        let database = crate::open(&db.url, &test_options()).await.expect("opened again");
        (db, database)
    }

    #[tokio::test]
    async fn a_connection_in_use_is_counted_as_such() {
        let (_db, database) = database().await;
        let max = test_options().max_connections;
        let seen = match &database {
            Database::Sqlite(store) => store.pool_use_while_reading(),
            Database::Postgres(store) => {
                let _held = store.pool.acquire().await.unwrap();
                store.pool_use()
            }
        };
        assert_eq!(seen, PoolUse { idle: 0, in_use: 1, max });
        if let Database::Sqlite(store) = &database {
            assert_eq!(store.pool_use(), PoolUse { idle: 1, in_use: 0, max }, "the read gave its connection back");
        }
        database.close().await;
    }

    #[tokio::test]
    async fn an_unavailable_database_is_counted_with_its_backend() {
        let (_db, database) = database().await;
        database.close().await;
        let recorder = DebuggingRecorder::new();
        let result = {
            let _recording = metrics::set_default_local_recorder(&recorder);
            database.clone().into_store().ping().await
        };
        assert!(matches!(result, Err(ferrozone_domain::DomainError::Unavailable(_))), "{result:?}");
        let backend = database.backend().to_owned();
        let expected = (DB_ERRORS.to_owned(), vec![("backend".to_owned(), backend)], DebugValue::Counter(1));
        assert_eq!(take(&recorder), [expected]);
    }
}
