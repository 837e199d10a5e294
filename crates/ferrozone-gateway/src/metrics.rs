//! The data plane's metrics, emitted through the `metrics` facade by the [`crate::reconciler`],
//! the [`crate::stats`] loop and the table keeper: whatever recorder the process installed receives them;
//! with none, they cost next to nothing. Labels are outcomes and states, never a key.

use std::time::{Duration, SystemTime};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Unit};

use crate::peer::ObservedPeer;

/// `ferrozone_peers{state="desired"|"applied"|"online"}`.
pub const PEERS: &str = "ferrozone_peers";
/// `ferrozone_reconcile_passes_total{outcome="ok"|"error"}`.
pub const RECONCILE_PASSES: &str = "ferrozone_reconcile_passes_total";
/// `ferrozone_reconcile_duration_seconds`.
pub const RECONCILE_DURATION: &str = "ferrozone_reconcile_duration_seconds";
/// `ferrozone_stats_cycles_total{outcome="ok"|"error"}`.
pub const STATS_CYCLES: &str = "ferrozone_stats_cycles_total";
/// `ferrozone_stats_cycle_duration_seconds`.
pub const STATS_CYCLE_DURATION: &str = "ferrozone_stats_cycle_duration_seconds";
/// `ferrozone_rules_applied`: the egress rules in the nftables table as last applied.
pub const RULES_APPLIED: &str = "ferrozone_rules_applied";

/// Gives every metric of the data plane its unit and help text. Call once, after the
/// recorder is installed (descriptions sent to no recorder are lost).
pub fn describe() {
    describe_gauge!(
        PEERS,
        Unit::Count,
        "WireGuard peers: desired (the database's, at the last pass), applied (on the interface after the \
         last successful pass), refused (over the backend's limit: wireguard-go holds 65,536), online (a \
         handshake within the last 3 minutes, at the last statistics cycle)."
    );
    describe_counter!(RECONCILE_PASSES, Unit::Count, "Reconciler passes by outcome (ok, error).");
    describe_histogram!(RECONCILE_DURATION, Unit::Seconds, "Time of one reconciler pass, failed ones included.");
    describe_counter!(STATS_CYCLES, Unit::Count, "Statistics cycles by outcome (ok, error).");
    describe_histogram!(
        STATS_CYCLE_DURATION,
        Unit::Seconds,
        "Time of one statistics cycle: reading the interface and writing the changed figures."
    );
    describe_gauge!(
        RULES_APPLIED,
        Unit::Count,
        "Egress rules in the nftables table inet ferrozone, as last found or applied."
    );
}

/// `ok` or `error`, the outcome label of passes and cycles.
fn outcome<T>(result: &anyhow::Result<T>) -> &'static str {
    if result.is_ok() {
        "ok"
    } else {
        "error"
    }
}

/// One reconciler pass ended with `result` after `elapsed`.
pub(crate) fn reconcile_pass<T>(result: &anyhow::Result<T>, elapsed: Duration) {
    counter!(RECONCILE_PASSES, "outcome" => outcome(result)).increment(1);
    histogram!(RECONCILE_DURATION).record(elapsed.as_secs_f64());
}

/// The peers the database wants, as a pass read them.
pub(crate) fn desired_peers(count: usize) {
    gauge!(PEERS, "state" => "desired").set(count as f64);
}

/// The peers the interface cannot take (its backend's limit).
pub(crate) fn refused_peers(count: usize) {
    gauge!(PEERS, "state" => "refused").set(count as f64);
}

/// The peers on the interface after a successful pass.
pub(crate) fn applied_peers(count: usize) {
    gauge!(PEERS, "state" => "applied").set(count as f64);
}

/// One statistics cycle ended with `result` after `elapsed`.
pub(crate) fn stats_cycle<T>(result: &anyhow::Result<T>, elapsed: Duration) {
    counter!(STATS_CYCLES, "outcome" => outcome(result)).increment(1);
    histogram!(STATS_CYCLE_DURATION).record(elapsed.as_secs_f64());
}

/// The peers of `observed` whose latest handshake is recent enough at `now` to call them
/// online (the window the domain uses for devices).
pub(crate) fn online_peers(observed: &[ObservedPeer], now: SystemTime) {
    let window = Duration::from_secs(ferrozone_domain::model::ONLINE_WINDOW_SECS.unsigned_abs());
    let cutoff = now.checked_sub(window).unwrap_or(SystemTime::UNIX_EPOCH);
    let online = observed.iter().filter(|o| o.stats.latest_handshake.is_some_and(|at| at >= cutoff)).count();
    gauge!(PEERS, "state" => "online").set(online as f64);
}

/// What a test's recorder received, for this crate's tests.
#[cfg(test)]
pub(crate) mod recorded {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    /// Every counter and gauge the recorder holds as `(name, its one label's value or "",
    /// value)`, and every histogram's name and count of values; taking them resets them.
    pub(crate) fn take(recorder: &DebuggingRecorder) -> Vec<(String, String, f64)> {
        let snapshot = recorder.snapshotter().snapshot().into_vec().into_iter();
        let mut taken: Vec<_> = snapshot
            .map(|(key, _, _, value)| {
                let label = key.key().labels().next().map_or(String::new(), |l| l.value().to_owned());
                let value = match value {
                    DebugValue::Counter(n) => n as f64,
                    DebugValue::Gauge(x) => x.0,
                    DebugValue::Histogram(values) => values.len() as f64,
                };
                (key.key().name().to_owned(), label, value)
            })
            .collect();
        taken.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
        taken
    }

    /// `(name, label, value)` as [`take`] gives it.
    pub(crate) fn metric(name: &str, label: &str, value: f64) -> (String, String, f64) {
        (name.to_owned(), label.to_owned(), value)
    }
}
