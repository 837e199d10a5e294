//! The PostgreSQL backend: one pool, READ COMMITTED transactions that lock the rows their
//! rule depends on (the owner for the device limit, the address pool for assignment, the
//! admins for the last-admin rule). Several Ferrozone processes may share the database.

use std::str::FromStr;
use std::sync::Arc;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::sync::Notify;

use self::cursor_blocks::Cursors;
use crate::rows::{DeviceRow, UserRow};
use crate::sql::sql;
use crate::{Redacted, StoreOptions};

mod audit;
mod cursor_blocks;
mod errors;
mod migrations;
mod point_reads;
mod reach;
mod rows;
mod store;
mod tx;

pub use migrations::MIGRATOR;
pub use store::PgStore;

// `FOR NO KEY UPDATE` rather than `FOR UPDATE`: the locks exclude each other and deletes
// just the same, but do not block foreign-key checks (a token inserted for a user whose
// row is locked by a device insert).
/// [`crate::sql::USER_BY_ID`], locking the row.
const LOCK_USER: &str = sql![(select UserRow), " WHERE id = $1 FOR NO KEY UPDATE"];
/// [`LOCK_USER`] with the user's device count (kept by the triggers of migration 0002, which
/// update the row, so a concurrent insert holds the same lock), read as the lock returns it;
/// and whether any address of each family was released (see [`tx::PgTx`]).
const LOCK_OWNER: &str = sql![
    "SELECT ",
    (columns UserRow),
    ", device_count, EXISTS (SELECT 1 FROM ip_released WHERE family = 4) AS released_v4, \
     EXISTS (SELECT 1 FROM ip_released WHERE family = 6) AS released_v6 \
     FROM users WHERE id = $1 FOR NO KEY UPDATE"
];
/// [`crate::sql::ADMIN_IDS`], locking the rows in id order.
const LOCK_ADMINS: &str = "SELECT id FROM users WHERE role = 'admin' ORDER BY id FOR NO KEY UPDATE";
/// Locks the rules table against other rule writers (the mode conflicts with itself and
/// with writes, not with reads) until the transaction ends: the overlap check of
/// [`ferrozone_domain::rules::egress`] then sees every rule that could collide.
const LOCK_RULES: &str = "LOCK TABLE rules IN SHARE ROW EXCLUSIVE MODE";
/// [`crate::sql::DEVICE_BY_ID`], locking the row.
const LOCK_DEVICE: &str = sql![(select DeviceRow), " WHERE id = $1 FOR NO KEY UPDATE OF d"];
/// [`crate::sql::POP_RELEASED`]. SKIP LOCKED passes over an address that a concurrent
/// insert (popping, or claiming it explicitly) is taking out of the list.
const POP_RELEASED: &str = "DELETE FROM ip_released WHERE family = $1 AND address = \
     (SELECT address FROM ip_released WHERE family = $1 ORDER BY address LIMIT 1 \
     FOR UPDATE SKIP LOCKED) RETURNING address";

/// [`crate::sql::INSERT_DEVICE`] that also takes the addresses that
/// [`ferrozone_domain::rules::tx::WriteTx::take_if_free`] handed out unchecked (the two parameters after the
/// device's: IPv4, IPv6, either NULL) out of the released list, and appends the device's
/// audit event, pending (the eleven parameters after those, in the order of
/// `audit::INSERT_PENDING`). The devices' unique indexes decide whether the addresses were
/// free: a taken one fails the insert. One statement, one round trip, where the insert and
/// the append were two (docs/benchmarks.md); PostgreSQL runs a data-modifying `WITH`
/// whether or not the rest reads it.
const INSERT_DEVICE_RECORDED: &str = sql![
    "WITH taken AS (DELETE FROM ip_released WHERE (family = 4 AND address = ",
    (after DeviceRow, 1),
    ") OR (family = 6 AND address = ",
    (after DeviceRow, 2),
    ")), recorded AS (INSERT INTO audit_events (id, at, actor_kind, actor_id, actor_user_id, action, \
     subject_kind, subject_id, changes, client_address, request_id) VALUES (",
    (after DeviceRow, 3..=13),
    ")) ",
    (insert DeviceRow)
];

/// Connections of the address-cursor pool (see [`PgStore`]): each claim is one short
/// statement, so two serve any number of concurrent inserts.
const CURSOR_CONNECTIONS: u32 = 2;

/// The settings every pool of a [`PgStore`] shares, for a pool of `max_connections`.
fn pool_options(max_connections: u32, options: &StoreOptions) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(options.acquire_timeout)
        // No ping before every use of a pooled connection: that doubled the round trips of a
        // point read. A connection that died while idle fails its next statement instead
        // (503, and the pool replaces it).
        .test_before_acquire(false)
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`,
    /// with libpq-style parameters such as `sslmode` or `options`).
    pub async fn connect(url: &str, options: &StoreOptions) -> anyhow::Result<Self> {
        let connect = PgConnectOptions::from_str(url)
            .with_context(|| format!("invalid PostgreSQL database URL {}", Redacted(url)))?
            // The locking scheme assumes READ COMMITTED, whatever the server's default is.
            // (A space in a startup option must be escaped with a backslash.)
            .options([("default_transaction_isolation", r"read\ committed")]);
        reach::check(&connect).await.with_context(|| format!("cannot connect to {}", Redacted(url)))?;
        let pool = pool_options(options.max_connections.max(1), options)
            .connect_with(connect.clone())
            .await
            .with_context(|| format!("cannot connect to {}", Redacted(url)))?;
        let cursors = pool_options(CURSOR_CONNECTIONS, options)
            .connect_lazy_with(connect.clone().options([("synchronous_commit", "off")]));
        let cursors = Cursors { pool: cursors, blocks: Arc::default() };
        // One connection: the point reader runs one statement at a time.
        let reader = pool_options(1, options).connect_lazy_with(point_reads::connect_options(connect));
        let point_reads = point_reads::start(reader.clone());
        let sealer = Arc::new(Notify::new());
        Ok(Self { pool, cursors, reader, point_reads, audit_key: options.audit_key.clone(), sealer })
    }

    /// Applies the pending migrations (under an advisory lock, so concurrent starts are safe).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        MIGRATOR.run(&self.pool).await.context("cannot migrate the PostgreSQL database")
    }

    /// Migrates a schema nobody else uses, without the advisory lock: sqlx takes one lock
    /// per *database*, which would serialize tests that each migrate a schema of their own.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) async fn migrate_private_schema(&self) -> anyhow::Result<()> {
        let migrator = migrations::migrator(false);
        migrator.run(&self.pool).await.context("cannot migrate the PostgreSQL schema")
    }
}
