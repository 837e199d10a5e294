//! The write transaction as the rules ([`crate::rules`]) see it.
//!
//! Each backend of `ferrozone-store` implements [`WriteTx`] with its own SQL where the two
//! differ (PostgreSQL takes row locks; SQLite already holds the database write lock from
//! `BEGIN IMMEDIATE`), so the rules themselves (device limit, address assignment, last
//! admin) are written once.
//!
//! Lock order, in every transaction that takes more than one: admin rows (by id), the
//! user row, released addresses, device rows, the rules table. (Pool cursors take no lock
//! that lasts: see [`WriteTx::claim_offset`].)
//! On PostgreSQL, the rules end every transaction with [`finish`]; one dropped on the way
//! (a cancelled request) is rolled back by sqlx when its connection goes back to the pool.
//! On SQLite the writer thread runs the rules' transaction bodies and commits them.

use std::net::IpAddr;

use crate::audit::Entry;
use crate::egress::{Rule, RuleAction, RuleScope};
use crate::error::Result;
use crate::ipam::Pool;
use crate::model::{Device, User};
use crate::store::Belongings;
use async_trait::async_trait;
use uuid::Uuid;

/// The address family of a released address (the `family` column of `ip_released`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(addr: IpAddr) -> Self {
        if addr.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }

    /// The IP version, 4 or 6 (what the store keeps in `ip_released.family`).
    pub fn code(self) -> i16 {
        match self {
            Family::V4 => 4,
            Family::V6 => 6,
        }
    }
}

/// Starts write transactions that the caller ends ([`finish`]).
#[async_trait]
pub trait Begin: Send + Sync {
    async fn begin(&self) -> Result<Box<dyn Commit>>;
}

/// The statements of one open write transaction. Methods that say "lock" hold the row until
/// the end of the transaction (on PostgreSQL; on SQLite the whole database is held already).
#[async_trait]
pub trait WriteTx: Send {
    /// The user, locked.
    async fn lock_user(&mut self, id: Uuid) -> Result<Option<User>>;
    /// The ids of all admins, locked, in id order.
    async fn lock_admins(&mut self) -> Result<Vec<Uuid>>;
    /// Writes email, role, password hash and `updated_at`.
    async fn update_user(&mut self, user: &User) -> Result<()>;
    /// Deletes the user (its tokens and devices go with it); whether a row went.
    async fn delete_user(&mut self, id: Uuid) -> Result<bool>;
    /// What goes with the user when it is deleted (counted before the delete).
    async fn belongings(&mut self, id: Uuid) -> Result<Belongings>;
    /// Deletes every browser session of the user, but the one with id `except`.
    async fn delete_sessions(&mut self, user_id: Uuid, except: Option<Uuid>) -> Result<()>;

    async fn count_devices(&mut self, user_id: Uuid) -> Result<u64>;
    /// The device, locked.
    async fn lock_device(&mut self, id: Uuid) -> Result<Option<Device>>;
    /// Inserts `device` and records `entry`, its creation, as [`Self::record`] does: a
    /// backend may send both in one statement (PostgreSQL does, a round trip less for every
    /// create).
    async fn insert_device(&mut self, device: &Device, entry: Entry) -> Result<()>;
    /// Writes the editable columns and `updated_at` (not the peer statistics) of `device`,
    /// whose row holds `stored` (read by [`Self::lock_device`] in this transaction): a
    /// backend may write only the columns that differ.
    async fn update_device(&mut self, stored: &Device, device: &Device) -> Result<()>;

    /// Moves the pool's cursor one step and returns the offset it was at, creating the pool
    /// at [`Pool::first_offset`] if it is new; `None` once the cursor has reached `end`.
    /// On SQLite the move is part of this transaction. On PostgreSQL it is not: it commits
    /// at once, so inserts never wait for each other's commit, and an offset claimed by a
    /// transaction that then rolls back is skipped by the cursor ([`Self::used_addresses`]
    /// finds it again once the cursor runs out).
    async fn claim_offset(&mut self, pool: &Pool, end: u64) -> Result<Option<u64>>;
    /// The addresses of `family` that devices have, as stored.
    async fn used_addresses(&mut self, family: Family) -> Result<Vec<String>>;
    /// Removes and returns the first released address of `family`, in text order.
    async fn pop_released(&mut self, family: Family) -> Result<Option<String>>;
    /// Removes `addr` from the released addresses (it is being taken).
    async fn unrelease(&mut self, addr: IpAddr) -> Result<()>;
    /// Whether a device has `addr`.
    async fn address_in_use(&mut self, addr: IpAddr) -> Result<bool>;

