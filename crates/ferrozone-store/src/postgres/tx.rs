//! [`WriteTx`] on a PostgreSQL transaction: the shared statements of [`crate::sql`] plus
//! the locking variants of [`super`].

use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use ferrozone_domain::audit::context::Context;
use ferrozone_domain::audit::{Entry, EventRecord};
use ferrozone_domain::egress::{Rule, RuleAction, RuleScope};
use ferrozone_domain::error::Result;
use ferrozone_domain::ipam::Pool;
use ferrozone_domain::model::{Device, User};
use ferrozone_domain::rules::tx::{look_and_take, Commit, Family, WriteTx};
use ferrozone_domain::store::Belongings;
use sqlx::{Postgres, Row, Transaction};
use tokio::sync::Notify;
use uuid::Uuid;

use super::cursor_blocks::Cursors;
use super::errors::OrDb;
use super::rows::{from_row, read};
use super::{INSERT_DEVICE_RECORDED, LOCK_ADMINS, LOCK_DEVICE, LOCK_OWNER, LOCK_RULES, LOCK_USER, POP_RELEASED};
use crate::columns::Columns;
use crate::rows::{DeviceRow, RuleRow, UserRow};
use crate::sql;

/// An open write transaction; rolled back when dropped uncommitted. `cursors` moves the
/// address-pool cursors.
///
/// `released` is what [`WriteTx::lock_owner`] saw of the released addresses (IPv4, IPv6):
/// a family with none then is not asked again by [`WriteTx::pop_released`], which saves a
/// create two round trips in the usual case. An address released after that look takes the
/// cursor's next one instead; the exhaustion scan ([`WriteTx::used_addresses`]) still finds
/// it, so no network is reported full while it has a free address.
///
/// `unchecked` holds the addresses (IPv4, IPv6) that [`WriteTx::take_if_free`] handed out
/// without a look: the device's insert takes them out of the released list, and its unique
/// indexes decide whether they were free, which saves a create two round trips. A taken one
/// fails the insert; the rule then retries with [`WriteTx::look_before_taking`] (`careful`).
///
/// `audit` is the actor and origin of the store call the transaction serves, read in the
/// caller's task before the work was spawned. Its events are appended pending; once it has
/// appended one (`appended`), its commit wakes the process's sealer (`sealer`).
pub(crate) struct PgTx {
    tx: Transaction<'static, Postgres>,
    cursors: Cursors,
    released: Option<[bool; 2]>,
    unchecked: [Option<String>; 2],
    careful: bool,
    sealer: Arc<Notify>,
    appended: bool,
    audit: Context,
}

impl PgTx {
    pub(super) fn new(
        tx: Transaction<'static, Postgres>,
        cursors: Cursors,
        sealer: Arc<Notify>,
        audit: Context,
    ) -> Self {
        Self { tx, cursors, released: None, unchecked: [None, None], careful: false, sealer, appended: false, audit }
    }

    /// The transaction's connection, for statements of its own.
    pub(crate) fn conn(&mut self) -> &mut sqlx::PgConnection {
        &mut self.tx
    }

    /// The audit context the transaction was begun for.
    pub(crate) fn audit(&self) -> &Context {
        &self.audit
    }

    /// Appends the audit event of `entry` by `audit` (the transaction's context, perhaps
    /// adjusted), pending: it is sealed after the commit.
    pub(crate) async fn append_as(&mut self, audit: &Context, entry: Entry) -> Result<()> {
        super::audit::append(&mut self.tx, &audit.record(entry)).await?;
        self.appended = true;
        Ok(())
    }

    /// [`Self::append_as`] with the transaction's own context.
    pub(crate) async fn append(&mut self, entry: Entry) -> Result<()> {
        let audit = self.audit.clone();
        self.append_as(&audit, entry).await
    }
}

/// The index of `family` in the per-family arrays of [`PgTx`].
fn slot(family: Family) -> usize {
    usize::from(family == Family::V6)
}

