//! The audit log on PostgreSQL ([`ferrozone_domain::audit`]). An append locks the head row
//! until its transaction ends, so appenders in every process take turns and seqs follow
//! commit order.

use ferrozone_domain::audit::{AuditHead, AuditKey, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::errors::OrDb;
use crate::sql::audit::{self as sql, Param};

const LOCK_HEAD: &str = "SELECT last_seq, last_hash, pruned_seq, pruned_hash FROM audit_head WHERE id = 1 FOR UPDATE";

/// Appends `event` after the head and moves the head, inside the caller's transaction.
/// Call it last in a transaction: the head stays locked until the commit.
pub(crate) async fn append(tx: &mut PgConnection, key: &AuditKey, event: &NewAuditEvent) -> Result<()> {
    const CONTEXT: &str = "append an audit event";
    let head = sqlx::query(LOCK_HEAD).try_map(head_row).fetch_one(&mut *tx).await.or_db(CONTEXT)?;
    let record = EventRecord::seal(key, head.last_seq + 1, head.last_hash, event);
    sqlx::query(sql::INSERT_EVENT)
        .bind(record.seq)
        .bind(record.id)
        .bind(record.at)
        .bind(&record.actor_kind)
        .bind(&record.actor_id)
        .bind(record.actor_user_id)
        .bind(&record.action)
        .bind(&record.subject_kind)
        .bind(&record.subject_id)
        .bind(&record.changes)
        .bind(&record.client_address)
        .bind(&record.request_id)
        .bind(&record.prev_hash)
        .bind(&record.hash)
        .execute(&mut *tx)
        .await
        .or_db(CONTEXT)?;
    sqlx::query(sql::MOVE_HEAD).bind(record.seq).bind(&record.hash).execute(&mut *tx).await.or_db(CONTEXT)?;
    Ok(())
}

/// Removes up to `max` of the oldest events older than `before_micros`, and moves the
/// head's pruned mark to the last one removed, inside the caller's transaction. The head
/// row is locked first, as an append does: pruners and appenders in every process take
/// turns, and a second pruner reads the events the first one left. Returns how many were
/// removed.
pub(crate) async fn prune(tx: &mut PgConnection, before_micros: i64, max: u32) -> Result<u64> {
    const CONTEXT: &str = "prune audit events";
    sqlx::query(LOCK_HEAD).execute(&mut *tx).await.or_db(CONTEXT)?;
    let oldest: Vec<sql::Oldest> =
        sqlx::query_as(sql::OLDEST).bind(i64::from(max)).fetch_all(&mut *tx).await.or_db(CONTEXT)?;
    let Some((seq, _, hash)) = sql::prune_end(&oldest, before_micros) else { return Ok(0) };
    let removed = sqlx::query(sql::DELETE_THROUGH).bind(seq).execute(&mut *tx).await.or_db(CONTEXT)?;
    sqlx::query(sql::MOVE_PRUNED).bind(seq).bind(hash).execute(&mut *tx).await.or_db(CONTEXT)?;
    Ok(removed.rows_affected())
}

pub(crate) async fn head(conn: &mut PgConnection) -> Result<AuditHead> {
    sqlx::query(sql::HEAD).try_map(head_row).fetch_one(conn).await.or_db("read the audit head")
}

/// The events `query` selects.
pub(crate) async fn select(conn: &mut PgConnection, query: &AuditQuery) -> Result<Vec<EventRecord>> {
    let (statement, params) = sql::select(query);
    let mut select = sqlx::query(&statement);
    for param in params {
        select = match param {
            Param::Int(value) => select.bind(value),
            Param::Text(value) => select.bind(value),
            Param::Uuid(value) => select.bind(value),
        };
    }
    select.try_map(record).fetch_all(conn).await.or_db("read audit events")
}

fn head_row(row: PgRow) -> sqlx::Result<AuditHead> {
    Ok(AuditHead {
        last_seq: row.try_get(0)?,
        last_hash: sql::hash32(row.try_get(1)?),
        pruned_seq: row.try_get(2)?,
        pruned_hash: sql::hash32(row.try_get(3)?),
    })
}

fn record(row: PgRow) -> sqlx::Result<EventRecord> {
    Ok(EventRecord {
        seq: row.try_get(0)?,
        id: row.try_get(1)?,
        at: row.try_get(2)?,
        actor_kind: row.try_get(3)?,
        actor_id: row.try_get(4)?,
        actor_user_id: row.try_get(5)?,
        action: row.try_get(6)?,
        subject_kind: row.try_get(7)?,
        subject_id: row.try_get(8)?,
        changes: row.try_get(9)?,
        client_address: row.try_get(10)?,
        request_id: row.try_get(11)?,
        prev_hash: row.try_get(12)?,
        hash: row.try_get(13)?,
    })
}
