//! What a gateway on another host asks of the control plane (docs/design/gateways.md):
//! `GET /gateway/v1/state`, its desired state by long poll; `POST /gateway/v1/stats`, its
//! peers' statistics; `DELETE /gateway/v1/session`, the end of its session when it stops.
//!
//! Every request carries the gateway's credential (`Authorization: Bearer fzgw_…`) and its
//! process's session id (`Ferrozone-Gateway-Session`, a UUID): one process at a time holds a
//! credential's session; another is refused with 409 until it stops or stops polling for
//! [`ferrozone_domain::gateway::LEASE_SECS`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use ferrozone_domain::gateway::state::Answer;
use ferrozone_domain::gateway::{Gateway, GatewayReport, LeaseOutcome};
use ferrozone_domain::model::StatsReport;
use ferrozone_domain::service::gateways::checked_version;
use ferrozone_domain::{Errors, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{bearer_token, JsonBody};
use ferrozone_http::{reply, AppState};

/// The header naming a gateway process's session.
pub const SESSION_HEADER: &str = "ferrozone-gateway-session";
/// The longest a state request waits for a change: under the 60 s read timeout of an
/// ordinary reverse proxy.
pub const MAX_WAIT_SECS: u64 = 25;
/// The refusal of a state a gateway's protocol revision cannot enforce (group rules for a
/// gateway built before them, which would take a group's rule for everyone's).
const OUTDATED: &str = "the state has group rules, which this gateway cannot enforce: upgrade it \
     (it keeps enforcing the state it holds meanwhile)";

/// How often a waiting state request checks that its gateway was not revoked.
const LIVENESS_CHECK: Duration = Duration::from_secs(1);
/// The most peers one statistics request may carry (the gateway sends several).
pub const MAX_STATS_BATCH: usize = 4096;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(state)).routes(routes!(stats)).routes(routes!(end_session))
}

/// The query of a state request.
#[derive(Deserialize, IntoParams)]
pub struct StateQuery {
    /// The version the gateway holds; none for a snapshot.
    since: Option<String>,
    /// How long to wait for a change, 0 to 25 seconds (default 25).
    wait: Option<u64>,
    /// The gateway's data plane: `kernel`, `userspace` or `none`.
    backend: Option<String>,
    /// The peers on its interface after its last successful reconcile.
    applied: Option<u32>,
    /// The peers over its backend's limit.
    refused: Option<u32>,
    /// Whether its last reconcile failed.
    failing: Option<bool>,
    /// The version it runs (at most 64 printable characters).
    version: Option<String>,
    /// The state protocol revision it speaks (1 when not given): a state that needs a later
    /// one is refused with 409, and the gateway keeps enforcing the state it holds.
    protocol: Option<u32>,
}

impl StateQuery {
    /// What the gateway says of itself; a value that cannot be one is a 422.
    fn report(&self) -> Result<GatewayReport, ApiError> {
        let backend = self.backend.as_deref().filter(|b| !b.is_empty());
        if backend.is_some_and(|b| !matches!(b, "kernel" | "userspace" | "none")) {
            return Err(ApiError::Invalid(Errors::one("backend", "must be kernel, userspace or none")));
        }
        let version = checked_version(self.version.as_deref())?;
        Ok(GatewayReport {
            backend: backend.map(str::to_owned),
            peers_applied: self.applied.map(i64::from),
            peers_refused: self.refused.map(i64::from),
            reconcile_failed: self.failing,
            version: version.map(str::to_owned),
        })
    }
}

/// `{"data": answer}`: `kind` is `unchanged`, `snapshot` (with `state`) or `changes`
/// (with `from` and `changes`), each with `version`.
#[derive(Serialize, ToSchema)]
pub struct StateData {
    #[schema(value_type = Object)]
    pub data: Answer,
}

/// Get the desired state
///
/// Answers as soon as the state differs from `since`, else after `wait` seconds with
/// `unchanged`. A revoked gateway's waiting request ends within a second with 401.
#[utoipa::path(get, path = "/gateway/v1/state", tag = "gateways",
    security(()),
    params(StateQuery, ("ferrozone-gateway-session" = String, Header, description = "The process's session id (a UUID)")),
    responses(
        (status = 200, body = StateData),
        crate::responses::GatewayErrors,
    ))]
async fn state(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<StateQuery>,
) -> Result<Response, ApiError> {
    let gateway = hold_session(&app, &headers, query.report()?).await?;
    let wait = Duration::from_secs(query.wait.unwrap_or(MAX_WAIT_SECS).min(MAX_WAIT_SECS));
    let since = query.since.as_deref().filter(|v| !v.is_empty());
    let hub = app.domain.gateway_states();
    let deadline = Instant::now() + wait;
    loop {
        let slice = deadline.min(Instant::now() + LIVENESS_CHECK);
        hub.wait_for_change(since, slice).await;
        if hub.protocol_needed().is_some_and(|needed| needed > query.protocol.unwrap_or(1)) {
            return Err(ApiError::Conflict(OUTDATED));
        }
        match hub.answer(since) {
            Some(answer @ (Answer::Snapshot { .. } | Answer::Changes { .. })) => return Ok(json(&answer)),
            Some(answer) if Instant::now() >= deadline => return Ok(json(&answer)),
            None if Instant::now() >= deadline => return Err(ApiError::Busy("the gateway state is not ready yet")),
            _ => {}
        }
        if !app.domain.gateway_is_live(gateway.id).await? {
            return Err(ApiError::Unauthenticated);
        }
    }
}

