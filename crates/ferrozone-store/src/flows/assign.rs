//! Address assignment inside the insert transaction. Its cost does not depend on the
//! number of devices: released addresses are reused first, then a per-network cursor
//! moves on; each candidate costs one index lookup.

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
    // Locking the pool row serializes assignment per network across processes.
    let cursor = tx.lock_pool(pool).await?;
    if let Some(addr) = reuse_released(tx, pool).await? {
        return Ok(addr);
    }
    advance(tx, pool, cursor).await
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

/// Moves the cursor to the next assignable, unused address and stores the cursor after it.
async fn advance(tx: &mut dyn WriteTx, pool: &Pool, cursor: u64) -> Result<IpAddr> {
    let end = pool.size().saturating_sub(1);
    let mut offset = cursor.max(pool.first_offset());
    while offset < end {
        let candidate = pool.assignable(offset);
        offset += 1;
        let Some(addr) = candidate else { continue };
        // Skips addresses a client asked for explicitly ahead of the cursor.
        if !tx.address_in_use(addr).await? {
            tx.set_pool_offset(pool, offset).await?;
            // It may have been given explicitly, deleted and released since.
            tx.unrelease(addr).await?;
            return Ok(addr);
        }
    }
    Err(DomainError::invalid("base", pool.exhausted_message()))
}