    /// The egress rules with this action and scope, with the rules locked against other
    /// rule writers until the end of the transaction (PostgreSQL locks the table in a mode
    /// that conflicts with itself, not with readers).
    async fn lock_rules(&mut self, action: RuleAction, scope: RuleScope) -> Result<Vec<Rule>>;
    /// Whether group `id` exists, locked against its deletion until the end of the
    /// transaction (PostgreSQL: `FOR KEY SHARE`), so that a rule never names a group being
    /// deleted.
    async fn lock_group(&mut self, id: Uuid) -> Result<bool>;
    /// One rule, with the rules locked as [`WriteTx::lock_rules`] locks them.
    async fn lock_rule(&mut self, id: Uuid) -> Result<Option<Rule>>;
    async fn insert_rule(&mut self, rule: &Rule) -> Result<()>;
    /// Writes every column but `id` and `inserted_at`; whether the rule was there.
    async fn update_rule(&mut self, rule: &Rule) -> Result<bool>;

    /// Appends the audit event of `entry`, by the actor and from the origin the transaction
    /// was begun for ([`crate::audit::context`]). The rules call it last, once the change
    /// is written: on PostgreSQL it locks the chain's head until the commit.
    async fn record(&mut self, entry: Entry) -> Result<()>;

    /// The user, locked, with the number of devices it has then: a count that no other
    /// transaction can change before this one ends. PostgreSQL reads both with one
    /// statement: a row lock returns the row as the transaction that held it left it.
    async fn lock_owner(&mut self, id: Uuid) -> Result<Option<(User, u64)>> {
        let Some(user) = self.lock_user(id).await? else { return Ok(None) };
        let count = self.count_devices(id).await?;
        Ok(Some((user, count)))
    }

    /// Takes `addr` for the device this transaction inserts unless a device has it: true,
    /// and `addr` leaves the released addresses; false when it is in use (a released entry
    /// for it is stale then, and a backend may drop it all the same).
    ///
    /// A backend may answer true without looking and leave both to the insert: its unique
    /// index fails it when `addr` was taken ("has already been taken", an address race that
    /// [`crate::rules`] retries, calling [`Self::look_before_taking`] first). PostgreSQL
    /// does, which saves two round trips per address; after that call it looks.
    async fn take_if_free(&mut self, addr: IpAddr) -> Result<bool> {
        look_and_take(self, addr).await
    }

    /// From now on [`Self::take_if_free`] looks before it answers: called when an insert is
    /// retried because an address it was given turned out to be taken.
    fn look_before_taking(&mut self) {}
}

/// [`WriteTx::take_if_free`] that looks first: whether a device has `addr`, and if none
/// does, `addr` leaves the released addresses.
pub async fn look_and_take<T: WriteTx + ?Sized>(tx: &mut T, addr: IpAddr) -> Result<bool> {
    if tx.address_in_use(addr).await? {
        return Ok(false);
    }
    tx.unrelease(addr).await?;
    Ok(true)
}

/// A write transaction its holder ends: PostgreSQL's. (SQLite's writer ends its own.)
#[async_trait]
pub trait Commit: WriteTx {
    async fn commit(self: Box<Self>) -> Result<()>;
    /// Ends the transaction without its changes, now rather than when the connection is
    /// next used, so that no lock outlives the operation. Failures are logged.
    async fn rollback(self: Box<Self>);
}

/// Commits `tx` if `result` is `Ok`, rolls it back otherwise; returns `result`.
pub async fn finish<T>(tx: Box<dyn Commit>, result: Result<T>) -> Result<T> {
    match result {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(err) => {
            tx.rollback().await;
            Err(err)
        }
    }
}
