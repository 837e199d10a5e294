//! Address assignment inside the insert transaction. Its cost does not depend on the
//! number of devices: released addresses are reused first, then a per-network cursor
//! moves on; each candidate costs one index lookup. Only when the cursor has run out does
//! one read of the addresses in use look for the ones it skipped.

use std::collections::HashSet;
use std::net::IpAddr;

use crate::error::Result;
use crate::ipam::Pool;
use crate::model::AddressRequest;
use crate::DomainError;

use super::tx::{Family, WriteTx};

/// The address a new device gets for one family. `Given` addresses are taken out of the
/// released list here and left to the unique index to decide.
pub(super) async fn settle(
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

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use crate::model::{AddressRequest, Role};
    use crate::rules::devices::insert_device;
    use crate::rules::devices::tests::{errors_on, new_device, pools};
    use crate::rules::fake::FakeDb;

    async fn assign(db: &FakeDb, user: uuid::Uuid) -> Result<Option<Ipv4Addr>, crate::DomainError> {
        Ok(insert_device(db, &new_device(user, AddressRequest::Assign), &pools(), 99).await?.ipv4)
    }

    #[tokio::test]
    async fn released_addresses_first_then_the_cursor_then_the_ones_it_skipped() {
        let db = FakeDb::default();
        let user = db.add_user(Role::Unprivileged);
        // Stale entries before it in text order are dropped: unparseable, outside the
        // network, the network address, the gateway, in use.
        let given = new_device(user, AddressRequest::Given(Ipv4Addr::new(10, 0, 0, 3)));
        insert_device(&db, &given, &pools(), 99).await.unwrap();
        for stale in ["0 not an address", "1.2.3.4", "10.0.0.0", "10.0.0.1", "10.0.0.3"] {
            db.state().released.insert((4, stale.into()));
        }
        db.state().released.insert((4, "10.0.0.5".into()));
        assert_eq!(assign(&db, user).await.unwrap(), Some(Ipv4Addr::new(10, 0, 0, 5)));
        assert!(db.state().released.is_empty());
        // The cursor: .2, then .3 is skipped (given), .4, then .5 is taken, .6.
        for last in [2, 4, 6] {
            assert_eq!(assign(&db, user).await.unwrap(), Some(Ipv4Addr::new(10, 0, 0, last)));
        }
        let full = assign(&db, user).await.unwrap_err();
        assert_eq!(errors_on(full, "base"), ["CIDR 10.0.0.0/29 is exhausted"]);
        // A device gone without its release (a claim that never committed): found again.
        let gone = db.state().devices.values().find(|d| d.ipv4 == Some(Ipv4Addr::new(10, 0, 0, 4))).unwrap().id;
        db.state().devices.remove(&gone);
        assert_eq!(assign(&db, user).await.unwrap(), Some(Ipv4Addr::new(10, 0, 0, 4)));
    }
}
