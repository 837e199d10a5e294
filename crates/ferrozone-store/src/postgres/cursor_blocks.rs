//! Address-pool offsets claimed a block at a time in large networks.
//!
//! Every assigned address moves its network's cursor (`ip_pools.next_offset`). Moved one
//! offset per device, that is a statement and a commit per family and device, all on one
//! row that every insert of every process locks in turn. In a large network a process
//! moves the cursor a block of offsets at once and hands them out from memory; the offsets
//! of a block it has not handed out when it stops are skipped, and found again by the scan
//! that runs once the cursor reaches the end (`reclaim` in the domain's address rules).
//! Blocks grow with the network so that a small one loses nothing: below 8,192 addresses
//! the block is one offset, as before, and it is at most [`MAX_BLOCK`]
//! (docs/design/devices.md, "Large networks are claimed a block at a time").

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use ferrozone_domain::error::Result;
use ferrozone_domain::ipam::Pool;
use sqlx::PgPool;

use super::errors::OrDb;
use super::tx::offset_to_db;
use crate::sql;

/// The most offsets one claim takes.
const MAX_BLOCK: u64 = 64;

/// Addresses of the network per offset of a block.
const ADDRESSES_PER_OFFSET: u64 = 4096;

/// The offsets of `pool` one claim moves its cursor by.
pub(crate) fn block_size(pool: &Pool) -> u64 {
    (pool.size() / ADDRESSES_PER_OFFSET).clamp(1, MAX_BLOCK)
}

/// The offsets this process claimed and has not handed out yet, per network. Creates that
/// found none at the same moment each claim a block; every block's rest is kept.
#[derive(Debug, Default)]
pub(crate) struct CursorBlocks(Mutex<HashMap<String, Vec<Range<u64>>>>);

impl CursorBlocks {
    /// The next offset of a block claimed for `key`, if one is left.
    pub(crate) fn next(&self, key: &str) -> Option<u64> {
        let mut blocks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let rests = blocks.get_mut(key)?;
        loop {
            let rest = rests.last_mut()?;
            match rest.next() {
                Some(offset) => return Some(offset),
                None => rests.pop(),
            };
        }
    }

    /// Keeps `rest` to hand out for `key`, beside what is left of other blocks.
    pub(crate) fn keep(&self, key: &str, rest: Range<u64>) {
        if rest.is_empty() {
            return;
        }
        let mut blocks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match blocks.get_mut(key) {
            Some(rests) => rests.push(rest),
            None => drop(blocks.insert(key.to_owned(), vec![rest])),
        }
    }
}

/// The store's pool for address-pool cursors (see `PgStore::cursors`) and the offsets
/// claimed ahead on it ([`CursorBlocks`]), shared by the store's transactions.
#[derive(Debug, Clone)]
pub(crate) struct Cursors {
    pub(crate) pool: PgPool,
    pub(crate) blocks: Arc<CursorBlocks>,
}

impl Cursors {
    /// The next offset of `pool` below `end`: from this process's blocks when one is left,
    /// else claimed from the database. `None` once the cursor has reached `end`.
    pub(crate) async fn claim(&self, pool: &Pool, end: u64) -> Result<Option<u64>> {
        let key = pool.key();
        if let Some(offset) = self.blocks.next(&key) {
            return Ok(Some(offset));
        }
        if let Some(offset) = self.claim_from_db(&key, pool, end).await? {
            return Ok(Some(offset));
        }
        // The network's first claim finds no row to move: make it, then claim again.
        sqlx::query(sql::ENSURE_POOL)
            .bind(&key)
            .bind(offset_to_db(pool.first_offset()))
            .execute(&self.pool)
            .await
            .or_db("create an address pool")?;
        self.claim_from_db(&key, pool, end).await
    }

    /// A block of `pool`'s offsets from the database, its first returned and the rest kept;
    /// one offset when fewer than a block are left before `end`.
    async fn claim_from_db(&self, key: &str, pool: &Pool, end: u64) -> Result<Option<u64>> {
        let size = block_size(pool);
        if let Some(start) = self.claim_block(key, end, size).await? {
            self.blocks.keep(key, start + 1..start + size);
            return Ok(Some(start));
        }
        if size == 1 {
            return Ok(None);
        }
        self.claim_block(key, end, 1).await
    }

