//! The control plane as a gateway reaches it: plain HTTPS requests to its external URL,
//! with the gateway's credential and its process's session id (docs/api.md section 5h).

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use ferrozone_domain::gateway::state::Answer;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use zeroize::Zeroizing;

/// How long a state request may wait for a change (the control plane's longest).
pub const POLL_WAIT_SECS: u64 = 25;
/// A poll with no answer this long after it was sent is given up, and the next one goes on
/// a new connection: a half-open connection costs one poll.
const POLL_TIMEOUT: Duration = Duration::from_secs(POLL_WAIT_SECS + 10);
/// Any other request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const SESSION_HEADER: &str = "ferrozone-gateway-session";
/// The most peers one statistics request carries (the control plane's limit).
pub const STATS_BATCH: usize = 4096;

/// Why a request got no answer to use.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// 401: the credential is unknown or its gateway was revoked.
    #[error("the control plane refused this gateway's credential (revoked, or enrolled with another control plane)")]
    Refused,
    /// 409: another process holds the credential's session.
    #[error("another process holds this gateway's session: {0}")]
    HeldElsewhere(String),
    /// Anything else: unreachable, a proxy's error page, a 5xx.
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

/// One peer's statistics as the control plane takes them.
#[derive(Debug, Clone, Serialize)]
pub struct PeerStatsOut {
    pub public_key: String,
    pub latest_handshake_us: i64,
    pub endpoint: Option<String>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

#[derive(Deserialize)]
struct Data<T> {
    data: T,
}

#[derive(Deserialize)]
struct Enrolled {
    credential: String,
}

/// A client of one control plane.
pub struct Client {
    http: reqwest::Client,
    base: String,
    credential: Zeroizing<String>,
    session: Uuid,
    /// Notified when statistics went through: a poll waiting out a failure may try again.
    reachable: tokio::sync::Notify,
}

impl Client {
    /// An HTTP client trusting the system's roots and, if given, the PEM certificates of
    /// `ca_file` (a private CA).
    pub fn http(ca_file: Option<&Path>) -> anyhow::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("ferrozone-gateway/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = ca_file {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            for certificate in reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("{} holds no PEM certificate", path.display()))?
            {
                builder = builder.add_root_certificate(certificate);
            }
        }
        builder.build().context("the HTTP client")
    }

    /// Exchanges an enrolment token for the gateway's credential, once.
    pub async fn enrol(http: &reqwest::Client, base: &str, token: &str) -> anyhow::Result<Zeroizing<String>> {
        let url = format!("{}/gateway/v1/enrol", base.trim_end_matches('/'));
        let body = serde_json::json!({"enrolment_token": token, "version": env!("CARGO_PKG_VERSION")});
        let res =
            http.post(&url).json(&body).timeout(REQUEST_TIMEOUT).send().await.with_context(|| format!("POST {url}"))?;
        match res.status() {
            StatusCode::CREATED => {
                let enrolled: Data<Enrolled> = res.json().await.context("the enrolment's answer")?;
                Ok(Zeroizing::new(enrolled.data.credential))
            }
            StatusCode::UNAUTHORIZED => {
                bail!("the control plane refused the enrolment token: it is unknown, used, expired or its gateway revoked")
            }
            status => bail!("POST {url}: {status}: {}", text(res).await),
        }
    }

    pub fn new(http: reqwest::Client, base: &str, credential: Zeroizing<String>) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            credential,
            session: Uuid::new_v4(),
            reachable: tokio::sync::Notify::new(),
        }
    }

    /// This process's session id.
    pub fn session(&self) -> Uuid {
        self.session
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.credential.as_str())
            .header(SESSION_HEADER, self.session.to_string())
    }

    /// The state as of `since`, waiting at most `wait_secs` for a change; `report` says how
    /// the data plane is (`(name, value)` query parameters).
    pub async fn poll(
        &self,
        since: Option<&str>,
        wait_secs: u64,
        report: &[(&'static str, String)],
    ) -> Result<Answer, PollError> {
        let mut query = vec![
            ("wait", wait_secs.to_string()),
            ("version", env!("CARGO_PKG_VERSION").to_owned()),
            ("protocol", ferrozone_domain::gateway::state::PROTOCOL.to_string()),
        ];
        query.extend(since.map(|v| ("since", v.to_owned())));
        query.extend(report.iter().cloned());
        let req = self.request(reqwest::Method::GET, "/gateway/v1/state").query(&query).timeout(POLL_TIMEOUT);
        let res = send(req).await?;
        let data: Data<Answer> =
            res.json().await.map_err(|e| PollError::Failed(anyhow::Error::new(e).context("the state's answer")))?;
        Ok(data.data)
    }

    /// Sends statistics, in batches the control plane takes.
    pub async fn stats(&self, peers: &[PeerStatsOut]) -> Result<(), PollError> {
        for batch in peers.chunks(STATS_BATCH) {
            let body = serde_json::json!({ "peers": batch });
            send(self.request(reqwest::Method::POST, "/gateway/v1/stats").json(&body).timeout(REQUEST_TIMEOUT)).await?;
        }
        self.reachable.notify_one();
        Ok(())
    }

    /// Resolves after statistics went through (the control plane is reachable again).
    pub async fn reached(&self) {
        self.reachable.notified().await;
    }

    /// Ends this process's session, so another may take the credential at once.
    pub async fn end_session(&self) -> Result<(), PollError> {
        send(self.request(reqwest::Method::DELETE, "/gateway/v1/session").timeout(REQUEST_TIMEOUT)).await.map(|_| ())
    }
}

async fn send(req: reqwest::RequestBuilder) -> Result<reqwest::Response, PollError> {
    let res = req.send().await.map_err(|e| PollError::Failed(anyhow::Error::new(e)))?;
    match res.status() {
        status if status.is_success() => Ok(res),
        StatusCode::UNAUTHORIZED => Err(PollError::Refused),
        StatusCode::CONFLICT => Err(PollError::HeldElsewhere(text(res).await)),
        status => Err(PollError::Failed(anyhow::anyhow!("{status}: {}", text(res).await))),
    }
}

/// The start of an answer's body, for an error message.
async fn text(res: reqwest::Response) -> String {
    let body = res.text().await.unwrap_or_default();
    body.chars().take(300).collect()
}
