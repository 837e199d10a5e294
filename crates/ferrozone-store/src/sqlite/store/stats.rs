//! Statistics from gateways on SQLite ([`crate::sql::stats`]): a few statements per report
//! in the writer's transaction, plain updates of existing rows in the common case (a report
//! after the first), which cost far less than an insert that conflicts.

use ferrozone_domain::error::Result;
use ferrozone_domain::model::StatsReport;
use rusqlite::{params, OptionalExtension};
use uuid::Uuid;

use super::super::errors::OrDb;
use super::super::prepare;
use super::super::tx::SqliteTx;
use crate::sql::stats;

const CONTEXT: &str = "record peer statistics";

/// Records `reports` (one per key) of gateway `source` in `tx`.
pub(super) fn record(tx: &mut SqliteTx<'_>, source: Uuid, reports: &[StatsReport]) -> Result<()> {
    let mut last = prepare(tx.conn(), stats::LAST_COUNTERS).or_db(CONTEXT)?;
    let mut update_counters = prepare(tx.conn(), stats::UPDATE_COUNTERS).or_db(CONTEXT)?;
    let mut first_counters = prepare(tx.conn(), stats::KEEP_COUNTERS).or_db(CONTEXT)?;
    let mut update_stats = prepare(tx.conn(), stats::UPDATE_STATS).or_db(CONTEXT)?;
    let mut first_stats = prepare(tx.conn(), stats::ADD_STATS_SQLITE).or_db(CONTEXT)?;
    for r in reports {
        let previous: Option<(i64, i64)> = last
            .query_row(params![source, r.public_key], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()
            .or_db(CONTEXT)?;
        let counters = params![source, r.public_key, r.rx_bytes, r.tx_bytes];
        let kept = match previous {
            Some(_) => update_counters.execute(counters),
            None => first_counters.execute(counters),
        };
        if kept.or_db(CONTEXT)? == 0 {
            continue; // no device has this key (deleted since the interface was read)
        }
        let rx = stats::increase(previous.map(|p| p.0), r.rx_bytes);
        let tx_bytes = stats::increase(previous.map(|p| p.1), r.tx_bytes);
        let row = params![r.public_key, r.latest_handshake.micros(), r.remote_ip, rx, tx_bytes];
        if update_stats.execute(row).or_db(CONTEXT)? == 0 {
            first_stats.execute(row).or_db(CONTEXT)?;
        }
    }
    Ok(())
}