fn json(answer: &Answer) -> Response {
    reply::json(StatusCode::OK, &serde_json::json!({ "data": answer }))
}

/// One peer's statistics as a gateway read them.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerStatsIn {
    pub public_key: String,
    /// The latest handshake, microseconds since the Unix epoch.
    pub latest_handshake_us: i64,
    /// The peer's address and port as the gateway last saw it.
    pub endpoint: Option<String>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// `{"peers": [...]}`, at most 4,096.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsBatch {
    pub peers: Vec<PeerStatsIn>,
}

/// What a statistics request recorded.
#[derive(Serialize, ToSchema)]
pub struct StatsOutcome {
    /// Peers of the current state whose statistics were recorded.
    pub recorded: usize,
    /// Peers the current state does not have (deleted, or never this control plane's).
    pub ignored: usize,
}

/// `{"data": outcome}`
#[derive(Serialize, ToSchema)]
pub struct StatsData {
    pub data: StatsOutcome,
}

/// Report peer statistics
#[utoipa::path(post, path = "/gateway/v1/stats", tag = "gateways",
    security(()),
    params(("ferrozone-gateway-session" = String, Header, description = "The process's session id (a UUID)")),
    request_body = StatsBatch,
    responses(
        (status = 200, body = StatsData),
        crate::responses::GatewayErrors,
    ))]
async fn stats(State(app): State<AppState>, headers: HeaderMap, body: JsonBody) -> Result<Response, ApiError> {
    let gateway = hold_session(&app, &headers, GatewayReport::default()).await?;
    let batch: StatsBatch = body.decode(|e| ApiError::Invalid(Errors::one("peers", format!("is invalid: {e}"))))?;
    if batch.peers.len() > MAX_STATS_BATCH {
        return Err(ApiError::Invalid(Errors::one("peers", format!("must be at most {MAX_STATS_BATCH} entries"))));
    }
    let hub = app.domain.gateway_states();
    let total = batch.peers.len();
    let reports: Vec<StatsReport> =
        batch.peers.into_iter().filter(|p| hub.has_peer(&p.public_key) != Some(false)).filter_map(report).collect();
    let recorded = reports.len();
    app.domain.record_gateway_stats(gateway.id, reports).await?;
    Ok(reply::json(StatusCode::OK, &StatsData { data: StatsOutcome { recorded, ignored: total - recorded } }))
}

/// A peer's statistics as stored; `None` for a handshake time that is not one.
fn report(peer: PeerStatsIn) -> Option<StatsReport> {
    (peer.latest_handshake_us > 0).then_some(())?;
    let remote_ip = peer.endpoint.and_then(|e| e.parse::<SocketAddr>().ok()).map(|a| a.ip().to_canonical().to_string());
    Some(StatsReport {
        public_key: peer.public_key,
        latest_handshake: Timestamp::from_micros(peer.latest_handshake_us),
        remote_ip,
        rx_bytes: i64::try_from(peer.rx_bytes).unwrap_or(i64::MAX),
        tx_bytes: i64::try_from(peer.tx_bytes).unwrap_or(i64::MAX),
    })
}

/// End the session
///
/// The gateway process stops: another may take the credential's session at once.
#[utoipa::path(delete, path = "/gateway/v1/session", tag = "gateways",
    security(()),
    params(("ferrozone-gateway-session" = String, Header, description = "The process's session id (a UUID)")),
    responses(
        (status = 204, description = "Ended"),
        crate::responses::GatewayErrors,
    ))]
async fn end_session(State(app): State<AppState>, headers: HeaderMap) -> Result<StatusCode, ApiError> {
    let (credential, session) = credentials(&headers)?;
    if app.domain.release_gateway_session(credential, session).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::Unauthenticated)
    }
}

/// The credential and the session id a request carries.
fn credentials(headers: &HeaderMap) -> Result<(&str, Uuid), ApiError> {
    let credential = bearer_token(headers).ok_or(ApiError::Unauthenticated)?;
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| Uuid::parse_str(v.trim()).ok())
        .ok_or_else(|| ApiError::BadRequest(format!("the `{SESSION_HEADER}` header must be a UUID")))?;
    Ok((credential, session))
}

/// The gateway whose session this request renews or starts, with what it says of itself.
async fn hold_session(app: &AppState, headers: &HeaderMap, report: GatewayReport) -> Result<Gateway, ApiError> {
    let (credential, session) = credentials(headers)?;
    match app.domain.hold_gateway_session(credential, session, report).await? {
        LeaseOutcome::Held(gateway) | LeaseOutcome::Started(gateway) => Ok(gateway),
        LeaseOutcome::Unknown => Err(ApiError::Unauthenticated),
        LeaseOutcome::HeldElsewhere => Err(ApiError::Conflict(
            "another process holds this gateway's session: one process per credential (it lapses 60 s after its last request)",
        )),
    }
}
