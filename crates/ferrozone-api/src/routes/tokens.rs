//! `/v0/tokens`: personal API tokens, the caller's own (an admin may see and revoke any
//! user's). docs/api.md, "API tokens", and docs/design/tokens.md.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::input::NewToken;
use ferrozone_domain::model::ApiToken;
use ferrozone_domain::store::TokenPage;
use ferrozone_domain::Principal;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::{PageMetadata, Time};
use crate::routes::{uuid_path, ReadAttributes};
use ferrozone_http::cursor;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, JsonObject, PathId};
use ferrozone_http::{reply, AppState};

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
    /// The owner's email: only in the list of every user's tokens (`all=true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_email: Option<String>,
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
            user_email: None,
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

/// `{"data": [tokens…]}`, with `metadata` when paged (`all=true`).
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub data: Vec<TokenDto>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<PageMetadata>,
}

/// List API tokens
///
/// The caller's own tokens, oldest first; `user_id` (admins only) another user's. With
/// `all=true` (admins only) every user's tokens with their owner's email, one page at a
/// time (`limit`, default 100, and `page_cursor`), oldest first.
#[utoipa::path(get, path = "/v0/tokens", tag = "tokens",
    params(
        ("user_id" = Option<Uuid>, Query, description = "Another user's tokens (admins only)"),
        ("all" = Option<bool>, Query, description = "Every user's tokens, paged (admins only)"),
        ("limit" = Option<u32>, Query, description = "With `all=true`: page size, 1 to 1000 (default 100)",
            minimum = 1, maximum = 1000),
        ("page_cursor" = Option<String>, Query, description = "With `all=true`: `next_page_cursor` of the previous page"),
    ),
    responses(
        (status = 200, body = TokenList),
        (status = 400, description = "A malformed parameter", body = crate::dto::ErrorBody),
        crate::responses::ItemErrors,
    ))]
async fn list_tokens(
    State(app): State<AppState>,
    Auth(actor): Auth,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let raw = raw.as_deref().unwrap_or("");
    if let Some(page) = all_tokens_query(raw)? {
        return list_all_tokens(&app, &actor, page).await;
    }
    let user_id = user_id_query(raw)?;
    let tokens = app.domain.list_tokens_as(&actor, user_id).await?;
    let data = tokens.into_iter().map(TokenDto::from).collect();
    Ok(reply::json(StatusCode::OK, &TokenList { data, metadata: None }))
}

/// One page of every user's tokens, each with its owner's email.
async fn list_all_tokens(app: &AppState, actor: &Principal, page: TokenPage) -> Result<Response, ApiError> {
    let tokens = app.domain.list_all_tokens(actor, page).await?;
    let full = tokens.len() == page.limit as usize;
    let next_page_cursor = tokens.last().filter(|_| full).map(|(t, _)| cursor::encode(t.inserted_at, t.id));
    let data = tokens
        .into_iter()
        .map(|(token, owner)| TokenDto { user_email: Some(owner.email), ..TokenDto::from(token) })
        .collect();
    let metadata = Some(PageMetadata { limit: page.limit, next_page_cursor });
    Ok(reply::json(StatusCode::OK, &TokenList { data, metadata }))
}

/// The page `all=true` asks for, or `None` without it; malformed values are a 400.
fn all_tokens_query(raw: &str) -> Result<Option<TokenPage>, ApiError> {
    let bad = |message: &str| ApiError::BadRequest(message.to_owned());
    let (mut all, mut page) = (false, TokenPage { after: None, limit: DEFAULT_TOKEN_PAGE });
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match key.as_ref() {
            "all" => match value.as_ref() {
                "true" => all = true,
                "false" => all = false,
                _ => return Err(bad("`all` must be true or false")),
            },
            "limit" => match value.parse::<u32>() {
                Ok(n @ 1..=1000) => page.limit = n,
                _ => return Err(bad("`limit` must be an integer from 1 to 1000")),
            },
            "page_cursor" => page.after = Some(cursor::from_query(&value)?),
            _ => {}
        }
    }
    Ok(all.then_some(page))
}

/// The page size of `all=true` without a `limit`.
const DEFAULT_TOKEN_PAGE: u32 = 100;

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
    let id = uuid_path(id)?;
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
