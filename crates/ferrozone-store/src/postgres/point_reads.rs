//! [`Store::token_and_device`](ferrozone_domain::Store::token_and_device) on PostgreSQL:
//! the reads waiting at one moment answered by one statement (see [`crate::coalesce`]).

use ferrozone_domain::error::Result;
use sqlx::postgres::{PgConnectOptions, PgRow};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use super::errors::{db_error, OrDb};
use super::rows;
use crate::coalesce::{fail_all, Coalescer};
use crate::rows::{token_and_device, DeviceRow, PointReads, Question, TokenAndDevice, TokenRow, UserRow, CONTEXT};
use crate::sql::sql;

/// [`crate::sql::TOKEN_AND_DEVICE`] for many `(token hash, device id)` pairs. `n` is a
/// question's position in the arrays (from 1); a question whose token does not exist has no row.
const TOKENS_AND_DEVICES: &str = sql![
    "SELECT ",
    (aliased TokenRow),
    ", ",
    (aliased UserRow),
    ", ",
    (aliased DeviceRow),
    ", r.n FROM unnest($1::bytea[], $2::uuid[]) WITH ORDINALITY AS r (token_hash, device_id, n) \
     JOIN api_tokens t ON t.token_hash = r.token_hash JOIN users u ON u.id = t.user_id \
     LEFT JOIN devices d ON d.id = r.device_id",
    (join DeviceRow)
];

/// Planner settings of the point reader's connection: index probes, never a scan of a whole
/// table. PostgreSQL caches a generic plan per connection after a few executions, planned
/// with the statistics of that moment, and keeps it until the next `ANALYZE` of a table it
/// reads. Planned while `devices` or `api_tokens` was small, that plan was a hash join over a
/// sequential scan of the table, and it stayed after the table grew tenfold until autovacuum
/// analysed it, leaving `get` at a fraction of its rate at other sizes (docs/benchmarks.md,
/// "Where the time goes"). These settings make any scan dearer than any probe, so the plan
/// is the same at every size. Bitmap scans are off too: on tables never analysed, the
/// estimate of a table's size (and so the choice between a bitmap heap scan and a plain
/// index scan) depended on what other tests had written, and a batch of a few ids wants
/// the plain probe.
const PLANNER: [(&str, &str); 4] =
    [("enable_seqscan", "off"), ("enable_bitmapscan", "off"), ("enable_hashjoin", "off"), ("enable_mergejoin", "off")];

/// `connect` with [`PLANNER`]: the options of the point reader's connection.
pub(super) fn connect_options(connect: PgConnectOptions) -> PgConnectOptions {
    connect.options(PLANNER)
}

/// Starts the reader task, reading through `pool` (one connection of [`connect_options`]).
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
    let (token, device) = rows::token_and_device(row).or_db(CONTEXT)?;
    token_and_device(token, device)
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use sqlx::{Connection, PgConnection};

    use super::*;
    use crate::testing;

    /// The generic plan, as a connection caches it, on empty tables that were never analysed:
    /// the state a plan made at start-up is in when the tables grow.
    #[tokio::test]
    async fn a_batch_probes_indexes_even_on_tables_never_analysed() {
        let db = testing::fresh().await.unwrap();
        if db.backend != "postgres" {
            return; // a PostgreSQL planner test; the SQLite run has nothing to check
        }
        let options = connect_options(PgConnectOptions::from_str(&db.url).unwrap());
        let mut conn = PgConnection::connect_with(&options).await.unwrap();
        let prepare = format!("PREPARE batch (bytea[], uuid[]) AS {TOKENS_AND_DEVICES}");
        sqlx::raw_sql(&prepare).execute(&mut conn).await.unwrap();
        sqlx::raw_sql("SET plan_cache_mode = force_generic_plan").execute(&mut conn).await.unwrap();
        let rows = sqlx::raw_sql("EXPLAIN EXECUTE batch (NULL, NULL)").fetch_all(&mut conn).await.unwrap();
        let plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        let plan = plan.join("\n");
        for table in ["api_tokens", "users", "devices"] {
            assert!(plan.contains(&format!("Index Scan using {table}_")), "{table} is not probed:\n{plan}");
        }
        assert!(!plan.contains("Seq Scan") && !plan.contains("Hash"), "{plan}");
    }
}
