//! An in-memory database for unit tests of the rules, without SQL: users, devices,
//! sessions, released addresses and pool cursors, as the schema keeps them (deleting or
//! re-addressing a device releases its addresses, deleting a user deletes its devices and
//! sessions). A transaction works on a copy of the state that its commit writes back.
//! Pool cursors move outside the transaction, as on PostgreSQL.
//!
//! `trusting` makes [`WriteTx::take_if_free`] answer without looking until
//! [`WriteTx::look_before_taking`], as PostgreSQL's does: the insert's unique check decides.
//! The store's contract tests (`crates/ferrozone-store/tests/contract`) remain the proof
//! that both real backends keep the rules.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use uuid::Uuid;

use super::tx::{look_and_take, Begin, Commit, Family, WriteTx};
use super::Unique;
use crate::audit::Entry;
use crate::egress::{Rule, RuleAction, RuleScope};
use crate::error::Result;
use crate::ipam::Pool;
use crate::model::{Device, Role, User};
use crate::store::Belongings;
use crate::Timestamp;

/// What the fake database holds.
#[derive(Debug, Clone, Default)]
pub(super) struct State {
    pub users: BTreeMap<Uuid, User>,
    pub devices: BTreeMap<Uuid, Device>,
    /// The browser sessions: `(owner, session id)`.
    pub sessions: Vec<(Uuid, Uuid)>,
    /// `(family code, address)`, in text order like `ip_released`'s primary key.
    pub released: BTreeSet<(i16, String)>,
    pub rules: BTreeMap<Uuid, Rule>,
    /// The ids of the groups.
    pub groups: BTreeSet<Uuid>,
    /// The audit entries recorded, in order.
    pub recorded: Vec<Entry>,
}

impl State {
    fn release(&mut self, device: &Device) {
        let addresses = [device.ipv4.map(IpAddr::V4), device.ipv6.map(IpAddr::V6)];
        for addr in addresses.into_iter().flatten() {
            self.released.insert((Family::of(addr).code(), addr.to_string()));
        }
    }

    fn holder(&self, addr: IpAddr) -> Option<&Device> {
        self.devices.values().find(|d| d.ipv4.map(IpAddr::V4) == Some(addr) || d.ipv6.map(IpAddr::V6) == Some(addr))
    }

    /// The unique value `device` would share with another device.
    fn collision(&self, device: &Device) -> Option<Unique> {
        let others = self.devices.values().filter(|other| other.id != device.id);
        for other in others {
            if other.public_key == device.public_key {
                return Some(Unique::PublicKey);
            }
            if other.user_id == device.user_id && other.name == device.name {
                return Some(Unique::DeviceName);
            }
            if device.ipv4.is_some() && other.ipv4 == device.ipv4 {
                return Some(Unique::Ipv4);
            }
            if device.ipv6.is_some() && other.ipv6 == device.ipv6 {
                return Some(Unique::Ipv6);
            }
        }
        None
    }
}

/// The database: begins [`FakeTx`]s and counts them.
#[derive(Clone, Default)]
pub(super) struct FakeDb {
    state: Arc<Mutex<State>>,
    cursors: Arc<Mutex<BTreeMap<String, u64>>>,
    begun: Arc<Mutex<u32>>,
    trusting: bool,
}

