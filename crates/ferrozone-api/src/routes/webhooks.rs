//! `/v0/webhooks`: endpoints that receive the audit events, admin only (docs/api.md
//! section 5e, docs/operations.md "Webhooks").

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::service::webhooks::WithSecret;
use ferrozone_domain::webhook::validate::{NewWebhook, WebhookChanges};
use ferrozone_domain::webhook::{Attempt, LastAttempt, Webhook};
use serde::Serialize;
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
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
        .routes(routes!(list_webhook_attempts))
}

/// A webhook endpoint. Its secret is shown only in the answer that set it.
#[derive(Serialize, ToSchema)]
pub struct WebhookDto {
    pub id: Uuid,
    #[schema(example = "https://hooks.example.com/ferrozone")]
    pub url: String,
    /// The actions and prefixes sent; empty: every event.
    #[schema(example = json!(["device.", "user.deleted"]))]
    pub events: Vec<String>,
    pub enabled: bool,
    /// The seq of the last event handled (delivered, filtered out or given up).
    pub delivered_seq: i64,
    /// Roughly how many events are still to be handled.
    pub pending: i64,
    /// Since when the current event keeps failing; `null` while all is well.
    pub failing_since: Option<Time>,
    pub last_attempt: Option<LastAttempt>,
    /// The signing secret: only in the answer to a create, or to an update that rotated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub inserted_at: Time,
    pub updated_at: Time,
}

impl From<Webhook> for WebhookDto {
    fn from(w: Webhook) -> Self {
        Self {
            id: w.id,
            url: w.url,
            events: w.events,
            enabled: w.enabled,
            delivered_seq: w.delivered_seq,
            pending: w.pending,
            failing_since: w.failing_since.map(Time),
            last_attempt: w.last_attempt,
            secret: None,
            inserted_at: Time(w.inserted_at),
            updated_at: Time(w.updated_at),
        }
    }
}

impl From<WithSecret> for WebhookDto {
    fn from(w: WithSecret) -> Self {
        Self { secret: w.secret.map(|s| s.as_str().to_owned()), ..w.webhook.into() }
    }
}

/// `{"data": webhook}`
#[derive(Serialize, ToSchema)]
pub struct WebhookData {
    pub data: WebhookDto,
}

/// `{"data": [webhooks…]}`
#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub data: Vec<WebhookDto>,
}

/// `{"data": [attempts…]}`, newest first.
#[derive(Serialize, ToSchema)]
pub struct AttemptList {
    pub data: Vec<Attempt>,
}

/// List webhooks
#[utoipa::path(get, path = "/v0/webhooks", tag = "webhooks",
    responses(
        (status = 200, body = WebhookList),
        crate::responses::AdminErrors,
    ))]
async fn list_webhooks(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let webhooks = app.domain.list_webhooks(&actor).await?;
    Ok(reply::json(StatusCode::OK, &WebhookList { data: webhooks.into_iter().map(WebhookDto::from).collect() }))
}

/// Create a webhook
///
/// The endpoint receives the audit events committed from now on. The answer carries the
/// signing secret (given, or generated when absent); no later answer shows it.
#[utoipa::path(post, path = "/v0/webhooks", tag = "webhooks",
    request_body = crate::wire::WebhookEnvelope,
    responses(
        (status = 201, body = WebhookData, headers(("location" = String, description = "/v0/webhooks/{id}"))),
        crate::responses::BodyErrors,
    ))]
async fn create_webhook(
    State(app): State<AppState>,
    Auth(actor): Auth,
    body: JsonObject,
) -> Result<Response, ApiError> {
    // Authorization before validation: an unprivileged caller gets 403 whatever it sent.
    actor.require_admin()?;
    let input: NewWebhook = body.read()?;
    let created = app.domain.create_webhook(&actor, &input).await?;
    let location = format!("/v0/webhooks/{}", created.webhook.id);
    Ok(reply::created(location, &WebhookData { data: created.into() }))
}

/// Show a webhook
#[utoipa::path(get, path = "/v0/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook UUID")),
    responses(
        (status = 200, body = WebhookData),
        crate::responses::ItemErrors,
    ))]
async fn get_webhook(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let webhook = app.domain.get_webhook(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &WebhookData { data: webhook.into() }))
}

/// Update a webhook
///
/// A partial update: omitted attributes keep their value. `rotate_secret: true` generates a
/// new secret, shown in this answer only. Any update makes a failing endpoint due at once.
#[utoipa::path(patch, path = "/v0/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook UUID")),
    request_body = crate::wire::WebhookEnvelope,
    responses(
        (status = 200, body = WebhookData),
        crate::responses::ItemBodyErrors,
    ))]
async fn update_webhook(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
    body: JsonObject,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let id = uuid_path(id)?;
    let changes: WebhookChanges = body.read()?;
    let updated = app.domain.update_webhook(&actor, id, &changes).await?;
    Ok(reply::json(StatusCode::OK, &WebhookData { data: updated.into() }))
}

/// Delete a webhook
#[utoipa::path(delete, path = "/v0/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook UUID")),
    responses(
        (status = 204, description = "Deleted"),
        crate::responses::ItemErrors,
    ))]
async fn delete_webhook(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    app.domain.delete_webhook(&actor, uuid_path(id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List a webhook's last delivery attempts
///
/// The last 100, newest first: each with the event's seq, the outcome (`delivered`,
/// `failed`, `refused_address`, `gave_up`), the receiver's status and the error.
#[utoipa::path(get, path = "/v0/webhooks/{id}/attempts", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook UUID")),
    responses(
        (status = 200, body = AttemptList),
        crate::responses::ItemErrors,
    ))]
async fn list_webhook_attempts(
    State(app): State<AppState>,
    Auth(actor): Auth,
    id: PathId,
) -> Result<Response, ApiError> {
    actor.require_admin()?;
    let attempts = app.domain.webhook_attempts(&actor, uuid_path(id)?).await?;
    Ok(reply::json(StatusCode::OK, &AttemptList { data: attempts }))
}
