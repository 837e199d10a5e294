//! Statistics from gateways on SQLite ([`crate::sql::stats`]): two statements a batch in the
//! writer's transaction, the reports passed as one JSON array.

use ferrozone_domain::error::Result;
use ferrozone_domain::model::StatsReport;
use rusqlite::params;
use serde_json::json;
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::super::tx::SqliteTx;
use crate::sql::stats;

const CONTEXT: &str = "record peer statistics";

/// Records `reports` (one per key) of gateway `source` in `tx`: the increases first (they
/// read the previous counters), then the counters.
pub(super) fn record(tx: &mut SqliteTx<'_>, source: Uuid, reports: &[StatsReport]) -> Result<()> {
    if reports.is_empty() {
        return Ok(());
    }
    let batch: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            json!({"k": r.public_key, "h": r.latest_handshake.micros(), "ip": r.remote_ip,
                   "rx": r.rx_bytes, "tx": r.tx_bytes})
        })
        .collect();
    let batch = serde_json::Value::Array(batch).to_string();
    prepare(tx.conn(), stats::ADD_STATS_SQLITE)
        .and_then(|mut stmt| stmt.execute(params![source, batch]))
        .or_db(CONTEXT)?;
    prepare(tx.conn(), stats::KEEP_COUNTERS_SQLITE)
        .and_then(|mut stmt| stmt.execute(params![source, batch]))
        .or_db(CONTEXT)?;
    Ok(())
}
