//! Hearing of changes other processes commit. SQLite cannot send notifications: triggers
//! count the changes of each topic in `change_counters` (migration 0015), inside the
//! changing transaction, and a connection of its own reads the counter now and then.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::error::Result;
use rusqlite::Connection;
use tokio::sync::Notify;

use super::super::errors::OrDb;
use super::SqliteStore;

/// How often a watch reads its counter.
const CHANGE_POLL: Duration = Duration::from_millis(200);

/// A kind of change a process may want to hear of: a row of `change_counters`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Topic {
    /// What the WireGuard peers and the egress rules are built from.
    Peers,
    /// The stored configuration (the `configuration.` settings rows).
    Configuration,
}

impl Topic {
    fn name(self) -> &'static str {
        match self {
            Topic::Peers => "peers",
            Topic::Configuration => "configuration",
        }
    }
}

impl SqliteStore {
    /// Notifies `changed` after every commit that changes `topic`, whichever connection or
    /// process made it, until the store is closed; with `from_start`, also once as soon as
    /// it watches (what was committed before was not seen).
    pub(super) async fn watch_topic(&self, topic: Topic, changed: Arc<Notify>, from_start: bool) -> Result<()> {
        let conn = self.inner.location.open(self.inner.synchronous, false).or_db("watch for changes")?;
        let generation = |conn: &Connection| -> Result<i64> {
            conn.query_row("SELECT generation FROM change_counters WHERE topic = ?1", [topic.name()], |row| row.get(0))
                .or_db("watch for changes")
        };
        let mut seen = generation(&conn)?;
        if from_start {
            changed.notify_one();
        }
        let mut ticks = tokio::time::interval(CHANGE_POLL);
        while !self.inner.closed.load(Ordering::Acquire) {
            ticks.tick().await;
            let now = generation(&conn)?;
            if now != seen {
                seen = now;
                changed.notify_one();
            }
        }
        Ok(())
    }
}
