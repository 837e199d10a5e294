//! The audit log on PostgreSQL ([`ferrozone_domain::audit`]).
//!
//! A write appends its event *pending*, in its own transaction and without touching the
//! chain's head: no seq, no hashes, only `pos`, its place in append order. Writers in every
//! process so commit side by side, and PostgreSQL flushes their commits together.
//!
//! [`seal`] then numbers and chains the committed pending events: in a transaction that
//! holds the head row (`FOR UPDATE`), it reads a batch in `pos` order, gives each the next
//! seq and its hash, and moves the head. Sealers take turns on the head row, across
//! processes; the second finds nothing left. An event whose transaction commits after a
//! later one was sealed is sealed after it, with the next seq: seqs follow seal order, with
//! no gap, and each seal's seqs are larger than every one committed before, so a reader
//! following the log by seq misses nothing. Who seals: every read of the log (first, so
//! that a caller reads its own writes), and each process's sealer task, woken by its own
//! commits and polling for other processes' ([`keep_sealed`]).

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::audit::{pruned_event, AuditHead, AuditKey, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::error::Result;
use sqlx::postgres::PgArguments;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool, Postgres, Row};
use tokio::sync::Notify;

use super::errors::OrDb;
use crate::sql::audit::{self as sql, Param};

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

const LOCK_HEAD: &str =
    "SELECT last_seq, last_hash, pruned_seq, pruned_hash, seal FROM audit_head WHERE id = 1 FOR UPDATE";

const INSERT_PENDING: &str = "INSERT INTO audit_events (id, at, actor_kind, actor_id, actor_user_id, action, \
     subject_kind, subject_id, changes, client_address, request_id) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// One probe of the (partial, usually empty) index of pending events.
const ANY_PENDING: &str = "SELECT EXISTS (SELECT 1 FROM audit_events WHERE seq IS NULL)";

const COUNT_PENDING: &str = "SELECT count(*) FROM audit_events WHERE seq IS NULL";

/// The oldest committed pending events, a batch at most ($1): `pos` and the columns of
/// an [`EventRecord`] (seq and hashes to come).
const PENDING: &str = "SELECT pos, id, at, actor_kind, actor_id, actor_user_id, action, subject_kind, \
     subject_id, changes, client_address, request_id \
     FROM audit_events WHERE seq IS NULL ORDER BY pos LIMIT $1";

/// Seals a batch in one statement: the events at `pos` ($1) get their seq ($2) and hashes.
const SEAL: &str = "UPDATE audit_events AS e SET seq = s.seq, prev_hash = s.prev_hash, hash = s.hash \
     FROM unnest($1::bigint[], $2::bigint[], $3::bytea[], $4::bytea[]) AS s(pos, seq, prev_hash, hash) \
     WHERE e.pos = s.pos";

/// The most events one seal transaction chains: a batch holds the head row only briefly.
const SEAL_BATCH: usize = 1000;

/// How often a process's sealer looks for events other processes committed but did not
/// seal (a process that stopped right after its commit). Its own commits wake it at once.
const POLL: Duration = Duration::from_secs(1);

/// The least time between two seals of a process's sealer. Under a stream of writes each
/// seal then takes what gathered meanwhile: one transaction, and one commit flushed, for
/// many events rather than one or two. Nobody waits for it: a read of the log seals first.
const SPACING: Duration = Duration::from_millis(50);

/// Appends `event`, pending, inside the caller's transaction. Takes no lock: the event is
/// chained by a later [`seal`].
pub(crate) async fn append(tx: &mut PgConnection, event: &NewAuditEvent) -> Result<()> {
    let record = EventRecord::pending(event);
    bind_event(sqlx::query(INSERT_PENDING), &record).execute(tx).await.or_db("append an audit event")?;
    Ok(())
}

/// Seals every event committed so far that is still pending, a batch per transaction, and
/// returns how many. With nothing pending, one probe of the pending index.
pub(crate) async fn seal(pool: &PgPool, key: &AuditKey) -> Result<u64> {
    let any: bool = sqlx::query_scalar(ANY_PENDING).fetch_one(pool).await.or_db("look for pending audit events")?;
    if !any {
        return Ok(0);
    }
    let mut sealed = 0;
    loop {
        let batch = seal_batch(pool, key).await?;
        sealed += batch as u64;
        if batch < SEAL_BATCH {
            return Ok(sealed);
        }
    }
}

/// One seal transaction: the head row, then up to [`SEAL_BATCH`] pending events after it.
async fn seal_batch(pool: &PgPool, key: &AuditKey) -> Result<usize> {
    const CONTEXT: &str = "seal audit events";
    let mut tx = pool.begin().await.or_db(CONTEXT)?;
    let head = sqlx::query(LOCK_HEAD).try_map(head_row).fetch_one(&mut *tx).await.or_db(CONTEXT)?;
    // Read after the head is ours: a sealer before us has committed, and what it sealed is
    // no longer pending.
    let pending =
        sqlx::query(PENDING).bind(SEAL_BATCH as i64).try_map(pending_row).fetch_all(&mut *tx).await.or_db(CONTEXT)?;
    if pending.is_empty() {
        tx.commit().await.or_db(CONTEXT)?;
        return Ok(0);
    }
    let (mut seq, mut prev_hash) = (head.last_seq, head.last_hash);
    let mut columns = SealColumns::default();
    for (pos, mut record) in pending {
        seq += 1;
        record.chain(key, seq, prev_hash);
        prev_hash = sql::hash32(record.hash.clone());
        columns.push(pos, record);
    }
    let count = columns.pos.len();
    sqlx::query(SEAL)
        .bind(columns.pos)
        .bind(columns.seq)
        .bind(columns.prev_hash)
        .bind(columns.hash)
        .execute(&mut *tx)
        .await
        .or_db(CONTEXT)?;
    write_head(&mut tx, &head.moved_to(key, head.with_last(seq, prev_hash))).await.or_db(CONTEXT)?;
    tx.commit().await.or_db(CONTEXT)?;
    Ok(count)
}

