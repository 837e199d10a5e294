//! Address assignment inside the insert transaction. Its cost does not depend on the
//! number of devices: released addresses are reused first, then a per-network cursor
//! moves on; each candidate costs one index lookup. Only when the cursor has run out does
//! one read of the addresses in use look for the ones it skipped.

use std::collections::HashSet;
use std::net::IpAddr;

use ferrozone_domain::error::Result;
use ferrozone_domain::ipam::Pool;
use ferrozone_domain::model::AddressRequest;
use ferrozone_domain::DomainError;

use crate::tx::{Family, WriteTx};

/// The address a new device gets for one family. `Given` addresses are taken out of the
/// released list here and left to the unique index to decide.
pub(crate) async fn settle(
    tx: &mut dyn WriteTx,
    request: AddressRequest<IpAddr>,
    pool: Option<&Pool>,
    family: &str,
) -> Result<Option<IpAddr>> {
    match request {
        AddressRequest::None => Ok(None),
        AddressRequest::Given(addr) => {
            tx.unrelease(addr).await?;
            Ok(Some(addr))
        }
        AddressRequest::Assign => {
            let pool = pool.ok_or_else(|| {
                DomainError::Internal(anyhow::anyhow!(
                    "{family} address assignment asked for, but no {family} pool given"
                ))
            })?;
            assign(tx, pool).await.map(Some)
        }
    }
}

/// The next free address of `pool`, or `Invalid { base: CIDR … is exhausted }`.
async fn assign(tx: &mut dyn WriteTx, pool: &Pool) -> Result<IpAddr> {
    if let Some(addr) = reuse_released(tx, pool).await? {
        return Ok(addr);
    }
    if let Some(addr) = advance(tx, pool).await? {
        return Ok(addr);
    }
    if let Some(addr) = reclaim(tx, pool).await? {
        return Ok(addr);
    }
    Err(DomainError::invalid("base", pool.exhausted_message()))
}

/// Pops released addresses until one may be assigned. Entries that may not (from an
/// earlier network, reserved, or taken again since) are dropped on the way.
async fn reuse_released(tx: &mut dyn WriteTx, pool: &Pool) -> Result<Option<IpAddr>> {
    let family = Family::of(pool.gateway());
    while let Some(text) = tx.pop_released(family).await? {
        let Ok(addr) = text.parse::<IpAddr>() else { continue };
        if pool.may_assign(addr) && !tx.address_in_use(addr).await? {
            return Ok(Some(addr));
        }
    }
    Ok(None)
}

/// Moves the cursor to the next assignable, unused address; `None` once it ran out.
async fn advance(tx: &mut dyn WriteTx, pool: &Pool) -> Result<Option<IpAddr>> {
    let end = pool.size().saturating_sub(1);
    while let Some(offset) = tx.claim_offset(pool, end).await? {
        let Some(addr) = pool.assignable(offset) else { continue };
        // Skips addresses a client asked for explicitly ahead of the cursor. A free one
        // may have been given explicitly, deleted and released since: it leaves that list.
        if tx.take_if_free(addr).await? {
            return Ok(Some(addr));
        }
    }
    Ok(None)
}

/// Once the cursor ran out: the first assignable address behind it that no device has.
/// There are such addresses when inserts that claimed an offset never committed (on
/// PostgreSQL the cursor does not move back with a rollback, and neither after a crash).
/// One read of the addresses in use; by counting, a free address (if any) is among the
/// first `used + 8` offsets, so the scan is bounded whatever the network's size.
async fn reclaim(tx: &mut dyn WriteTx, pool: &Pool) -> Result<Option<IpAddr>> {
    let used: HashSet<IpAddr> =
        tx.used_addresses(Family::of(pool.gateway())).await?.iter().filter_map(|text| text.parse().ok()).collect();
    let first = pool.first_offset();
    let end = pool.size().saturating_sub(1).min(first.saturating_add(used.len() as u64 + 8));
    for offset in first..end {
        if let Some(addr) = pool.assignable(offset).filter(|addr| !used.contains(addr)) {
            tx.unrelease(addr).await?;
            return Ok(Some(addr));
        }
    }
    Ok(None)
}
