//! Hearing of changes other processes commit. SQLite cannot send notifications: a
//! connection of its own asks `PRAGMA data_version`, which changes whenever another
//! connection (another process, or this process's writer) commits.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::error::Result;
use rusqlite::Connection;
use tokio::sync::Notify;

use super::super::errors::OrDb;
use super::SqliteStore;

/// How often a watch asks whether the database changed.
const CHANGE_POLL: Duration = Duration::from_millis(200);

impl SqliteStore {
    /// Notifies `changed` after any commit of another connection until the store is
    /// closed; with `from_start`, also once as soon as it watches (what was committed
    /// before was not seen).
    pub(super) async fn watch_commits(&self, changed: Arc<Notify>, from_start: bool) -> Result<()> {
        let conn = self.inner.location.open(self.inner.synchronous, false).or_db("watch for changes")?;
        let version = |conn: &Connection| -> Result<i64> {
            conn.query_row("PRAGMA data_version", [], |row| row.get(0)).or_db("watch for changes")
        };
        let mut seen = version(&conn)?;
        if from_start {
            changed.notify_one();
        }
        let mut ticks = tokio::time::interval(CHANGE_POLL);
        while !self.inner.closed.load(Ordering::Acquire) {
            ticks.tick().await;
            let now = version(&conn)?;
            if now != seen {
                seen = now;
                changed.notify_one();
            }
        }
        Ok(())
    }
}
