//! The audit log on SQLite ([`ferrozone_domain::audit`]). Appends run inside a write
//! transaction of the writer, which holds the database: the head read there is the last.

use ferrozone_domain::audit::{AuditHead, AuditKey, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use rusqlite::{params, Connection, ToSql};

use super::errors::OrDb;
use super::prepare;
use crate::sql::audit::{self as sql, Param};

/// Appends `event` after the head and moves the head, inside the caller's transaction.
pub(crate) fn append(conn: &Connection, key: &AuditKey, event: &NewAuditEvent) -> Result<()> {
    const CONTEXT: &str = "append an audit event";
    let head = head(conn).or_db(CONTEXT)?;
    let record = EventRecord::seal(key, head.last_seq + 1, head.last_hash, event);
    prepare(conn, sql::INSERT_EVENT)
        .and_then(|mut stmt| {
            stmt.execute(params![
                record.seq,
                record.id,
                record.at,
                record.actor_kind,
                record.actor_id,
                record.actor_user_id,
                record.action,
                record.subject_kind,
                record.subject_id,
                record.changes,
                record.client_address,
                record.request_id,
                record.prev_hash,
                record.hash,
            ])
        })
        .or_db(CONTEXT)?;
    prepare(conn, sql::MOVE_HEAD).and_then(|mut stmt| stmt.execute(params![record.seq, record.hash])).or_db(CONTEXT)?;
    Ok(())
}

/// Removes up to `max` of the oldest events older than `before_micros`, and moves the
/// head's pruned mark to the last one removed, inside the caller's (writer) transaction.
/// Returns how many were removed.
pub(crate) fn prune(conn: &Connection, before_micros: i64, max: u32) -> Result<u64> {
    const CONTEXT: &str = "prune audit events";
    let oldest: Vec<sql::Oldest> = prepare(conn, sql::OLDEST)
        .and_then(|mut stmt| {
            let rows = stmt.query_map([i64::from(max)], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect()
        })
        .or_db(CONTEXT)?;
    let Some((seq, _, hash)) = sql::prune_end(&oldest, before_micros) else { return Ok(0) };
    let removed = prepare(conn, sql::DELETE_THROUGH).and_then(|mut stmt| stmt.execute([seq])).or_db(CONTEXT)?;
    prepare(conn, sql::MOVE_PRUNED).and_then(|mut stmt| stmt.execute(params![seq, hash])).or_db(CONTEXT)?;
    Ok(removed as u64)
}

pub(crate) fn head(conn: &Connection) -> rusqlite::Result<AuditHead> {
    prepare(conn, sql::HEAD)?.query_row([], |row| {
        Ok(AuditHead {
            last_seq: row.get(0)?,
            last_hash: sql::hash32(row.get(1)?),
            pruned_seq: row.get(2)?,
            pruned_hash: sql::hash32(row.get(3)?),
        })
    })
}

/// The events `query` selects.
pub(crate) fn select(conn: &Connection, query: &AuditQuery) -> rusqlite::Result<Vec<EventRecord>> {
    let (statement, params) = sql::select(query);
    let params: Vec<&dyn ToSql> = params.iter().map(as_sql).collect();
    let mut stmt = prepare(conn, &statement)?;
    let rows = stmt.query_map(params.as_slice(), record)?;
    rows.collect()
}

fn as_sql(param: &Param) -> &dyn ToSql {
    match param {
        Param::Int(value) => value,
        Param::Text(value) => value,
        Param::Uuid(value) => value,
    }
}

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<EventRecord> {
    Ok(EventRecord {
        seq: row.get(0)?,
        id: row.get(1)?,
        at: row.get(2)?,
        actor_kind: row.get(3)?,
        actor_id: row.get(4)?,
        actor_user_id: row.get(5)?,
        action: row.get(6)?,
        subject_kind: row.get(7)?,
        subject_id: row.get(8)?,
        changes: row.get(9)?,
        client_address: row.get(10)?,
        request_id: row.get(11)?,
        prev_hash: row.get(12)?,
        hash: row.get(13)?,
    })
}