/// Pool cursors are stored as signed 64-bit integers; pools never exceed 2^62 offsets.
pub(super) fn offset_to_db(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

#[async_trait]
impl WriteTx for PgTx {
    async fn lock_user(&mut self, id: Uuid) -> Result<Option<User>> {
        let row = sqlx::query(LOCK_USER)
            .bind(id)
            .try_map(from_row::<UserRow>)
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("lock a user")?;
        row.map(User::try_from).transpose()
    }

    async fn lock_admins(&mut self) -> Result<Vec<Uuid>> {
        sqlx::query_scalar(LOCK_ADMINS).fetch_all(&mut *self.tx).await.or_db("lock the admins")
    }

    async fn update_user(&mut self, user: &User) -> Result<()> {
        let row = UserRow::from(user);
        row.bind_update(sqlx::query(sql::UPDATE_USER)).execute(&mut *self.tx).await.or_db("update a user")?;
        Ok(())
    }

    async fn delete_user(&mut self, id: Uuid) -> Result<bool> {
        let done = sqlx::query(sql::DELETE_USER).bind(id).execute(&mut *self.tx).await.or_db("delete a user")?;
        Ok(done.rows_affected() > 0)
    }

    async fn belongings(&mut self, id: Uuid) -> Result<Belongings> {
        let (devices, tokens, rules, sessions): (i64, i64, i64, i64) = sqlx::query_as(sql::users_page::BELONGINGS)
            .bind(id)
            .fetch_one(&mut *self.tx)
            .await
            .or_db("count a user's belongings")?;
        Ok(crate::rows::belongings([devices, tokens, rules, sessions]))
    }

    async fn record(&mut self, entry: Entry) -> Result<()> {
        self.append(entry).await
    }

    async fn delete_sessions(&mut self, user_id: Uuid, except: Option<Uuid>) -> Result<()> {
        let query = match except {
            Some(keep) => sqlx::query(sql::DELETE_OTHER_USER_SESSIONS).bind(user_id).bind(keep),
            None => sqlx::query(sql::DELETE_USER_SESSIONS).bind(user_id),
        };
        query.execute(&mut *self.tx).await.or_db("delete a user's sessions")?;
        Ok(())
    }

    async fn count_devices(&mut self, user_id: Uuid) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(sql::COUNT_USER_DEVICES)
            .bind(user_id)
            .fetch_one(&mut *self.tx)
            .await
            .or_db("count devices")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn lock_device(&mut self, id: Uuid) -> Result<Option<Device>> {
        let row = sqlx::query(LOCK_DEVICE)
            .bind(id)
            .try_map(from_row::<DeviceRow>)
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("lock a device")?;
        row.map(Device::try_from).transpose()
    }

    async fn insert_device(&mut self, device: &Device, entry: Entry) -> Result<()> {
        let row = DeviceRow::encode(device)?;
        let record = EventRecord::pending(&self.audit.record(entry));
        let [v4, v6] = std::mem::take(&mut self.unchecked);
        let insert = row.bind_insert(sqlx::query(INSERT_DEVICE_RECORDED)).bind(v4).bind(v6);
        super::audit::bind_event(insert, &record).execute(&mut *self.tx).await.or_db("insert a device")?;
        self.appended = true;
        Ok(())
    }

    async fn update_device(&mut self, _stored: &Device, device: &Device) -> Result<()> {
        let row = DeviceRow::encode(device)?;
        row.bind_update(sqlx::query(sql::UPDATE_DEVICE)).execute(&mut *self.tx).await.or_db("update a device")?;
        Ok(())
    }

    async fn claim_offset(&mut self, pool: &Pool, end: u64) -> Result<Option<u64>> {
        // On the cursor pool, not in this transaction: see `PgStore::cursors`.
        self.cursors.claim(pool, end).await
    }

    async fn used_addresses(&mut self, family: Family) -> Result<Vec<String>> {
        let sql = if family == Family::V4 { sql::USED_IPV4 } else { sql::USED_IPV6 };
        sqlx::query_scalar(sql).fetch_all(&mut *self.tx).await.or_db("list the addresses in use")
    }

    async fn pop_released(&mut self, family: Family) -> Result<Option<String>> {
        if self.released.is_some_and(|seen| !seen[slot(family)]) {
            return Ok(None);
        }
        sqlx::query_scalar(POP_RELEASED)
            .bind(family.code())
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("reuse a released address")
    }

    async fn unrelease(&mut self, addr: IpAddr) -> Result<()> {
        sqlx::query(sql::UNRELEASE)
            .bind(Family::of(addr).code())
            .bind(addr.to_string())
            .execute(&mut *self.tx)
            .await
            .or_db("claim a released address")?;
        Ok(())
    }

    async fn address_in_use(&mut self, addr: IpAddr) -> Result<bool> {
        let sql = if addr.is_ipv4() { sql::IPV4_IN_USE } else { sql::IPV6_IN_USE };
        let found: Option<i32> = sqlx::query_scalar(sql)
            .bind(addr.to_string())
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("look an address up")?;
        Ok(found.is_some())
    }

    async fn lock_owner(&mut self, id: Uuid) -> Result<Option<(User, u64)>> {
        let row = sqlx::query(LOCK_OWNER).bind(id).fetch_optional(&mut *self.tx).await.or_db("lock a user")?;
        let Some(row) = row else { return Ok(None) };
        let decoded = (|| -> sqlx::Result<(UserRow, i64, [bool; 2])> {
            let released = [row.try_get("released_v4")?, row.try_get("released_v6")?];
            Ok((read::<UserRow>(&row)?, row.try_get("device_count")?, released))
        })();
        let (user, count, released) = decoded.or_db("lock a user")?;
        self.released = Some(released);
        Ok(Some((User::try_from(user)?, u64::try_from(count).unwrap_or(0))))
    }

    async fn take_if_free(&mut self, addr: IpAddr) -> Result<bool> {
        if !self.careful {
            self.unchecked[slot(Family::of(addr))] = Some(addr.to_string());
            return Ok(true);
        }
        look_and_take(self, addr).await
    }

    fn look_before_taking(&mut self) {
        self.careful = true;
    }

    async fn lock_rules(&mut self, action: RuleAction, scope: RuleScope) -> Result<Vec<Rule>> {
        sqlx::query(LOCK_RULES).execute(&mut *self.tx).await.or_db("lock the rules")?;
        let (user_id, group_id) = crate::sql::scope_ids(scope);
        let rows = sqlx::query(sql::SCOPED_RULES)
            .bind(action.as_str())
            .bind(user_id)
            .bind(group_id)
            .try_map(from_row::<RuleRow>)
            .fetch_all(&mut *self.tx)
            .await
            .or_db("read the rules")?;
        rows.into_iter().map(Rule::try_from).collect()
    }

    async fn lock_group(&mut self, id: Uuid) -> Result<bool> {
        let found = sqlx::query(crate::sql::groups::EXISTS_LOCKED_POSTGRES)
            .bind(id)
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("lock a group")?;
        Ok(found.is_some())
    }

    async fn lock_rule(&mut self, id: Uuid) -> Result<Option<Rule>> {
        sqlx::query(LOCK_RULES).execute(&mut *self.tx).await.or_db("lock the rules")?;
        let row = sqlx::query(sql::RULE_BY_ID)
            .bind(id)
            .try_map(from_row::<RuleRow>)
            .fetch_optional(&mut *self.tx)
            .await
            .or_db("read a rule")?;
        row.map(Rule::try_from).transpose()
    }

    async fn insert_rule(&mut self, rule: &Rule) -> Result<()> {
        let row = RuleRow::from(rule);
        row.bind_insert(sqlx::query(sql::INSERT_RULE)).execute(&mut *self.tx).await.or_db("insert a rule")?;
        Ok(())
    }

    async fn update_rule(&mut self, rule: &Rule) -> Result<bool> {
        let row = RuleRow::from(rule);
        let done =
            row.bind_update(sqlx::query(sql::UPDATE_RULE)).execute(&mut *self.tx).await.or_db("update a rule")?;
        Ok(done.rows_affected() > 0)
    }
}

#[async_trait]
impl Commit for PgTx {
    async fn commit(self: Box<Self>) -> Result<()> {
        self.tx.commit().await.or_db("commit")?;
        if self.appended {
            self.sealer.notify_one();
        }
        Ok(())
    }

    async fn rollback(self: Box<Self>) {
        if let Err(error) = self.tx.rollback().await {
            tracing::warn!(%error, "rollback failed");
        }
    }
}
