//! What the metrics sample on SQLite (see [`crate::metrics`]): the read connections, and
//! the users and devices.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::PoisonError;

use ferrozone_domain::error::Result;

use super::SqliteStore;
use crate::metrics::{Inventory, PoolUse, INVENTORY};
use crate::sqlite::prepare;

impl SqliteStore {
    /// The read connections: idle ones kept, reads running (each on its own connection,
    /// opened when none is idle) and how many idle ones are kept at most. The writer's one
    /// connection is not counted.
    pub(crate) fn pool_use(&self) -> PoolUse {
        let idle = self.inner.idle.lock().unwrap_or_else(PoisonError::into_inner).len();
        let in_use = self.inner.reading.load(Ordering::Relaxed);
        let max = u32::try_from(self.inner.max_idle).unwrap_or(u32::MAX);
        PoolUse { idle, in_use, max }
    }

    /// [`INVENTORY`], on a blocking thread: it reads every user row.
    pub(crate) async fn inventory(&self) -> Result<Inventory> {
        self.read_long("count users and devices", |conn| {
            prepare(conn, INVENTORY)?.query_row([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        })
        .await
        .map(Inventory::from_counts)
    }

    /// [`Self::pool_use`] as a read in progress sees it.
    #[cfg(test)]
    pub(crate) fn pool_use_while_reading(&self) -> PoolUse {
        self.read("sample the pool", |_| Ok(self.pool_use())).expect("a read")
    }
}

/// One read in progress, counted in the store's `reading` until it ends (however it ends).
pub(crate) struct Reading<'a>(&'a AtomicUsize);

impl<'a> Reading<'a> {
    pub(crate) fn start(reading: &'a AtomicUsize) -> Self {
        reading.fetch_add(1, Ordering::Relaxed);
        Self(reading)
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
