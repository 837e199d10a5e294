//! Prometheus metrics for `serve` (docs/operations.md, "Monitoring"): the recorder that
//! every `metrics::counter!` of the workspace records into, the process's CPU, memory and
//! open files read at each scrape, and the metrics listener.
//!
//! Installed only when metrics are on: with no recorder, the macros find none and record
//! nothing, and the HTTP app gets no metrics layer.

mod process;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ferrozone_http::MetricsExport;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::supervisor::Supervisor;

/// Histogram buckets of durations, in seconds: from half a millisecond (a cached read) to
/// ten seconds (past any deadline of the server).
const LATENCY_BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Histogram buckets of the SQLite writer's batch sizes (jobs per commit).
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];

/// How often samples recorded between scrapes are folded into the histograms, so that
/// memory stays bounded however rarely Prometheus scrapes.
const UPKEEP_PERIOD: Duration = Duration::from_secs(5);

/// The installed recorder's handle, and how the HTTP app serves what it holds.
pub struct Metrics {
    handle: PrometheusHandle,
    export: MetricsExport,
}

impl Metrics {
    /// Installs the Prometheus recorder for this process when metrics are on
    /// (`FERROZONE_METRICS_TOKEN` or `FERROZONE_METRICS_LISTEN`); `None` when they are off.
    /// Call it before anything records, so that no early measure is lost.
    pub fn install(config: &Config) -> anyhow::Result<Option<Self>> {
        let token = config.monitoring.token()?;
        if token.is_none() && config.monitoring.listen().is_none() {
            return Ok(None);
        }
        let recorder = PrometheusBuilder::new()
            .set_buckets(LATENCY_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full("ferrozone_sqlite_write_batch_size".into()), BATCH_BUCKETS)
            })
            .context("the metrics' histogram buckets")?
            .build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).context("installing the metrics recorder")?;
        describe();
        // At each scrape everything is rendered, then the process figures read afresh.
        let rendered = handle.clone();
        let render = Arc::new(move || {
            let mut text = rendered.render();
            process::render(&mut text);
            text
        });
        let export = MetricsExport { render, token: token.map(Arc::new) };
        Ok(Some(Self { handle, export }))
    }

    /// What the HTTP app serves `/metrics` with, and the token of `/metrics` on the API
    /// listener, if one is set.
    pub fn export(&self) -> MetricsExport {
        self.export.clone()
    }

    /// Starts the recorder's upkeep and, when `listener` is given (bound by [`listener`]),
    /// the metrics listener, under `tasks`.
    pub fn start(&self, config: &Config, listener: Option<TcpListener>, tasks: &mut Supervisor) {
        let handle = self.handle.clone();
        tasks.spawn("metrics upkeep", async move {
            let mut ticks = tokio::time::interval(UPKEEP_PERIOD);
            loop {
                ticks.tick().await;
                handle.run_upkeep();
            }
        });
        if let Some(listener) = listener {
            let app = ferrozone_http::metrics_app(self.export.render.clone());
            let (limits, stopping) = (config.http.limits(), tasks.stopping());
            tasks.spawn_draining("metrics listener", async move {
                ferrozone_http::server::serve(listener, app, limits, None, stopping).await.context("serving metrics")
            });
        }
    }
}

/// The metrics listener (`FERROZONE_METRICS_LISTEN`), bound; `None` when none is set.
pub async fn listener(config: &Config) -> anyhow::Result<Option<TcpListener>> {
    let Some(address) = config.monitoring.listen() else { return Ok(None) };
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("FERROZONE_METRICS_LISTEN: listening on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, "serving metrics");
    Ok(Some(listener))
}

/// The help lines of the metrics recorded outside the store and the data plane, and the
/// build's version as a metric of its own.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("ferrozone_http_requests_total", "HTTP requests answered, by route template, method and status.");
    describe_histogram!(
        "ferrozone_http_request_duration_seconds",
        Unit::Seconds,
        "Time from a request reaching the router to its response, by route template and method."
    );
    describe_counter!("ferrozone_sign_ins_total", "Sign-in steps, by method and outcome.");
    describe_counter!("ferrozone_tokens_refused_total", "API tokens and browser sessions refused, by kind and reason.");
    describe_counter!("ferrozone_oidc_refreshes_total", "OpenID Connect refresh-token refreshes, by outcome.");
    describe_counter!(
        "ferrozone_oidc_users_disabled_total",
        "Users disabled because their provider refused a refresh."
    );
    describe_gauge!("ferrozone_build_info", "Always 1, labelled with the version of this binary.");
    metrics::gauge!("ferrozone_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
}
