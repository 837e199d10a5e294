//! What every `serve` process does for the gateways on other hosts, every 10 s: it ends the
//! sessions of gateways that stopped polling (`gateway.disconnected`, once whichever process
//! gets there first) and sets the per-gateway metrics from the registry (docs/operations.md,
//! "Metrics").

use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::gateway::Gateway;
use ferrozone_domain::{Domain, Principal, Timestamp};
use metrics::{describe_gauge, gauge, Unit};

/// How often.
const PERIOD: Duration = Duration::from_secs(10);

const CONNECTED: &str = "ferrozone_gateway_connected";
const PEERS: &str = "ferrozone_gateway_peers";
const LAST_SEEN: &str = "ferrozone_gateway_last_seen_timestamp_seconds";

/// Gives the per-gateway metrics their help texts.
pub fn describe_metrics() {
    describe_gauge!(CONNECTED, "1 while a gateway on another host polls (it did within the last 60 s), else 0.");
    describe_gauge!(
        PEERS,
        Unit::Count,
        "A gateway's peers as it last said: applied (on its interface), refused (over its backend's limit)."
    );
    describe_gauge!(LAST_SEEN, Unit::Seconds, "When a gateway last polled or sent statistics (Unix time).");
}

/// Runs as long as the process.
pub async fn run(domain: Arc<Domain>) -> anyhow::Result<()> {
    let mut ticks = tokio::time::interval(PERIOD);
    loop {
        ticks.tick().await;
        if let Err(e) = domain.end_lapsed_gateway_sessions().await {
            tracing::warn!(error = %e, "ending lapsed gateway sessions failed");
        }
        match domain.list_gateways(&Principal::operator()).await {
            Ok(gateways) => record(&gateways, Timestamp::now()),
            Err(e) => tracing::warn!(error = %e, "reading the gateways for their metrics failed"),
        }
    }
}

/// The metrics of every gateway that is not revoked, labelled with its name.
fn record(gateways: &[Gateway], now: Timestamp) {
    for gateway in gateways.iter().filter(|g| g.revoked_at.is_none()) {
        let name = gateway.name.clone();
        gauge!(CONNECTED, "gateway" => name.clone()).set(if gateway.connected(now) { 1.0 } else { 0.0 });
        let report = &gateway.report;
        for (state, count) in [("applied", report.peers_applied), ("refused", report.peers_refused)] {
            if let Some(count) = count {
                gauge!(PEERS, "gateway" => name.clone(), "state" => state).set(count as f64);
            }
        }
        if let Some(at) = gateway.last_seen_at {
            gauge!(LAST_SEEN, "gateway" => name).set(at.micros() as f64 / 1e6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::gateway::GatewayReport;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    fn gateway(name: &str, seen: Option<Timestamp>, revoked: bool) -> Gateway {
        let at = Timestamp::from_secs(1_000);
        Gateway {
            id: uuid::Uuid::now_v7(),
            name: name.into(),
            enrolment_expires_at: None,
            enrolled_at: Some(at),
            revoked_at: revoked.then_some(at),
            last_seen_at: seen,
            connected_since: seen,
            version: None,
            inserted_at: at,
            updated_at: at,
            report: GatewayReport { peers_applied: Some(12), peers_refused: Some(0), ..GatewayReport::default() },
        }
    }

    #[test]
    fn each_live_gateway_has_its_gauges_and_a_revoked_one_none() {
        let now = Timestamp::from_secs(10_000);
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let gateways = [
            gateway("office", Some(now.plus_secs(-5)), false),
            gateway("lab", Some(now.plus_secs(-600)), false),
            gateway("old", Some(now), true),
        ];
        metrics::with_local_recorder(&recorder, || record(&gateways, now));
        let mut seen: Vec<(String, String, f64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let labels: Vec<String> = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
                let DebugValue::Gauge(value) = value else { panic!("a gauge") };
                (key.key().name().to_owned(), labels.join(","), value.into_inner())
            })
            .collect();
        seen.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let connected: Vec<(&str, f64)> =
            seen.iter().filter(|m| m.0 == CONNECTED).map(|m| (m.1.as_str(), m.2)).collect();
        assert_eq!(connected, [("gateway=lab", 0.0), ("gateway=office", 1.0)]);
        assert!(seen.iter().all(|m| !m.1.contains("old")), "a revoked gateway has no gauges: {seen:?}");
        assert!(seen.iter().any(|m| m.0 == PEERS && m.1 == "gateway=office,state=applied" && m.2 == 12.0));
    }
}