impl FakeDb {
    /// A database whose transactions trust addresses the cursor hands out (see the module).
    pub(super) fn trusting() -> Self {
        Self { trusting: true, ..Self::default() }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// How many transactions began.
    pub(super) fn begun(&self) -> u32 {
        *lock(&self.begun)
    }

    /// A committed user with `role`.
    pub(super) fn add_user(&self, role: Role) -> Uuid {
        let user = User::new(format!("{}@example.com", Uuid::new_v4()), role, None, Timestamp::from_micros(1));
        let id = user.id;
        self.state().users.insert(id, user);
        id
    }

    /// A committed group.
    pub(super) fn add_group(&self, id: Uuid) {
        self.state().groups.insert(id);
    }

    /// A transaction on this database, as the trait objects the rules take.
    pub(super) fn tx(&self) -> FakeTx {
        *lock(&self.begun) += 1;
        FakeTx { state: self.state().clone(), db: self.clone(), careful: !self.trusting, unchecked: Vec::new() }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl Begin for FakeDb {
    async fn begin(&self) -> Result<Box<dyn Commit>> {
        Ok(Box::new(self.tx()))
    }
}

/// An open transaction: a copy of the state, written back by [`Commit::commit`].
pub(super) struct FakeTx {
    state: State,
    db: FakeDb,
    careful: bool,
    /// Addresses handed out without a look: the insert takes them out of the released list.
    unchecked: Vec<IpAddr>,
}

impl FakeTx {
    /// Ends the transaction with its changes (for bodies run without [`Begin`]).
    pub(super) fn commit_now(self) {
        *self.db.state() = self.state;
    }
}

#[async_trait]
impl WriteTx for FakeTx {
    async fn lock_user(&mut self, id: Uuid) -> Result<Option<User>> {
        Ok(self.state.users.get(&id).cloned())
    }

    async fn lock_admins(&mut self) -> Result<Vec<Uuid>> {
        Ok(self.state.users.values().filter(|u| u.role == Role::Admin).map(|u| u.id).collect())
    }

    async fn update_user(&mut self, user: &User) -> Result<()> {
        self.state.users.insert(user.id, user.clone());
        Ok(())
    }

    async fn delete_user(&mut self, id: Uuid) -> Result<bool> {
        let gone: Vec<Device> = self.state.devices.values().filter(|d| d.user_id == id).cloned().collect();
        for device in &gone {
            self.state.devices.remove(&device.id);
            self.state.release(device);
        }
        self.state.sessions.retain(|(owner, _)| *owner != id);
        self.state.rules.retain(|_, rule| rule.user_id != Some(id));
        Ok(self.state.users.remove(&id).is_some())
    }

    async fn belongings(&mut self, id: Uuid) -> Result<Belongings> {
        let state = &self.state;
        Ok(Belongings {
            devices: state.devices.values().filter(|d| d.user_id == id).count() as u64,
            tokens: 0,
            rules: state.rules.values().filter(|r| r.user_id == Some(id)).count() as u64,
            sessions: state.sessions.iter().filter(|(owner, _)| *owner == id).count() as u64,
        })
    }

    async fn record(&mut self, entry: Entry) -> Result<()> {
        self.state.recorded.push(entry);
        Ok(())
    }

    async fn delete_sessions(&mut self, user_id: Uuid, except: Option<Uuid>) -> Result<()> {
        self.state.sessions.retain(|(owner, id)| *owner != user_id || Some(*id) == except);
        Ok(())
    }

    async fn count_devices(&mut self, user_id: Uuid) -> Result<u64> {
        Ok(self.state.devices.values().filter(|d| d.user_id == user_id).count() as u64)
    }

    async fn lock_device(&mut self, id: Uuid) -> Result<Option<Device>> {
        Ok(self.state.devices.get(&id).cloned())
    }

    async fn insert_device(&mut self, device: &Device, entry: Entry) -> Result<()> {
        if !self.state.users.contains_key(&device.user_id) {
            return Err(super::missing_owner());
        }
        if let Some(unique) = self.state.collision(device) {
            return Err(unique.taken());
        }
        for addr in std::mem::take(&mut self.unchecked) {
            self.state.released.remove(&(Family::of(addr).code(), addr.to_string()));
        }
        self.state.devices.insert(device.id, device.clone());
        self.record(entry).await
    }

    async fn update_device(&mut self, _stored: &Device, device: &Device) -> Result<()> {
        if let Some(unique) = self.state.collision(device) {
            return Err(unique.taken());
        }
        let Some(old) = self.state.devices.insert(device.id, device.clone()) else { return Ok(()) };
        let moved = Device {
            ipv4: old.ipv4.filter(|addr| Some(*addr) != device.ipv4),
            ipv6: old.ipv6.filter(|addr| Some(*addr) != device.ipv6),
            ..old
        };
        self.state.release(&moved);
        Ok(())
    }

    async fn claim_offset(&mut self, pool: &Pool, end: u64) -> Result<Option<u64>> {
        let mut cursors = lock(&self.db.cursors);
        let cursor = cursors.entry(pool.key()).or_insert(pool.first_offset());
        if *cursor >= end {
            return Ok(None);
        }
        *cursor += 1;
        Ok(Some(*cursor - 1))
    }

    async fn used_addresses(&mut self, family: Family) -> Result<Vec<String>> {
        let addresses = self.state.devices.values().filter_map(|d| match family {
            Family::V4 => d.ipv4.map(|a| a.to_string()),
            Family::V6 => d.ipv6.map(|a| a.to_string()),
        });
        Ok(addresses.collect())
    }

    async fn pop_released(&mut self, family: Family) -> Result<Option<String>> {
        let first = self.state.released.iter().find(|(code, _)| *code == family.code()).cloned();
        Ok(first.map(|entry| {
            self.state.released.remove(&entry);
            entry.1
        }))
    }

    async fn unrelease(&mut self, addr: IpAddr) -> Result<()> {
        self.state.released.remove(&(Family::of(addr).code(), addr.to_string()));
        Ok(())
    }

    async fn address_in_use(&mut self, addr: IpAddr) -> Result<bool> {
        Ok(self.state.holder(addr).is_some())
    }

    async fn lock_rules(&mut self, action: RuleAction, scope: RuleScope) -> Result<Vec<Rule>> {
        Ok(self.state.rules.values().filter(|r| r.action == action && r.scope() == scope).cloned().collect())
    }

    async fn lock_group(&mut self, id: Uuid) -> Result<bool> {
        Ok(self.state.groups.contains(&id))
    }

    async fn lock_rule(&mut self, id: Uuid) -> Result<Option<Rule>> {
        Ok(self.state.rules.get(&id).cloned())
    }

    async fn insert_rule(&mut self, rule: &Rule) -> Result<()> {
        self.state.rules.insert(rule.id, rule.clone());
        Ok(())
    }

    async fn update_rule(&mut self, rule: &Rule) -> Result<bool> {
        let Some(stored) = self.state.rules.get_mut(&rule.id) else { return Ok(false) };
        *stored = Rule { inserted_at: stored.inserted_at, ..rule.clone() };
        Ok(true)
    }

    async fn take_if_free(&mut self, addr: IpAddr) -> Result<bool> {
        if self.careful {
            return look_and_take(self, addr).await;
        }
        self.unchecked.push(addr);
        Ok(true)
    }

    fn look_before_taking(&mut self) {
        self.careful = true;
    }
}

#[async_trait]
impl Commit for FakeTx {
    async fn commit(self: Box<Self>) -> Result<()> {
        self.commit_now();
        Ok(())
    }

    async fn rollback(self: Box<Self>) {}
}
