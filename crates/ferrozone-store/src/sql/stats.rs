//! Statistics from gateways (ferrozone_domain::store::Store::record_stats_from), shared by
//! both backends: traffic summed per gateway from its counters, the newest handshake winning.
//! A report adds its counter's increase over the same gateway's previous report, or the
//! whole counter when there was none or it went down (the interface was recreated and
//! counts from zero again). Each backend writes a batch in two set-based statements' worth
//! of work: the increases (reading the previous counters), then the counters.

use ferrozone_domain::model::StatsReport;

/// Reports in public-key order, one per key (the last one sent): a batch writes each row
/// once, and two gateways writing overlapping batches lock rows in the same order.
pub(crate) fn ordered(mut reports: Vec<StatsReport>) -> Vec<StatsReport> {
    reports.reverse();
    reports.sort_by(|a, b| a.public_key.cmp(&b.public_key));
    reports.dedup_by(|a, b| a.public_key == b.public_key);
    reports
}

/// What a device's row becomes with a report: traffic added, the newer handshake and its
/// address kept. `GREATEST` is SQLite's `MAX` (two arguments); the backends substitute it.
macro_rules! add_stats_set {
    ($greatest:literal) => {
        concat!(
            " ON CONFLICT (public_key) DO UPDATE SET \
             rx_bytes = COALESCE(device_stats.rx_bytes, 0) + excluded.rx_bytes, \
             tx_bytes = COALESCE(device_stats.tx_bytes, 0) + excluded.tx_bytes, \
             remote_ip = CASE WHEN device_stats.latest_handshake IS NULL \
             OR excluded.latest_handshake >= device_stats.latest_handshake \
             THEN excluded.remote_ip ELSE device_stats.remote_ip END, \
             latest_handshake = ",
            $greatest,
            "(COALESCE(device_stats.latest_handshake, excluded.latest_handshake), excluded.latest_handshake)"
        )
    };
}

/// The writer connection's scratch table a batch is loaded into (SQLite), one row a report,
/// emptied after each batch. Rows go in by one cached
/// single-row insert each, which needs no statement journal; the batch's two set-based
/// statements then read plain columns. Passing the batch as one JSON text instead cost a
/// third of the work in SQLite's JSON functions, and a statement per report paid the
/// statement journal each time (ten times the rows' work).
pub(crate) const CREATE_STATS_INPUT_SQLITE: &str = "CREATE TEMP TABLE IF NOT EXISTS stats_input \
     (k TEXT NOT NULL, h INTEGER NOT NULL, ip TEXT, rx INTEGER NOT NULL, tx INTEGER NOT NULL)";
pub(crate) const INSERT_STATS_INPUT_SQLITE: &str =
    "INSERT INTO temp.stats_input (k, h, ip, rx, tx) VALUES ($1, $2, $3, $4, $5)";
pub(crate) const CLEAR_STATS_INPUT_SQLITE: &str = "DELETE FROM temp.stats_input";

/// A whole batch's increases added to the devices' rows (SQLite), from `stats_input`; `$1`
/// the gateway.
pub(crate) const ADD_STATS_SQLITE: &str = concat!(
    "INSERT INTO device_stats (public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes) \
     SELECT r.k, r.h, r.ip, \
     CASE WHEN c.rx_bytes IS NULL OR r.rx < c.rx_bytes THEN r.rx ELSE r.rx - c.rx_bytes END, \
     CASE WHEN c.tx_bytes IS NULL OR r.tx < c.tx_bytes THEN r.tx ELSE r.tx - c.tx_bytes END \
     FROM temp.stats_input r LEFT JOIN peer_counters c ON c.source = $1 AND c.public_key = r.k \
     WHERE EXISTS (SELECT 1 FROM devices d WHERE d.public_key = r.k)",
    add_stats_set!("MAX")
);

/// The batch's counters kept as the gateway's last (SQLite), after [`ADD_STATS_SQLITE`] read
/// the previous ones.
pub(crate) const KEEP_COUNTERS_SQLITE: &str = "INSERT INTO peer_counters (source, public_key, rx_bytes, tx_bytes) \
     SELECT $1, r.k, r.rx, r.tx FROM temp.stats_input r \
     WHERE EXISTS (SELECT 1 FROM devices d WHERE d.public_key = r.k) \
     ON CONFLICT (source, public_key) DO UPDATE SET rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes";

/// A whole batch in one statement (PostgreSQL): `$1` the gateway, then the reports' columns
/// as arrays, in key order. Every CTE reads one snapshot, so the increases are computed
/// from the counters before this batch replaces them.
pub(crate) const ADD_STATS_POSTGRES: &str = concat!(
    "WITH input AS (SELECT s.* FROM UNNEST($2::text[], $3::int8[], $4::text[], $5::int8[], $6::int8[]) \
     AS s (public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes) \
     WHERE EXISTS (SELECT 1 FROM devices d WHERE d.public_key = s.public_key)), \
     increase AS (SELECT i.public_key, i.latest_handshake, i.remote_ip, \
     CASE WHEN c.rx_bytes IS NULL OR i.rx_bytes < c.rx_bytes THEN i.rx_bytes ELSE i.rx_bytes - c.rx_bytes END AS rx_bytes, \
     CASE WHEN c.tx_bytes IS NULL OR i.tx_bytes < c.tx_bytes THEN i.tx_bytes ELSE i.tx_bytes - c.tx_bytes END AS tx_bytes \
     FROM input i LEFT JOIN peer_counters c ON c.source = $1 AND c.public_key = i.public_key), \
     counted AS (INSERT INTO peer_counters (source, public_key, rx_bytes, tx_bytes) \
     SELECT $1, public_key, rx_bytes, tx_bytes FROM input ORDER BY public_key \
     ON CONFLICT (source, public_key) DO UPDATE SET rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes) \
     INSERT INTO device_stats (public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes) \
     SELECT * FROM increase ORDER BY public_key",
    add_stats_set!("GREATEST")
);

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::Timestamp;

    #[test]
    fn a_batch_has_one_report_per_key_the_last_sent() {
        let report = |key: &str, rx| StatsReport {
            public_key: key.into(),
            latest_handshake: Timestamp::from_secs(1),
            remote_ip: None,
            rx_bytes: rx,
            tx_bytes: 0,
        };
        let ordered = ordered(vec![report("b", 1), report("a", 2), report("b", 3)]);
        let kept: Vec<(&str, i64)> = ordered.iter().map(|r| (r.public_key.as_str(), r.rx_bytes)).collect();
        assert_eq!(kept, [("a", 2), ("b", 3)]);
    }
}
