//! [`WriteTx`] on the writer's connection, inside the batch transaction the writer opened
//! (see [`super::writer`]). Every method runs to completion before it returns: the futures
//! of the rules never wait, and the writer drives them with one poll.
//!
//! No row locks: the batch transaction began with `BEGIN IMMEDIATE` and holds the database.

use std::net::IpAddr;

use async_trait::async_trait;
use ferrozone_domain::audit::context::Context;
use ferrozone_domain::audit::{AuditKey, Entry, NewAuditEvent};
use ferrozone_domain::egress::{Rule, RuleAction, RuleScope};
use ferrozone_domain::error::Result;
use ferrozone_domain::ipam::Pool;
use ferrozone_domain::model::{Device, User};
use ferrozone_domain::rules::tx::{Family, WriteTx};
use ferrozone_domain::store::Belongings;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::errors::OrDb;
use super::writer::Batch;
use super::{prepare, prepare_built, rows};
use crate::rows::{DeviceRow, RuleRow, UserRow};
use crate::sql;

/// A write of the writer's batch, with the audit key and the context (actor, origin) of
/// the store call it serves: the context is read where the call was made, since the
/// writer thread has none.
pub(crate) struct SqliteTx<'c> {
    conn: &'c mut Connection,
    events: &'c mut Vec<NewAuditEvent>,
    key: &'c AuditKey,
    audit: &'c Context,
}

impl<'c> SqliteTx<'c> {
    pub(crate) fn new(batch: &'c mut Batch<'_>, key: &'c AuditKey, audit: &'c Context) -> Self {
        Self { conn: batch.conn, events: batch.events, key, audit }
    }

    pub(crate) fn conn(&self) -> &Connection {
        self.conn
    }

    /// The key that seals the audit log's head.
    pub(crate) fn key(&self) -> &AuditKey {
        self.key
    }

    /// Appends the audit event of `entry`, in this write: the batch chains it after its
    /// last job, unless this write fails ([`super::writer`]).
    pub(crate) fn append(&mut self, entry: Entry) -> Result<()> {
        self.append_event(self.audit.record(entry));
        Ok(())
    }

    /// [`Self::append`] with the context changed by `adjust` (a sign-in's actor).
    pub(crate) fn append_as(&mut self, adjust: impl FnOnce(Context) -> Context, entry: Entry) -> Result<()> {
        self.append_event(adjust(self.audit.clone()).record(entry));
        Ok(())
    }

    /// Appends `event` as it is, in this write.
    pub(crate) fn append_event(&mut self, event: NewAuditEvent) {
        self.events.push(event);
    }
}

