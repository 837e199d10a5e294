//! Statistics from gateways on SQLite ([`crate::sql::stats`]): a batch loaded into the writer
//! connection's scratch table, then two set-based statements, in the writer's transaction.

use ferrozone_domain::error::Result;
use ferrozone_domain::model::StatsReport;
use rusqlite::params;
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
    let conn = tx.conn();
    conn.execute_batch(stats::CREATE_STATS_INPUT_SQLITE).or_db(CONTEXT)?;
    let mut insert = prepare(conn, stats::INSERT_STATS_INPUT_SQLITE).or_db(CONTEXT)?;
    for r in reports {
        insert
            .execute(params![r.public_key, r.latest_handshake.micros(), r.remote_ip, r.rx_bytes, r.tx_bytes])
            .or_db(CONTEXT)?;
    }
    for statement in [stats::ADD_STATS_SQLITE, stats::KEEP_COUNTERS_SQLITE] {
        prepare(conn, statement).and_then(|mut stmt| stmt.execute(params![source])).or_db(CONTEXT)?;
    }
    prepare(conn, stats::CLEAR_STATS_INPUT_SQLITE).and_then(|mut stmt| stmt.execute([])).or_db(CONTEXT)?;
    Ok(())
}
