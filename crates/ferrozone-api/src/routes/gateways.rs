//! `/v0/gateways`: the gateways' registry, admin only, and `POST /gateway/v1/enrol`, where
//! a gateway exchanges its enrolment token for its credential (docs/api.md section 5h,
//! docs/design/gateways.md).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::gateway::Gateway;
use ferrozone_domain::service::gateways::{CreatedGateway, EnrolledGateway, NewGateway};
use ferrozone_domain::Timestamp;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
use crate::routes::{uuid_path, ReadAttributes};
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_gateways, create_gateway))
        .routes(routes!(get_gateway, revoke_gateway))
        .routes(routes!(enrol))
}

/// A gateway. Its enrolment token is shown only in the answer to its creation.
#[derive(Serialize, ToSchema)]
pub struct GatewayDto {
    pub id: Uuid,
    #[schema(example = "office")]
    pub name: String,
    /// `awaiting_enrolment`, `enrolment_expired`, `enrolled` or `revoked`.
    #[schema(example = "awaiting_enrolment")]
    pub status: &'static str,
    /// Until when its enrolment token works, while it has one.
    pub enrolment_expires_at: Option<Time>,
    pub enrolled_at: Option<Time>,
    pub revoked_at: Option<Time>,
    pub last_seen_at: Option<Time>,
    /// Since when a gateway process holds its session (polls); none while none does.
    pub connected_since: Option<Time>,
    /// The version the gateway runs (said when it enrolled, then with each poll).
    pub version: Option<String>,
    /// Whether a gateway process polls it now (it did within the last 60 s).
    pub connected: bool,
    /// What its process last said of its data plane; null until it polled.
    pub data_plane: Option<GatewayDataPlane>,
    /// The enrolment token (`fzge_…`): only in the answer to a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enrolment_token: Option<String>,
    pub inserted_at: Time,
    pub updated_at: Time,
}

impl From<Gateway> for GatewayDto {
    fn from(g: Gateway) -> Self {
        let now = Timestamp::now();
        let r = &g.report;
        let said = r.backend.is_some() || r.peers_applied.is_some();
        let data_plane = said.then(|| GatewayDataPlane {
            backend: r.backend.clone(),
            peers_applied: r.peers_applied,
            peers_refused: r.peers_refused,
            reconcile_failed: r.reconcile_failed,
        });
        Self {
            status: g.status(now).as_str(),
            connected: g.connected(now),
            data_plane,
            id: g.id,
            name: g.name,
            enrolment_expires_at: g.enrolment_expires_at.map(Time),
            enrolled_at: g.enrolled_at.map(Time),
            revoked_at: g.revoked_at.map(Time),
            last_seen_at: g.last_seen_at.map(Time),
            connected_since: g.connected_since.map(Time),
            version: g.version,
            enrolment_token: None,
            inserted_at: Time(g.inserted_at),
            updated_at: Time(g.updated_at),
        }
    }
}

/// A gateway's data plane as its process last said.
#[derive(Serialize, ToSchema)]
pub struct GatewayDataPlane {
    /// `kernel`, `userspace` or `none`.
    pub backend: Option<String>,
    /// Peers on its interface after its last successful reconcile.
    pub peers_applied: Option<i64>,
    /// Peers over its backend's limit (wireguard-go: 65,536), not on its interface.
    pub peers_refused: Option<i64>,
    pub reconcile_failed: Option<bool>,
}

/// `{"data": gateway}`
#[derive(Serialize, ToSchema)]
pub struct GatewayData {
    pub data: GatewayDto,
}

/// `{"data": [gateways…]}`, oldest first.
#[derive(Serialize, ToSchema)]
pub struct GatewayList {
    pub data: Vec<GatewayDto>,
}

/// What an enrolment answers: the gateway's own credential, shown this once.
#[derive(Serialize, ToSchema)]
pub struct Enrolled {
    pub gateway_id: Uuid,
    pub name: String,
    /// The credential (`fzgw_…`) the gateway authenticates with from now on.
    pub credential: String,
}

