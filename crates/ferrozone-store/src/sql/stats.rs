//! Statistics from gateways (ferrozone_domain::store::Store::record_stats_from), shared by
//! both backends: traffic summed per gateway from its counters, the newest handshake winning.

use ferrozone_domain::model::StatsReport;

/// How much a counter grew since the same gateway's `previous` report: the difference, or
/// the whole counter when there was none or it went down (the interface was recreated and
/// counts from zero again).
pub(crate) fn increase(previous: Option<i64>, now: i64) -> i64 {
    match previous {
        Some(previous) if now >= previous => now - previous,
        _ => now,
    }
}

/// Reports in public-key order, one per key (the last one sent): a batch writes each row
/// once, and two gateways writing overlapping batches lock rows in the same order.
pub(crate) fn ordered(mut reports: Vec<StatsReport>) -> Vec<StatsReport> {
    reports.reverse();
    reports.sort_by(|a, b| a.public_key.cmp(&b.public_key));
    reports.dedup_by(|a, b| a.public_key == b.public_key);
    reports
}

/// A gateway's last counters of a peer: `$1` the gateway, `$2` the key.
pub(crate) const LAST_COUNTERS: &str =
    "SELECT rx_bytes, tx_bytes FROM peer_counters WHERE source = $1 AND public_key = $2";

/// Replaces a gateway's counters of a peer it reported before (`$1` the gateway, `$2` the
/// key, `$3`, `$4` the counters): the statement of every report after the first.
pub(crate) const UPDATE_COUNTERS: &str =
    "UPDATE peer_counters SET rx_bytes = $3, tx_bytes = $4 WHERE source = $1 AND public_key = $2";

/// A device's row with a report's increase added (`$1` the key, `$2` the handshake, `$3` the
/// address, `$4`, `$5` the increases): the statement of every report after the device's first.
pub(crate) const UPDATE_STATS: &str = "UPDATE device_stats SET \
     rx_bytes = COALESCE(rx_bytes, 0) + $4, tx_bytes = COALESCE(tx_bytes, 0) + $5, \
     remote_ip = CASE WHEN latest_handshake IS NULL OR $2 >= latest_handshake THEN $3 ELSE remote_ip END, \
     latest_handshake = MAX(COALESCE(latest_handshake, $2), $2) WHERE public_key = $1";

/// Keeps a gateway's first counters of a peer, for a device that exists (else nothing changes).
pub(crate) const KEEP_COUNTERS: &str = "INSERT INTO peer_counters (source, public_key, rx_bytes, tx_bytes) \
     SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM devices WHERE public_key = $2) \
     ON CONFLICT (source, public_key) DO UPDATE SET rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes";

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

/// One report's increase added to its device's row (SQLite, a statement per report).
pub(crate) const ADD_STATS_SQLITE: &str = concat!(
    "INSERT INTO device_stats (public_key, latest_handshake, remote_ip, rx_bytes, tx_bytes) \
     VALUES ($1, $2, $3, $4, $5)",
    add_stats_set!("MAX")
);

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
    fn a_counter_that_went_down_counts_whole() {
        assert_eq!(increase(None, 50), 50, "a gateway's first report");
        assert_eq!(increase(Some(50), 80), 30);
        assert_eq!(increase(Some(80), 80), 0);
        assert_eq!(increase(Some(80), 20), 20, "the interface was recreated");
    }

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
