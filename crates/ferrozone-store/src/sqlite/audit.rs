//! The audit log on SQLite ([`ferrozone_domain::audit`]). A writer batch gathers the
//! events its jobs append and chains them at its end ([`append_all`]), inside its
//! transaction, which holds the database: the head read there is the last. Each move of
//! the head writes its seal ([`AuditHead::moved_to`]).

use ferrozone_domain::audit::{pruned_event, AuditHead, AuditKey, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use rusqlite::{params, Connection, ToSql};

use super::errors::OrDb;
use super::{prepare, prepare_built};
use crate::sql::audit::{self as sql, Param};

/// Chains `events` after the head, in order, inserts them and moves the head once, sealed,
/// inside the caller's transaction: the end of a writer batch ([`super::writer`]).
pub(crate) fn append_all(conn: &Connection, key: &AuditKey, events: &[NewAuditEvent]) -> Result<()> {
    const CONTEXT: &str = "append audit events";
    if events.is_empty() {
        return Ok(());
    }
    let head = head(conn).or_db(CONTEXT)?;
    let (mut last_seq, mut last_hash) = (head.last_seq, head.last_hash);
    let mut insert = prepare(conn, sql::INSERT_EVENT).or_db(CONTEXT)?;
    for event in events {
        let record = EventRecord::seal(key, last_seq + 1, last_hash, event);
        insert
            .execute(params![
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
            .or_db(CONTEXT)?;
        (last_seq, last_hash) = (record.seq, sql::hash32(record.hash));
    }
    drop(insert);
    write_head(conn, &head.moved_to(key, head.with_last(last_seq, last_hash))).or_db(CONTEXT)
}

/// Removes up to `max` of the oldest events older than `before_micros` and moves the head's
/// pruned mark to the last one removed, inside the caller's (writer) transaction. Returns
/// how many were removed and, when any were, the `audit.pruned` event that vouches for
/// them, for the batch to append.
pub(crate) fn prune(
    conn: &Connection,
    key: &AuditKey,
    before_micros: i64,
    max: u32,
) -> Result<(u64, Option<NewAuditEvent>)> {
    const CONTEXT: &str = "prune audit events";
    let oldest: Vec<sql::Oldest> = prepare(conn, sql::OLDEST)
        .and_then(|mut stmt| {
            let rows = stmt.query_map([i64::from(max)], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect()
        })
        .or_db(CONTEXT)?;
    let Some((seq, _, hash)) = sql::prune_end(&oldest, before_micros) else { return Ok((0, None)) };
    let (seq, hash) = (*seq, sql::hash32(hash.clone()));
    let removed = prepare(conn, sql::DELETE_THROUGH).and_then(|mut stmt| stmt.execute([seq])).or_db(CONTEXT)? as u64;
    let head = head(conn).or_db(CONTEXT)?;
    write_head(conn, &head.moved_to(key, head.with_pruned(seq, hash))).or_db(CONTEXT)?;
    Ok((removed, Some(pruned_event(seq, &hash, removed))))
}

fn write_head(conn: &Connection, head: &AuditHead) -> rusqlite::Result<()> {
    let (last_seq, last_hash, pruned_seq, pruned_hash, seal) = sql::head_columns(head);
    prepare(conn, sql::WRITE_HEAD)?.execute(params![last_seq, last_hash, pruned_seq, pruned_hash, seal])?;
    Ok(())
}

pub(crate) fn head(conn: &Connection) -> rusqlite::Result<AuditHead> {
    prepare(conn, sql::HEAD)?.query_row([], |row| {
        Ok(AuditHead {
            last_seq: row.get(0)?,
            last_hash: sql::hash32(row.get(1)?),
            pruned_seq: row.get(2)?,
            pruned_hash: sql::hash32(row.get(3)?),
            seal: row.get::<_, Option<Vec<u8>>>(4)?.map(sql::hash32),
        })
    })
}

/// The events `query` selects.
pub(crate) fn select(conn: &Connection, query: &AuditQuery) -> rusqlite::Result<Vec<EventRecord>> {
    let (statement, params) = sql::select(query);
    let params: Vec<&dyn ToSql> = params.iter().map(as_sql).collect();
    let mut stmt = prepare_built(conn, &statement)?;
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
