//! `/v0/tokens`: personal API tokens, the caller's own (an admin may see and revoke any
//! user's). docs/api.md, "API tokens", and section 8.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::NewToken;
use ferrozone_domain::model::ApiToken;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::Time;
use crate::error::ApiError;
use crate::extract::{Auth, JsonObject, PathId};
use crate::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_tokens, create_token)).routes(routes!(revoke_token))
}

/// A personal API token. Neither the secret nor its hash is ever shown again after creation.
#[derive(Serialize, ToSchema)]
pub struct TokenDto {
    pub id: Uuid,
    pub user_id: Uuid,
    #[schema(example = "ci")]
    pub name: String,
    pub inserted_at: Time,
    pub expires_at: Time,
    /// Recorded at most once a minute; `null`: never used.
    pub last_used_at: Option<Time>,
}

impl From<ApiToken> for TokenDto {
    fn from(t: ApiToken) -> Self {
        Self {
            id: t.id,
            user_id: t.user_id,
            name: t.name,
            inserted_at: Time(t.inserted_at),
            expires_at: Time(t.expires_at),
            last_used_at: t.last_used_at.map(Time),
        }
    }
}

/// A token just created, with its secret: shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedTokenDto {
    #[serde(flatten)]
    pub token: TokenDto,
    /// The bearer secret. Store it now: it cannot be shown again.
    #[schema(example = "fz_…")]
    pub secret: String,
}

/// `{"data": token}`
#[derive(Serialize, ToSchema)]
pub struct CreatedTokenData {
    pub data: CreatedTokenDto,
}

/// `{"data": [tokens…]}`
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub data: Vec<TokenDto>,
}

/// List API tokens
///
/// The caller's own tokens, oldest first; `user_id` (admins only) another user's.
#[utoipa::path(get, path = "/v0/tokens", tag = "tokens",
    params(("user_id" = Option<Uuid>, Query, description = "Another user's tokens (admins only)")),
    responses(
        (status = 200, body = TokenList),
        (status = 400, description = "`user_id` is not a UUID", body = crate::dto::ErrorBody),
        crate::responses::ItemErrors,
    ))]
async fn list_tokens(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let user_id = user_id_query(raw.as_deref().unwrap_or(""))?;
    let tokens = app.domain.list_tokens_as(&actor, user_id).await?;
    Ok(reply::json(StatusCode::OK, &TokenList { data: tokens.into_iter().map(TokenDto::from).collect() }))
}

/// Create an API token
///
/// A token of the caller's. The answer holds the secret, shown this once.
#[utoipa::path(post, path = "/v0/tokens", tag = "tokens",
    request_body = crate::wire::TokenEnvelope,
    responses(
        (status = 201, body = CreatedTokenData),
        crate::responses::BodyErrors,
    ))]
async fn create_token(State(app): State<AppState>, Auth(actor): Auth, body: JsonObject) -> Result<Response, ApiError> {
    let input: NewToken = body.read()?;
    let (token, secret) = app.domain.create_token_as(&actor, &input).await?;
    let created = CreatedTokenDto { token: token.into(), secret: secret.to_string() };
    Ok(reply::json(StatusCode::CREATED, &CreatedTokenData { data: created }))
}

/// Revoke an API token
///
/// The caller's own, or any for an admin; another user's token is 404 to a non-admin.
#[utoipa::path(delete, path = "/v0/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "Token UUID")),
    responses(
        (status = 204, description = "Revoked"),
        crate::responses::ItemErrors,
    ))]
async fn revoke_token(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    let id = id.ok().and_then(|Path(id)| Uuid::parse_str(&id).ok()).ok_or(ApiError::NotFound)?;
    app.domain.revoke_token_as(&actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The `user_id` of the query, if any: not a UUID is a 400.
fn user_id_query(raw: &str) -> Result<Option<Uuid>, ApiError> {
    let mut user_id = None;
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        if key == "user_id" {
            let id = Uuid::parse_str(&value).map_err(|_| ApiError::BadRequest("`user_id` must be a UUID".into()))?;
            user_id = Some(id);
        }
    }
    Ok(user_id)
}
