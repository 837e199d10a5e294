//! [`Store::token_and_device`](ferrozone_domain::Store::token_and_device) on PostgreSQL:
//! the reads waiting at one moment answered by one statement (see [`crate::coalesce`]).

use ferrozone_domain::error::Result;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgPool, Row};
use uuid::Uuid;

use super::store::device_at;
use crate::coalesce::{fail_all, Coalescer};
use crate::errors::{db_error, OrDb};
use crate::rows::{token_and_device, PointReads, Question, TokenAndDevice, TokenUserRow, CONTEXT};
use crate::sql::{self, token_and_device_columns};

/// [`sql::TOKEN_AND_DEVICE`] for many `(token hash, device id)` pairs. `n` is a question's
/// position in the arrays (from 1); a question whose token does not exist has no row.
const TOKENS_AND_DEVICES: &str = concat!(
    token_and_device_columns!(),
    ", r.n FROM unnest($1::bytea[], $2::uuid[]) WITH ORDINALITY AS r (token_hash, device_id, n) \
     JOIN api_tokens t ON t.token_hash = r.token_hash JOIN users u ON u.id = t.user_id \
     LEFT JOIN devices d ON d.id = r.device_id"
);

/// Starts the reader task, reading through `pool`.
pub(crate) fn start(pool: PgPool) -> PointReads {
    Coalescer::start(Box::new(move |batch: Vec<Question>| {
        let pool = pool.clone();
        Box::pin(async move {
            match read_batch(&pool, &batch).await {
                Ok(answers) => answers,
                Err(err) => fail_all(db_error(err, CONTEXT), batch.len()),
            }
        })
    }))
}

/// The answers to `batch`, in its order. A question whose token was not found has no row,
/// so its answer stays `(None, None)`.
async fn read_batch(pool: &PgPool, batch: &[Question]) -> sqlx::Result<Vec<Result<TokenAndDevice>>> {
    let hashes: Vec<&[u8]> = batch.iter().map(|(hash, _)| hash.as_slice()).collect();
    let ids: Vec<Uuid> = batch.iter().map(|&(_, id)| id).collect();
    let rows = sqlx::query(TOKENS_AND_DEVICES).bind(hashes).bind(ids).fetch_all(pool).await?;
    let mut answers: Vec<Result<TokenAndDevice>> = batch.iter().map(|_| Ok((None, None))).collect();
    for row in &rows {
        let n: i64 = row.try_get("n")?;
        let slot = usize::try_from(n - 1).ok().and_then(|i| answers.get_mut(i));
        let slot = slot.ok_or_else(|| sqlx::Error::Protocol(format!("a row for question {n} of {}", batch.len())))?;
        *slot = decode(row);
    }
    Ok(answers)
}

/// One question's answer from its row of [`TOKENS_AND_DEVICES`].
fn decode(row: &PgRow) -> Result<TokenAndDevice> {
    let token = TokenUserRow::from_row(row).or_db(CONTEXT)?;
    let device = device_at(row, sql::TOKEN_AND_DEVICE_DEVICE_AT).or_db(CONTEXT)?;
    token_and_device(token, device)
}
