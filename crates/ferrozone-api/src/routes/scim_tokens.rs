//! `/v0/scim_tokens`: the provisioning tokens a directory authenticates to `/scim/v2` with,
//! admin only (docs/api.md section 5j, docs/design/scim.md). A token can do nothing but
//! SCIM; its secret is shown once, in the answer to its creation, and only its SHA-256 is
//! kept. A revoked token stays listed, with when it was revoked.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::scim::ScimToken;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
use crate::routes::uuid_path;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_scim_tokens, create_scim_token)).routes(routes!(revoke_scim_token))
}

/// A provisioning token (never its secret, but in the answer to its creation).
#[derive(Serialize, ToSchema)]
pub struct ScimTokenDto {
    pub id: Uuid,
    #[schema(example = "Okta")]
    pub name: String,
    /// The admin who created it, while that user exists.
    pub created_by: Option<Uuid>,
    pub last_used_at: Option<Time>,
    pub revoked_at: Option<Time>,
    /// The secret (`fzscim_…`): only in the answer to a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub inserted_at: Time,
}

impl From<ScimToken> for ScimTokenDto {
    fn from(t: ScimToken) -> Self {
        Self {
            id: t.id,
            name: t.name,
            created_by: t.created_by,
            last_used_at: t.last_used_at.map(Time),
            revoked_at: t.revoked_at.map(Time),
            token: None,
            inserted_at: Time(t.inserted_at),
        }
    }
}

/// `{"data": token}`
#[derive(Serialize, ToSchema)]
pub struct ScimTokenData {
    pub data: ScimTokenDto,
}

/// `{"data": [tokens…]}`, newest first.
#[derive(Serialize, ToSchema)]
pub struct ScimTokenList {
    pub data: Vec<ScimTokenDto>,
}

/// `{"scim_token": {"name": …}}`
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimTokenEnvelope {
    scim_token: ScimTokenInput,
}

/// A provisioning token's name.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimTokenInput {
    #[schema(example = "Okta")]
    name: String,
}

/// List provisioning tokens
#[utoipa::path(get, path = "/v0/scim_tokens", tag = "provisioning",
    responses(
        (status = 200, body = ScimTokenList),
        crate::responses::AdminErrors,
    ))]
async fn list_scim_tokens(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let tokens = app.domain.list_scim_tokens(&actor).await?;
    Ok(reply::json(StatusCode::OK, &ScimTokenList { data: tokens.into_iter().map(ScimTokenDto::from).collect() }))
}

/// Create a provisioning token
///
/// Answers the token with its secret (`token`), shown this once: give it to the directory
/// as its bearer token for `/scim/v2`.
#[utoipa::path(post, path = "/v0/scim_tokens", tag = "provisioning",
    request_body = ScimTokenEnvelope,
    responses(
        (status = 201, body = ScimTokenData, headers(("location" = String, description = "/v0/scim_tokens"))),
        crate::responses::BodyErrors,
    ))]
async fn create_scim_token(
    State(app): State<AppState>,
    Auth(actor): Auth,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let attrs = body.wrapped("scim_token")?;
    let name = match attrs.get("name") {
        None | Some(Value::Null) => "",
        Some(Value::String(name)) => name.as_str(),
        Some(_) => return Err(ApiError::Invalid(ferrozone_domain::Errors::one("name", "is invalid"))),
    };
    let (token, secret) = app.domain.create_scim_token(&actor, name).await?;
    let mut dto = ScimTokenDto::from(token);
    dto.token = Some(secret.to_string());
    Ok(reply::created("/v0/scim_tokens".to_owned(), &ScimTokenData { data: dto }))
}

/// Revoke a provisioning token
///
/// From the next request on, the token authenticates nothing. Answers the revoked token;
/// revoking it again keeps its first `revoked_at`.
#[utoipa::path(delete, path = "/v0/scim_tokens/{id}", tag = "provisioning",
    params(("id" = String, Path, description = "Token UUID")),
    responses(
        (status = 200, body = ScimTokenData),
        crate::responses::ItemErrors,
    ))]
async fn revoke_scim_token(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let token = app.domain.revoke_scim_token(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &ScimTokenData { data: token.into() }))
}
