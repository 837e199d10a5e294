//! [`Store::token_and_device`](ferrozone_domain::Store::token_and_device) on SQLite: the
//! reads waiting at one moment answered in one read transaction (see [`crate::coalesce`]),
//! so its WAL read lock is taken once for them all.

use std::sync::Arc;

use ferrozone_domain::error::Result;
use rusqlite::{params, Connection, OptionalExtension};

use super::errors::OrDb;
use super::{prepare, rows, Inner};
use crate::coalesce::{fail_all, Coalescer};
use crate::rows::{token_and_device, DeviceRow, PointReads, Question, TokenAndDevice, TokenUserRow, CONTEXT};
use crate::sql;

/// Starts the reader task, reading through `inner`'s read connections. It reads on the
/// runtime's thread, as every point read does: a batch is a few microseconds a question.
pub(super) fn start(inner: Arc<Inner>) -> PointReads {
    Coalescer::start(Box::new(move |batch: Vec<Question>| {
        let inner = inner.clone();
        Box::pin(async move {
            match inner.read(CONTEXT, |conn| read_batch(conn, &batch)) {
                Ok(rows) => rows.into_iter().map(decode).collect(),
                Err(err) => fail_all(err, batch.len()),
            }
        })
    }))
}

type Found = Option<(TokenUserRow, Option<DeviceRow>)>;

/// The rows of `batch`, in its order, each from [`sql::TOKEN_AND_DEVICE`]. More than one
/// run in a transaction of their own, so they read one snapshot, taken after every
/// question arrived.
fn read_batch(conn: &Connection, batch: &[Question]) -> rusqlite::Result<Vec<rusqlite::Result<Found>>> {
    let read = |conn: &Connection| -> rusqlite::Result<Vec<rusqlite::Result<Found>>> {
        let mut statement = prepare(conn, sql::TOKEN_AND_DEVICE)?;
        let found = |(hash, id): &Question| statement.query_row(params![hash, id], rows::token_and_device).optional();
        Ok(batch.iter().map(found).collect())
    };
    if batch.len() == 1 {
        return read(conn);
    }
    let tx = conn.unchecked_transaction()?;
    let rows = read(&tx)?;
    tx.commit()?;
    Ok(rows)
}

/// One question's answer from its row.
fn decode(row: rusqlite::Result<Found>) -> Result<TokenAndDevice> {
    let Some((token, device)) = row.or_db(CONTEXT)? else { return Ok((None, None)) };
    token_and_device(token, device)
}