/// A sealed batch as the arrays [`SEAL`] unnests.
#[derive(Default)]
struct SealColumns {
    pos: Vec<i64>,
    seq: Vec<i64>,
    prev_hash: Vec<Vec<u8>>,
    hash: Vec<Vec<u8>>,
}

impl SealColumns {
    fn push(&mut self, pos: i64, record: EventRecord) {
        self.pos.push(pos);
        self.seq.push(record.seq);
        self.prev_hash.push(record.prev_hash);
        self.hash.push(record.hash);
    }
}

/// How many committed events wait to be sealed.
pub(crate) async fn pending(pool: &PgPool) -> Result<u64> {
    let n: i64 = sqlx::query_scalar(COUNT_PENDING).fetch_one(pool).await.or_db("count pending audit events")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Seals whenever `appended` is notified (after a commit of this process that appended an
/// event) and every [`POLL`], forever. A failed seal is logged; the next one retries.
pub(crate) async fn keep_sealed(pool: &PgPool, key: &AuditKey, appended: &Arc<Notify>) {
    loop {
        tokio::select! {
            _ = appended.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
        if let Err(error) = seal(pool, key).await {
            tracing::warn!(%error, "sealing audit events failed");
        }
        // A commit meanwhile leaves its wake-up stored: the next seal follows this pause.
        tokio::time::sleep(SPACING).await;
    }
}

/// Removes up to `max` of the oldest events older than `before_micros`, moves the head's
/// pruned mark to the last one removed and chains the `audit.pruned` event that vouches
/// for it right after the head (sealed at once: the head is held), inside the caller's
/// transaction. The head row is locked first, as a seal does: a second pruner reads the
/// events the first one left. Returns how many were removed.
pub(crate) async fn prune(tx: &mut PgConnection, key: &AuditKey, before_micros: i64, max: u32) -> Result<u64> {
    const CONTEXT: &str = "prune audit events";
    let head = sqlx::query(LOCK_HEAD).try_map(head_row).fetch_one(&mut *tx).await.or_db(CONTEXT)?;
    let oldest: Vec<sql::Oldest> =
        sqlx::query_as(sql::OLDEST).bind(i64::from(max)).fetch_all(&mut *tx).await.or_db(CONTEXT)?;
    let Some((seq, _, hash)) = sql::prune_end(&oldest, before_micros) else { return Ok(0) };
    let (seq, hash) = (*seq, sql::hash32(hash.clone()));
    let removed = sqlx::query(sql::DELETE_THROUGH).bind(seq).execute(&mut *tx).await.or_db(CONTEXT)?.rows_affected();
    let record = EventRecord::seal(key, head.last_seq + 1, head.last_hash, &pruned_event(seq, &hash, removed));
    insert_sealed(&mut *tx, &record).await.or_db(CONTEXT)?;
    let next = head.with_pruned(seq, hash).with_last(record.seq, sql::hash32(record.hash));
    write_head(&mut *tx, &head.moved_to(key, next)).await.or_db(CONTEXT)?;
    Ok(removed)
}

/// Inserts an event already chained (seq and hashes given), as retention's own.
async fn insert_sealed(tx: &mut PgConnection, record: &EventRecord) -> sqlx::Result<()> {
    // INSERT_EVENT's columns: seq, the event's own (as a pending one's), then the hashes.
    bind_event(sqlx::query(sql::INSERT_EVENT).bind(record.seq), record)
        .bind(&record.prev_hash)
        .bind(&record.hash)
        .execute(tx)
        .await?;
    Ok(())
}

/// Binds the columns an event has before it is chained, in [`INSERT_PENDING`]'s order.
pub(crate) fn bind_event<'q>(query: PgQuery<'q>, record: &'q EventRecord) -> PgQuery<'q> {
    query
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
}

async fn write_head(tx: &mut PgConnection, head: &AuditHead) -> sqlx::Result<()> {
    let (last_seq, last_hash, pruned_seq, pruned_hash, seal) = sql::head_columns(head);
    sqlx::query(sql::WRITE_HEAD)
        .bind(last_seq)
        .bind(last_hash)
        .bind(pruned_seq)
        .bind(pruned_hash)
        .bind(seal)
        .execute(tx)
        .await?;
    Ok(())
}

pub(crate) async fn head(conn: &mut PgConnection) -> Result<AuditHead> {
    sqlx::query(sql::HEAD).try_map(head_row).fetch_one(conn).await.or_db("read the audit head")
}

/// The sealed events `query` selects.
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
        seal: row.try_get::<Option<Vec<u8>>, _>(4)?.map(sql::hash32),
    })
}

/// A row of [`PENDING`]: its `pos` and its record, unsealed.
fn pending_row(row: PgRow) -> sqlx::Result<(i64, EventRecord)> {
    Ok((row.try_get(0)?, event(&row)?))
}

fn record(row: PgRow) -> sqlx::Result<EventRecord> {
    Ok(EventRecord { seq: row.try_get(0)?, prev_hash: row.try_get(12)?, hash: row.try_get(13)?, ..event(&row)? })
}

/// What a sealed and a pending row hold alike: the event after the first column (a
/// seq, or a pending event's pos), with no seq and no hashes yet.
fn event(row: &PgRow) -> sqlx::Result<EventRecord> {
    Ok(EventRecord {
        seq: 0,
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
        prev_hash: Vec::new(),
        hash: Vec::new(),
    })
}
