//! [`Store::import`](ferrozone_domain::Store::import) on PostgreSQL: one transaction that
//! first locks the users and devices tables against writes (so that what it looked up stays
//! true until it commits), then inserts in multi-row statements of [`CHUNK`] rows.
//! The triggers of migrations 0002, 0003, 0008 and 0009 keep the device counts and notify
//! the running processes at commit, as for any other write.

use std::collections::HashSet;

use ferrozone_domain::egress::Rule;
use ferrozone_domain::error::Result;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome};
use sqlx::PgConnection;
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::rows::from_row;
use super::{to_completion, PgStore};
use crate::columns::Columns;
use crate::import::{insert_many, plan, refuse_fresh, token_row, Plan, Taken, TotpRow, Unique, CHUNK};
use crate::rows::{decode_all, DeviceRow, OidcConnectionRow, RuleRow, StatsRow, UserRow};
use crate::sql;

use ferrozone_domain::audit::{changes, context};

use super::super::audit;

const CONTEXT: &str = "import";

/// Other writers of these tables wait for the import; readers do not.
const LOCK: &str = "LOCK TABLE users, devices IN SHARE ROW EXCLUSIVE MODE";

impl PgStore {
    pub(super) async fn import_batch(&self, batch: &ImportBatch, mode: ImportMode) -> Result<ImportOutcome> {
        let (pool, batch) = (self.pool.clone(), batch.clone());
        let (sealer, audit) = (self.sealer.clone(), context::current());
        to_completion(async move {
            let mut tx = pool.begin().await.or_db(CONTEXT)?;
            sqlx::query(LOCK).execute(&mut *tx).await.or_db(CONTEXT)?;
            let taken = taken(&mut tx, &batch).await?;
            refuse_fresh(&taken, mode)?;
            let plan = plan(&batch, &taken);
            write(&mut tx, &plan).await?;
            let outcome = plan.outcome();
            // One event for the whole import.
            audit::append(&mut tx, &audit.record(changes::import_completed(&outcome))).await?;
            tx.commit().await.or_db(CONTEXT)?;
            sealer.notify_one();
            Ok(outcome)
        })
        .await
    }
}

/// What the database holds of the batch's keys: one `= ANY` look-up per key.
async fn taken(conn: &mut PgConnection, batch: &ImportBatch) -> Result<Taken> {
    let has_users = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users)").fetch_one(&mut *conn).await;
    let has_devices = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM devices)").fetch_one(&mut *conn).await;
    let mut taken =
        Taken { has_users: has_users.or_db(CONTEXT)?, has_devices: has_devices.or_db(CONTEXT)?, ..Taken::default() };
    for key in Unique::ALL {
        let (table, column) = key.column();
        let wanted = key.wanted(batch);
        let statement = format!("SELECT {column} FROM {table} WHERE {column} = ANY($1)");
        let found: HashSet<String> = if key.is_id() {
            let ids: Vec<Uuid> = wanted.iter().filter_map(|v| v.parse().ok()).collect();
            let rows: Vec<Uuid> =
                sqlx::query_scalar(&statement).bind(ids).fetch_all(&mut *conn).await.or_db(CONTEXT)?;
            rows.iter().map(Uuid::to_string).collect()
        } else {
            let rows: Vec<String> =
                sqlx::query_scalar(&statement).bind(wanted).fetch_all(&mut *conn).await.or_db(CONTEXT)?;
            rows.into_iter().collect()
        };
        taken.found.insert(key, found);
    }
    let rules = sqlx::query(sql::LIST_RULES).try_map(from_row::<RuleRow>).fetch_all(&mut *conn).await;
    taken.rules = decode_all::<_, Rule>(rules.or_db(CONTEXT)?)?;
    Ok(taken)
}

/// Writes the plan's rows; the device triggers keep the owners' device counts.
async fn write(conn: &mut PgConnection, plan: &Plan<'_>) -> Result<()> {
    let users: Vec<UserRow> = plan.users.iter().map(|u| UserRow::from(*u)).collect();
    insert_all(conn, &users, "import users").await?;
    let devices = plan.devices.iter().map(|d| DeviceRow::encode(d)).collect::<Result<Vec<_>>>()?;
    insert_all(conn, &devices, "import devices").await?;
    let stats: Vec<StatsRow> = plan.devices.iter().filter_map(|d| StatsRow::of(d)).collect();
    insert_all(conn, &stats, "import device statistics").await?;
    let tokens: Vec<_> = plan.tokens.iter().map(|t| token_row(t)).collect();
    insert_all(conn, &tokens, "import tokens").await?;
    let rules: Vec<RuleRow> = plan.rules.iter().map(|r| RuleRow::from(*r)).collect();
    insert_all(conn, &rules, "import rules").await?;
    let connections: Vec<_> = plan.oidc_connections.iter().map(|c| OidcConnectionRow::from(*c)).collect();
    insert_all(conn, &connections, "import OIDC connections").await?;
    let totp: Vec<TotpRow> = plan.totp.iter().map(|t| TotpRow::from(*t)).collect();
    insert_all(conn, &totp, "import authenticators").await?;
    for (key, value) in plan.settings.iter().copied() {
        let put = sqlx::query(sql::PUT_SETTING).bind(key).bind(value);
        put.execute(&mut *conn).await.or_db("import settings")?;
    }
    Ok(())
}

/// Inserts `rows` in statements of [`CHUNK`] rows each.
async fn insert_all<R: Columns>(conn: &mut PgConnection, rows: &[R], context: &'static str) -> Result<()> {
    for chunk in rows.chunks(CHUNK) {
        let statement = insert_many::<R>(chunk.len());
        // Built for this one use: not worth a place in the connection's statement cache.
        let mut insert = sqlx::query(&statement).persistent(false);
        for row in chunk {
            insert = row.bind_insert(insert);
        }
        insert.execute(&mut *conn).await.or_db(context)?;
    }
    Ok(())
}