/// Pool cursors are stored as signed 64-bit integers; pools never exceed 2^62 offsets.
fn offset_to_db(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

#[async_trait]
impl WriteTx for SqliteTx<'_> {
    async fn lock_user(&mut self, id: Uuid) -> Result<Option<User>> {
        let row = prepare(self.conn, sql::USER_BY_ID)
            .and_then(|mut stmt| stmt.query_row([id], rows::user).optional())
            .or_db("lock a user")?;
        row.map(User::try_from).transpose()
    }

    async fn lock_admins(&mut self) -> Result<Vec<Uuid>> {
        prepare(self.conn, sql::ADMIN_IDS)
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
            .or_db("lock the admins")
    }

    async fn update_user(&mut self, user: &User) -> Result<()> {
        let row = UserRow::from(user);
        let args = rows::update_args(&row);
        prepare(self.conn, sql::UPDATE_USER)
            .and_then(|mut stmt| stmt.execute(args.as_slice()))
            .or_db("update a user")?;
        Ok(())
    }

    async fn delete_user(&mut self, id: Uuid) -> Result<bool> {
        let n = prepare(self.conn, sql::DELETE_USER).and_then(|mut s| s.execute([id])).or_db("delete a user")?;
        Ok(n > 0)
    }

    async fn belongings(&mut self, id: Uuid) -> Result<Belongings> {
        let counts: [i64; 4] = prepare(self.conn, sql::users_page::BELONGINGS)
            .and_then(|mut stmt| stmt.query_row([id], |row| Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?])))
            .or_db("count a user's belongings")?;
        Ok(crate::rows::belongings(counts))
    }

    async fn record(&mut self, entry: Entry) -> Result<()> {
        self.append(entry)
    }

    async fn delete_sessions(&mut self, user_id: Uuid, except: Option<Uuid>) -> Result<()> {
        let deleted = match except {
            Some(keep) => {
                prepare(self.conn, sql::DELETE_OTHER_USER_SESSIONS).and_then(|mut stmt| stmt.execute([user_id, keep]))
            }
            None => prepare(self.conn, sql::DELETE_USER_SESSIONS).and_then(|mut stmt| stmt.execute([user_id])),
        };
        deleted.or_db("delete a user's sessions")?;
        Ok(())
    }

    async fn count_devices(&mut self, user_id: Uuid) -> Result<u64> {
        let n: i64 = prepare(self.conn, sql::COUNT_USER_DEVICES)
            .and_then(|mut stmt| stmt.query_row([user_id], |row| row.get(0)))
            .or_db("count devices")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn lock_device(&mut self, id: Uuid) -> Result<Option<Device>> {
        let row = prepare(self.conn, sql::DEVICE_BY_ID)
            .and_then(|mut stmt| stmt.query_row([id], rows::device).optional())
            .or_db("lock a device")?;
        row.map(Device::try_from).transpose()
    }

    async fn insert_device(&mut self, device: &Device, entry: Entry) -> Result<()> {
        let row = DeviceRow::encode(device)?;
        let args = rows::insert_args(&row);
        prepare(self.conn, sql::INSERT_DEVICE)
            .and_then(|mut stmt| stmt.execute(args.as_slice()))
            .or_db("insert a device")?;
        self.append(entry)
    }

    async fn update_device(&mut self, stored: &Device, device: &Device) -> Result<()> {
        let (before, row) = (DeviceRow::encode(stored)?, DeviceRow::encode(device)?);
        let Some((statement, args)) = rows::narrow_update(&row, &before) else { return Ok(()) };
        prepare_built(self.conn, &statement)
            .and_then(|mut stmt| stmt.execute(args.as_slice()))
            .or_db("update a device")?;
        Ok(())
    }

    async fn claim_offset(&mut self, pool: &Pool, end: u64) -> Result<Option<u64>> {
        let key = pool.key();
        let claim = |conn: &Connection| {
            prepare(conn, sql::CLAIM_OFFSET)
                .and_then(|mut stmt| {
                    stmt.query_row(params![key, offset_to_db(end)], |row| row.get::<_, i64>(0)).optional()
                })
                .or_db("move an address pool cursor")
        };
        let claimed = match claim(self.conn)? {
            Some(offset) => Some(offset),
            None => {
                prepare(self.conn, sql::ENSURE_POOL)
                    .and_then(|mut stmt| stmt.execute(params![key, offset_to_db(pool.first_offset())]))
                    .or_db("create an address pool")?;
                claim(self.conn)?
            }
        };
        Ok(claimed.map(|offset| u64::try_from(offset).unwrap_or(0)))
    }

    async fn used_addresses(&mut self, family: Family) -> Result<Vec<String>> {
        let sql = if family == Family::V4 { sql::USED_IPV4 } else { sql::USED_IPV6 };
        prepare(self.conn, sql)
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect::<rusqlite::Result<Vec<String>>>())
            .or_db("list the addresses in use")
    }

    async fn pop_released(&mut self, family: Family) -> Result<Option<String>> {
        prepare(self.conn, sql::POP_RELEASED)
            .and_then(|mut stmt| stmt.query_row([family.code()], |row| row.get(0)).optional())
            .or_db("reuse a released address")
    }

    async fn unrelease(&mut self, addr: IpAddr) -> Result<()> {
        prepare(self.conn, sql::UNRELEASE)
            .and_then(|mut stmt| stmt.execute(params![Family::of(addr).code(), addr.to_string()]))
            .or_db("claim a released address")?;
        Ok(())
    }

    async fn address_in_use(&mut self, addr: IpAddr) -> Result<bool> {
        let sql = if addr.is_ipv4() { sql::IPV4_IN_USE } else { sql::IPV6_IN_USE };
        prepare(self.conn, sql).and_then(|mut stmt| stmt.exists([addr.to_string()])).or_db("look an address up")
    }

    async fn lock_rules(&mut self, action: RuleAction, scope: RuleScope) -> Result<Vec<Rule>> {
        let (user_id, group_id) = crate::sql::scope_ids(scope);
        let rows = prepare(self.conn, sql::SCOPED_RULES)
            .and_then(|mut stmt| {
                let args = params![action.as_str(), user_id, group_id];
                stmt.query_map(args, rows::rule)?.collect::<rusqlite::Result<Vec<_>>>()
            })
            .or_db("read the rules")?;
        rows.into_iter().map(Rule::try_from).collect()
    }

    /// The writer is the only one: nothing can delete the group before the commit.
    async fn lock_group(&mut self, id: Uuid) -> Result<bool> {
        prepare(self.conn, crate::sql::groups::EXISTS).and_then(|mut stmt| stmt.exists([id])).or_db("read a group")
    }

    async fn lock_rule(&mut self, id: Uuid) -> Result<Option<Rule>> {
        let row = prepare(self.conn, sql::RULE_BY_ID)
            .and_then(|mut stmt| stmt.query_row([id], rows::rule).optional())
            .or_db("read a rule")?;
        row.map(Rule::try_from).transpose()
    }

    async fn insert_rule(&mut self, rule: &Rule) -> Result<()> {
        let row = RuleRow::from(rule);
        let args = rows::insert_args(&row);
        prepare(self.conn, sql::INSERT_RULE)
            .and_then(|mut stmt| stmt.execute(args.as_slice()))
            .or_db("insert a rule")?;
        Ok(())
    }

    async fn update_rule(&mut self, rule: &Rule) -> Result<bool> {
        let row = RuleRow::from(rule);
        let args = rows::update_args(&row);
        let n = prepare(self.conn, sql::UPDATE_RULE)
            .and_then(|mut stmt| stmt.execute(args.as_slice()))
            .or_db("update a rule")?;
        Ok(n > 0)
    }
}
