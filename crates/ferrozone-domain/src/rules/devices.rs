//! Inserting devices (owner check, device limit, address assignment) and updating them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::audit::changes;
use crate::error::Result;
use crate::ipam::Pools;
use crate::model::{AddressRequest, Device, DeviceInsert, DeviceUpdate, PeerStats};
use crate::{DomainError, Timestamp};
use uuid::Uuid;

use super::assign::settle;
use super::tx::{finish, Begin, WriteTx};
use super::{missing_owner, LIMIT_REACHED};

/// Attempts of an insert whose assigned address turned out to be taken. Only PostgreSQL can
/// lose that race: to a concurrent explicit claim, or to a device that had the cursor's
/// address when [`WriteTx::take_if_free`] did not look (the first attempt only; retries
/// look, and three of them ride out concurrent claims). SQLite serializes writers and
/// always looks.
const ATTEMPTS: u32 = 4;

/// Inserts `new` with its addresses, within the owner's device limit.
pub async fn insert_device(db: &dyn Begin, new: &DeviceInsert, pools: &Pools, max_devices: u32) -> Result<Device> {
    let mut attempt = 1;
    loop {
        match insert_once(db, new, pools, max_devices, attempt > 1).await {
            Err(err) if attempt < ATTEMPTS && lost_address_race(&err, new) => {
                tracing::debug!(device.id = %new.id, attempt, "an assigned address was taken; retrying, looking first");
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Whether `err` is a taken address that the store chose (not one the client gave).
fn lost_address_race(err: &DomainError, new: &DeviceInsert) -> bool {
    let DomainError::Invalid(errors) = err else { return false };
    (errors.has("ipv4") && new.ipv4 == AddressRequest::Assign)
        || (errors.has("ipv6") && new.ipv6 == AddressRequest::Assign)
}

/// One transaction of an insert; `careful`: it retries one that lost an address.
async fn insert_once(
    db: &dyn Begin,
    new: &DeviceInsert,
    pools: &Pools,
    max_devices: u32,
    careful: bool,
) -> Result<Device> {
    let mut tx = db.begin().await?;
    if careful {
        tx.look_before_taking();
    }
    let result = insert_in(tx.as_mut(), new, pools, max_devices).await;
    finish(tx, result).await
}

/// The body of [`insert_device`]: one attempt, in the caller's transaction.
pub async fn insert_in(tx: &mut dyn WriteTx, new: &DeviceInsert, pools: &Pools, max_devices: u32) -> Result<Device> {
    // The owner's row lock serializes this user's inserts: its count stays true.
    let Some((_, count)) = tx.lock_owner(new.user_id).await? else {
        return Err(missing_owner());
    };
    if count >= u64::from(max_devices) {
        return Err(DomainError::invalid("base", LIMIT_REACHED));
    }
    let ipv4 = settle(tx, widen(&new.ipv4), pools.v4.as_ref(), "IPv4").await?;
    let ipv6 = settle(tx, widen(&new.ipv6), pools.v6.as_ref(), "IPv6").await?;
    let device = Device {
        id: new.id,
        user_id: new.user_id,
        name: new.name.clone(),
        description: new.description.clone(),
        public_key: new.public_key.clone(),
        preshared_key: new.preshared_key.clone(),
        ipv4: ipv4.map(v4).transpose()?,
        ipv6: ipv6.map(v6).transpose()?,
        use_default: new.use_default,
        custom: new.custom.clone(),
        stats: PeerStats::default(),
        paused_at: None,
        inserted_at: new.now,
        updated_at: new.now,
    };
    tx.insert_device(&device, changes::device_created(&device)).await?;
    Ok(device)
}

/// Writes `update` if it differs from the stored device; returns the stored device.
pub async fn update_device(db: &dyn Begin, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device> {
    let mut tx = db.begin().await?;
    let result = update_in(tx.as_mut(), id, update, now).await;
    finish(tx, result).await
}

/// The body of [`update_device`], in the caller's transaction.
pub async fn update_in(tx: &mut dyn WriteTx, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device> {
    let stored = tx.lock_device(id).await?.ok_or(DomainError::NotFound)?;
    let Some(changed) = apply(&stored, update, now) else { return Ok(stored) };
    // A newly taken address leaves the released list; the old one enters it (trigger).
    if let Some(addr) = changed.ipv4.filter(|_| changed.ipv4 != stored.ipv4) {
        tx.unrelease(IpAddr::V4(addr)).await?;
    }
    if let Some(addr) = changed.ipv6.filter(|_| changed.ipv6 != stored.ipv6) {
        tx.unrelease(IpAddr::V6(addr)).await?;
    }
    tx.update_device(&stored, &changed).await?;
    if let Some(entry) = changes::device_updated(&stored, &changed) {
        tx.record(entry).await?;
    }
    Ok(changed)
}

/// Pauses (`paused`) or resumes the device in its own transaction (docs/design/devices.md,
/// "Paused devices"); the device as it is then, or `None` when it does not exist.
pub async fn set_paused(db: &dyn Begin, id: Uuid, paused: bool, now: Timestamp) -> Result<Option<Device>> {
    let mut tx = db.begin().await?;
    let result = set_paused_in(tx.as_mut(), id, paused, now).await;
    finish(tx, result).await
}

/// The body of [`set_paused`]: a device already in that state is left as it is (a paused
/// one keeps the time it was paused), with no audit event. `updated_at` does not move:
/// pausing is not an edit of what a Firezone client reads.
pub async fn set_paused_in(tx: &mut dyn WriteTx, id: Uuid, paused: bool, now: Timestamp) -> Result<Option<Device>> {
    let Some(stored) = tx.lock_device(id).await? else { return Ok(None) };
    if stored.paused_at.is_some() == paused {
        return Ok(Some(stored));
    }
    let device = Device { paused_at: paused.then_some(now), ..stored.clone() };
    tx.update_device(&stored, &device).await?;
    tx.record(changes::device_paused(&stored, &device)).await?;
    Ok(Some(device))
}

/// The device after `update`, or `None` when nothing stored would change.
fn apply(stored: &Device, update: &DeviceUpdate, now: Timestamp) -> Option<Device> {
    let mut device = stored.clone();
    device.name.clone_from(&update.name);
    device.description.clone_from(&update.description);
    device.public_key.clone_from(&update.public_key);
    if let Some(psk) = &update.preshared_key {
        device.preshared_key = psk.clone();
    }
    device.ipv4 = update.ipv4;
    device.ipv6 = update.ipv6;
    device.use_default = update.use_default;
    device.custom = update.custom.clone();
    if device == *stored {
        return None;
    }
    device.updated_at = now;
    Some(device)
}

fn widen<A: Copy + Into<IpAddr>>(request: &AddressRequest<A>) -> AddressRequest<IpAddr> {
    match request {
        AddressRequest::None => AddressRequest::None,
        AddressRequest::Given(addr) => AddressRequest::Given((*addr).into()),
        AddressRequest::Assign => AddressRequest::Assign,
    }
}

fn v4(addr: IpAddr) -> Result<Ipv4Addr> {
    match addr {
        IpAddr::V4(addr) => Ok(addr),
        IpAddr::V6(_) => Err(DomainError::Internal(anyhow::anyhow!("the IPv4 pool handed out {addr}"))),
    }
}

fn v6(addr: IpAddr) -> Result<Ipv6Addr> {
    match addr {
        IpAddr::V6(addr) => Ok(addr),
        IpAddr::V4(_) => Err(DomainError::Internal(anyhow::anyhow!("the IPv6 pool handed out {addr}"))),
    }
}

#[cfg(test)]
pub(super) mod tests;
