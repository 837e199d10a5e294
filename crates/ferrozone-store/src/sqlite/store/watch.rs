//! Hearing of changes other processes commit. SQLite cannot send notifications: triggers
//! count the changes of each topic in `change_counters` (migrations 0015 and 0030), inside
//! the changing transaction, and a connection of its own reads the counters now and then.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::error::Result;
use rusqlite::Connection;
use tokio::sync::Notify;

use super::super::errors::OrDb;
use super::SqliteStore;

/// How often a watch reads its counters.
const CHANGE_POLL: Duration = Duration::from_millis(200);

/// A kind of change a process may want to hear of: a row of `change_counters`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Topic {
    /// What the WireGuard peers and the egress rules' sources are built from.
    Peers,
    /// The egress rules and the memberships of groups.
    Rules,
    /// The stored configuration (the `configuration.` settings rows).
    Configuration,
}

impl Topic {
    fn name(self) -> &'static str {
        match self {
            Topic::Peers => "peers",
            Topic::Rules => "rules",
            Topic::Configuration => "configuration",
        }
    }
}

impl SqliteStore {
    /// Notifies each topic's `Notify` after every commit that changes the topic, whichever
    /// connection or process made it, until the store is closed; with `from_start`, also
    /// once as soon as it watches (what was committed before was not seen). One connection
    /// reads every counter at each poll.
    pub(super) async fn watch_topics(&self, topics: &[(Topic, Arc<Notify>)], from_start: bool) -> Result<()> {
        let conn = self.inner.location.open(self.inner.synchronous, false).or_db("watch for changes")?;
        let generations = |conn: &Connection| -> Result<Vec<i64>> {
            let mut query = conn
                .prepare_cached("SELECT generation FROM change_counters WHERE topic = ?1")
                .or_db("watch for changes")?;
            topics
                .iter()
                .map(|(topic, _)| query.query_row([topic.name()], |row| row.get(0)).or_db("watch for changes"))
                .collect()
        };
        let mut seen = generations(&conn)?;
        if from_start {
            topics.iter().for_each(|(_, changed)| changed.notify_one());
        }
        let mut ticks = tokio::time::interval(CHANGE_POLL);
        while !self.inner.closed.load(Ordering::Acquire) {
            ticks.tick().await;
            let now = generations(&conn)?;
            for ((_, changed), (now, seen)) in topics.iter().zip(now.iter().zip(&seen)) {
                if now != seen {
                    changed.notify_one();
                }
            }
            seen = now;
        }
        Ok(())
    }
}
