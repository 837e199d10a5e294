//! Metrics as operators use them: a real Prometheus (Debian's `prometheus` package)
//! scraping `serve`, and `promtool` checking the alert rules of docs/monitoring/.
//!
//! Without the `prometheus` and `promtool` programs these tests are skipped on a developer's
//! machine, and fail in CI, which installs them (.ci/run; tests/support/programs.rs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{free_port, Server};

const TOKEN: &str = "a-scraper-token-0123456789";

/// `program` on the `PATH`; `None` (the test is skipped) when it is missing outside CI.
fn program(program: &str) -> Option<PathBuf> {
    crate::programs::find(program, "apt-get install prometheus")
}

/// A Prometheus process, ended with the test.
struct Prometheus {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `binary` in `dir` with `config` (scrape jobs), scraping every second.
    fn start(binary: &Path, dir: &Path, scrape_configs: &str) -> Self {
        let config = dir.join("prometheus.yml");
        let global = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n";
        std::fs::write(&config, format!("{global}scrape_configs:\n{scrape_configs}")).unwrap();
        let address = format!("127.0.0.1:{}", free_port());
        let log = dir.join("prometheus.log");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::options().append(true).open(&log).unwrap())
            .spawn()
            .expect("prometheus starts");
        Prometheus { child, base: format!("http://{address}"), log }
    }

    /// The result vector of the instant query `query`, or `None` while Prometheus is not
    /// answering yet.
    async fn query(&self, query: &str) -> Option<Vec<Value>> {
        let url = format!("{}/api/v1/query", self.base);
        let res = reqwest::Client::new().get(url).query(&[("query", query)]).send().await.ok()?;
        let body: Value = res.json().await.ok()?;
        body["data"]["result"].as_array().cloned()
    }

    /// Polls `query` until `done` holds for its result (readiness, not a timing assertion);
    /// panics with Prometheus's log after a minute and a half.
    async fn wait_for(&self, query: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut last = None;
        while Instant::now() < deadline {
            if let Some(result) = self.query(query).await {
                if done(&result) {
                    return result;
                }
                last = Some(result);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        panic!("`{query}` never came: last {last:?}\nprometheus log:\n{log}");
    }
}

/// The sample value of a query result's first series.
fn value(result: &[Value]) -> Option<&str> {
    result.first()?["value"][1].as_str()
}

#[tokio::test]
async fn prometheus_scrapes_the_metrics_listener_and_the_api_with_the_token() {
    let Some(prometheus) = program("prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    let metrics_address = format!("127.0.0.1:{}", free_port());
    let env = [("FERROZONE_METRICS_LISTEN", metrics_address.as_str()), ("FERROZONE_METRICS_TOKEN", TOKEN)];
    let server = Server::start(dir.path(), &env).await;
    let api = server.base.trim_start_matches("http://");
    let jobs = format!(
        r#"  - job_name: ferrozone
    static_configs:
      - targets: ['{metrics_address}']
  - job_name: ferrozone-api
    authorization:
      credentials: {TOKEN}
    static_configs:
      - targets: ['{api}']
"#
    );
    let prometheus = Prometheus::start(&prometheus, dir.path(), &jobs);

    let up = |job: &str| format!("up{{job=\"{job}\"}}");
    prometheus.wait_for(&up("ferrozone"), |r| value(r) == Some("1")).await;
    prometheus.wait_for(&up("ferrozone-api"), |r| value(r) == Some("1")).await;
    // The start's readiness polls of /healthz, measured and labelled by their route.
    let healthz = r#"ferrozone_http_requests_total{job="ferrozone",route="/healthz",method="GET",status="200"}"#;
    let found = prometheus.wait_for(healthz, |r| !r.is_empty()).await;
    assert!(value(&found).is_some_and(|v| v.parse::<f64>().unwrap() >= 1.0), "{found:?}");
    let resident = r#"process_resident_memory_bytes{job="ferrozone"}"#;
    prometheus.wait_for(resident, |r| value(r).is_some_and(|v| v.parse::<f64>().unwrap() > 0.0)).await;
    every_dashboard_query_runs(&prometheus).await;
}

/// Each query of docs/monitoring/grafana-dashboard.json, with Grafana's variables filled
/// in, is one this Prometheus runs (a typo in a query would show an empty panel).
async fn every_dashboard_query_runs(prometheus: &Prometheus) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/monitoring/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let queries: Vec<&str> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert!(queries.len() >= 15, "{queries:?}");
    for query in queries {
        let query = query.replace("$__rate_interval", "1m").replace("$instance", ".*");
        let url = format!("{}/api/v1/query", prometheus.base);
        let res = reqwest::Client::new().get(url).query(&[("query", &query)]).send().await.unwrap();
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["status"], "success", "{query}: {body}");
    }
}

#[tokio::test]
async fn without_metrics_settings_there_is_no_metrics_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let client = reqwest::Client::new();
    let res = client.get(format!("{}/metrics", server.base)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(res.status(), 404);
}

/// docs/monitoring/: the alert rules load, and their unit tests (alerts.test.yml) pass.
#[test]
fn the_alert_rules_are_valid_and_their_tests_pass() {
    let Some(promtool) = program("promtool") else { return };
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/monitoring");
    for args in [["check", "rules", "alerts.yml"], ["test", "rules", "alerts.test.yml"]] {
        let out = Command::new(&promtool).args(args).current_dir(&docs).output().expect("promtool runs");
        let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {}:\n{printed}", args.join(" "));
    }
}

/// A real scrape, taken after requests and a write so that counters, histograms and gauges
/// all hold series, passes `promtool check metrics` with nothing to report (a counter's
/// `_total`, units in names, help text). `process_cpu_seconds_total` is a counter.
#[tokio::test]
async fn a_scrape_passes_promtool_check_metrics() {
    let Some(promtool) = program("promtool") else { return };
    let dir = tempfile::tempdir().unwrap();
    let metrics_address = format!("127.0.0.1:{}", free_port());
    let server = Server::start(dir.path(), &[("FERROZONE_METRICS_LISTEN", metrics_address.as_str())]).await;
    let token = server.printed_token().expect("a fresh database prints the admin token");
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{}/v0/users", server.base))
        .bearer_auth(&token)
        .json(&serde_json::json!({"user": {"email": "scraped@example.com"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let scrape = client.get(format!("http://{metrics_address}/metrics")).send().await.unwrap();
    assert_eq!(scrape.status(), 200);
    let text = scrape.text().await.unwrap();
    assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"), "{text}");
    assert!(text.contains("ferrozone_http_request_duration_seconds_bucket{"), "{text}");

    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    std::io::Write::write_all(&mut check.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = check.wait_with_output().unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && printed.trim().is_empty(), "promtool check metrics:\n{printed}\n---\n{text}");
}