/// `{"data": enrolled}`
#[derive(Serialize, ToSchema)]
pub struct EnrolledData {
    pub data: Enrolled,
}

/// List gateways
#[utoipa::path(get, path = "/v0/gateways", tag = "gateways",
    responses(
        (status = 200, body = GatewayList),
        crate::responses::AdminErrors,
    ))]
async fn list_gateways(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let gateways = app.domain.list_gateways(&actor).await?;
    Ok(reply::json(StatusCode::OK, &GatewayList { data: gateways.into_iter().map(GatewayDto::from).collect() }))
}

/// Create a gateway
///
/// The answer carries its enrolment token (`fzge_…`), single use, valid 24 hours unless
/// `enrolment_hours` says otherwise; no later answer shows it. `ferrozone gateway` exchanges
/// it for its own credential at `POST /gateway/v1/enrol`.
#[utoipa::path(post, path = "/v0/gateways", tag = "gateways",
    request_body = crate::wire::GatewayEnvelope,
    responses(
        (status = 201, body = GatewayData, headers(("location" = String, description = "/v0/gateways/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_gateway(
    State(app): State<AppState>,
    Auth(actor): Auth,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let input: NewGateway = body.read()?;
    let CreatedGateway { gateway, enrolment_token } = app.domain.create_gateway(&actor, &input).await?;
    let location = format!("/v0/gateways/{}", gateway.id);
    let data = GatewayDto { enrolment_token: Some(enrolment_token.as_str().to_owned()), ..gateway.into() };
    Ok(reply::created(location, &GatewayData { data }))
}

/// Show a gateway
#[utoipa::path(get, path = "/v0/gateways/{id}", tag = "gateways",
    params(("id" = String, Path, description = "Gateway UUID")),
    responses(
        (status = 200, body = GatewayData),
        crate::responses::ItemErrors,
    ))]
async fn get_gateway(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let gateway = app.domain.get_gateway(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &GatewayData { data: gateway.into() }))
}

/// Revoke a gateway
///
/// Its enrolment token or credential stops working at once. The gateway stays listed, as
/// revoked; revoking it again answers 404.
#[utoipa::path(delete, path = "/v0/gateways/{id}", tag = "gateways",
    params(("id" = String, Path, description = "Gateway UUID")),
    responses(
        (status = 204, description = "Revoked"),
        crate::responses::ItemErrors,
    ))]
async fn revoke_gateway(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    app.domain.revoke_gateway(&actor, uuid_path(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Enrol a gateway
///
/// `{"enrolment_token": "fzge_…", "version": "…"}`, once per token: the answer carries the
/// gateway's credential (`fzgw_…`), shown this once. A token that is unknown, used,
/// expired or of a revoked gateway is one 401.
#[utoipa::path(post, path = "/gateway/v1/enrol", tag = "gateways",
    security(()),
    request_body(content = Object, description = "`{\"enrolment_token\": \"fzge_…\", \"version\": \"0.1.0\"}`"),
    responses(
        (status = 201, body = EnrolledData),
        crate::responses::EnrolErrors,
    ))]
async fn enrol(State(app): State<AppState>, body: JsonObject) -> Result<Response, ApiError> {
    let body = body.object()?;
    let text = |name: &str| match body.get(name) {
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(ApiError::Invalid(ferrozone_domain::error::Errors::one(name, "is invalid"))),
    };
    let (token, version) = (text("enrolment_token")?.unwrap_or_default(), text("version")?);
    let Some(EnrolledGateway { gateway, credential }) = app.domain.enrol_gateway(token, version).await? else {
        return Err(ApiError::Unauthenticated);
    };
    let data = Enrolled { gateway_id: gateway.id, name: gateway.name, credential: credential.as_str().to_owned() };
    Ok(reply::json(StatusCode::CREATED, &EnrolledData { data }))
}
