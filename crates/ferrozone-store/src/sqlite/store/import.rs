//! [`Store::import`](ferrozone_domain::Store::import) on SQLite: one job of the writer,
//! so one savepoint of its transaction. Prepared statements, one row at a time: with the
//! write lock held and no round trips, that is as fast as SQLite inserts go.

use std::collections::HashSet;

use ferrozone_domain::audit::changes;
use ferrozone_domain::egress::Rule;
use ferrozone_domain::error::Result;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome};
use rusqlite::{params, Connection, ToSql};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::{prepare, prepare_built, rows};
use super::SqliteStore;
use crate::columns::Columns;
use crate::import::{insert_many, plan, refuse_fresh, token_row, Plan, Taken, TotpRow, Unique};
use crate::rows::{decode_all, DeviceRow, OidcConnectionRow, RuleRow, StatsRow, UserRow};
use crate::sql;

const CONTEXT: &str = "import";

impl SqliteStore {
    pub(super) async fn import_batch(&self, batch: &ImportBatch, mode: ImportMode) -> Result<ImportOutcome> {
        let batch = batch.clone();
        self.write(move |tx| {
            let conn = tx.conn();
            let taken = taken(conn, &batch)?;
            refuse_fresh(&taken, mode)?;
            let plan = plan(&batch, &taken);
            write(conn, &plan)?;
            let outcome = plan.outcome();
            tx.append(changes::import_completed(&outcome))?;
            Ok(outcome)
        })
        .await
    }
}

/// What the database holds of the batch's keys.
fn taken(conn: &Connection, batch: &ImportBatch) -> Result<Taken> {
    let exists = |table: &str| {
        conn.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |row| row.get::<_, bool>(0))
            .or_db(CONTEXT)
    };
    let mut taken = Taken { has_users: exists("users")?, has_devices: exists("devices")?, ..Taken::default() };
    for key in Unique::ALL {
        let (table, column) = key.column();
        let mut probe = prepare_built(conn, &format!("SELECT 1 FROM {table} WHERE {column} = $1")).or_db(CONTEXT)?;
        let mut found = HashSet::new();
        for value in key.wanted(batch) {
            let hit = match key.is_id() {
                true => value.parse::<Uuid>().ok().map(|id| probe.exists([id])).transpose(),
                false => probe.exists([&value]).map(Some),
            };
            if hit.or_db(CONTEXT)? == Some(true) {
                found.insert(value);
            }
        }
        taken.found.insert(key, found);
    }
    let rules = prepare(conn, sql::LIST_RULES)
        .and_then(|mut stmt| stmt.query_map([], rows::rule)?.collect::<rusqlite::Result<Vec<_>>>())
        .or_db(CONTEXT)?;
    taken.rules = decode_all::<_, Rule>(rules)?;
    Ok(taken)
}

/// Writes the plan's rows; the device triggers keep the owners' device counts.
fn write(conn: &Connection, plan: &Plan<'_>) -> Result<()> {
    insert_all(conn, plan.users.iter().map(|u| Ok(UserRow::from(*u))), "import users")?;
    insert_all(conn, plan.devices.iter().map(|d| DeviceRow::encode(d)), "import devices")?;
    insert_all(conn, plan.devices.iter().filter_map(|d| StatsRow::of(d)).map(Ok), "import device statistics")?;
    insert_all(conn, plan.tokens.iter().map(|t| Ok(token_row(t))), "import tokens")?;
    insert_all(conn, plan.rules.iter().map(|r| Ok(RuleRow::from(*r))), "import rules")?;
    let connections = plan.oidc_connections.iter().map(|c| Ok(OidcConnectionRow::from(*c)));
    insert_all(conn, connections, "import OIDC connections")?;
    insert_all(conn, plan.totp.iter().map(|t| Ok(TotpRow::from(*t))), "import authenticators")?;
    let mut put = prepare(conn, sql::PUT_SETTING).or_db("import settings")?;
    for (key, value) in plan.settings.iter() {
        put.execute(params![key, value]).or_db("import settings")?;
    }
    Ok(())
}

/// Inserts every row with one prepared statement.
fn insert_all<R: Columns>(
    conn: &Connection,
    rows: impl Iterator<Item = Result<R>>,
    context: &'static str,
) -> Result<()> {
    let mut insert = prepare_built(conn, &insert_many::<R>(1)).or_db(context)?;
    for row in rows {
        let row = row?;
        let args: Vec<&dyn ToSql> = rows::insert_args(&row);
        insert.execute(args.as_slice()).or_db(context)?;
    }
    Ok(())
}