    /// Moves the cursor of `key` by `size` offsets if that keeps it at most `end`;
    /// returns the first of them.
    async fn claim_block(&self, key: &str, end: u64, size: u64) -> Result<Option<u64>> {
        let start = sqlx::query_scalar::<_, i64>(CLAIM_BLOCK)
            .bind(key)
            .bind(offset_to_db(end))
            .bind(offset_to_db(size))
            .fetch_optional(&self.pool)
            .await
            .or_db("move an address pool cursor")?;
        Ok(start.map(|offset| u64::try_from(offset).unwrap_or(0)))
    }
}

/// Moves a pool's cursor by `$3` offsets unless that passes `$2`; returns the first.
const CLAIM_BLOCK: &str = "UPDATE ip_pools SET next_offset = next_offset + $3 \
     WHERE network = $1 AND next_offset + $3 <= $2 RETURNING next_offset - $3";

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cidr: &str) -> Pool {
        let network: ipnet::IpNet = cidr.parse().unwrap();
        let gateway = network.hosts().next().unwrap();
        Pool::new(network, gateway).unwrap()
    }

    #[test]
    fn small_networks_move_one_offset_and_large_ones_a_block() {
        assert_eq!(block_size(&pool("10.3.2.0/24")), 1);
        assert_eq!(block_size(&pool("10.3.0.0/20")), 1);
        assert_eq!(block_size(&pool("10.3.0.0/18")), 4);
        assert_eq!(block_size(&pool("10.0.0.0/16")), 16);
        assert_eq!(block_size(&pool("10.0.0.0/8")), MAX_BLOCK);
        assert_eq!(block_size(&pool("fd00::/104")), MAX_BLOCK);
    }

    /// Two processes' cursors on one PostgreSQL database (the PostgreSQL test pass; the
    /// SQLite pass has no such cursor).
    #[tokio::test]
    async fn two_processes_take_blocks_in_turn_and_single_offsets_near_the_end() {
        let db = crate::testing::fresh().await.unwrap();
        if db.backend != "postgres" {
            return;
        }
        let store = crate::PgStore::connect(&db.url, &crate::testing::test_options()).await.unwrap();
        let process = || Cursors { pool: store.cursors.pool.clone(), blocks: Arc::default() };
        let (a, b) = (process(), process());
        let network = pool("10.0.0.0/16");
        assert_eq!(block_size(&network), 16);
        let end = 40;
        let (mut from_a, mut from_b) = (Vec::new(), Vec::new());
        loop {
            let (next_a, next_b) = (a.claim(&network, end).await.unwrap(), b.claim(&network, end).await.unwrap());
            from_a.extend(next_a);
            from_b.extend(next_b);
            if next_a.is_none() && next_b.is_none() {
                break;
            }
        }
        assert_eq!(from_a[..3], [1, 2, 3], "the first block is the first process's");
        assert_eq!(from_b[..3], [17, 18, 19], "the second process claimed the next block");
        let mut all: Vec<u64> = from_a.iter().chain(&from_b).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (1..end).collect::<Vec<_>>(), "every offset below the end, once");
        assert_eq!(a.claim(&network, end).await.unwrap(), None, "the cursor stays at the end");
        store.close().await;
    }

    #[test]
    fn every_offset_of_every_block_kept_is_handed_out_once() {
        let blocks = CursorBlocks::default();
        assert_eq!(blocks.next("10.0.0.0/8"), None);
        blocks.keep("10.0.0.0/8", 5..8);
        assert_eq!(blocks.next("10.0.0.0/8"), Some(5));
        // Two creates that found nothing left claimed a block each at the same moment.
        blocks.keep("10.0.0.0/8", 21..23);
        blocks.keep("10.0.0.0/8", 8..8);
        let mut taken: Vec<_> = std::iter::from_fn(|| blocks.next("10.0.0.0/8")).collect();
        taken.sort_unstable();
        assert_eq!(taken, [6, 7, 21, 22]);
        assert_eq!(blocks.next("fd00::/104"), None, "each network has its own blocks");
    }
}
