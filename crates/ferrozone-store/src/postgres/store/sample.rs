//! What the metrics sample on PostgreSQL (see [`crate::metrics`]): the main pool, and the
//! users and devices.

use ferrozone_domain::error::Result;

use super::PgStore;
use crate::metrics::{Inventory, PoolUse, INVENTORY};
use crate::postgres::errors::OrDb;

impl PgStore {
    /// The main pool, which serves every read and write (the address-cursor pool and the
    /// point reader's connection are small and fixed).
    pub(crate) fn pool_use(&self) -> PoolUse {
        let (size, idle) = (self.pool.size(), self.pool.num_idle());
        let in_use = usize::try_from(size).unwrap_or(usize::MAX).saturating_sub(idle);
        PoolUse { idle, in_use, max: self.pool.options().get_max_connections() }
    }

    /// [`INVENTORY`].
    pub(crate) async fn inventory(&self) -> Result<Inventory> {
        sqlx::query_as::<_, (i64, i64, i64)>(INVENTORY)
            .fetch_one(&self.pool)
            .await
            .or_db("count users and devices")
            .map(Inventory::from_counts)
    }
}
