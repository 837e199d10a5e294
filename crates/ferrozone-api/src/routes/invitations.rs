//! `/v0/invitations`: single-use sign-in links for new people, admin only
//! (docs/api.md section 5f, docs/design/invitations.md).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ferrozone_domain::service::sign_in_links::{Invitation, NewInvitation};
use ferrozone_domain::sign_in_link::{ListedLink, SignInLink};
use ferrozone_domain::Timestamp;
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
    OpenApiRouter::new().routes(routes!(list_invitations, create_invitation)).routes(routes!(revoke_invitation))
}

/// An invitation. Its link is shown only in the answer to its creation.
#[derive(Serialize, ToSchema)]
pub struct InvitationDto {
    pub id: Uuid,
    /// The invited user.
    pub user_id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// `pending`, `used`, `revoked` or `expired`.
    #[schema(example = "pending")]
    pub status: &'static str,
    /// The administrator who created it.
    pub created_by: Option<Uuid>,
    pub expires_at: Time,
    pub used_at: Option<Time>,
    pub revoked_at: Option<Time>,
    /// What became of its email: `null` when it was not emailed.
    pub email_delivery: Option<DeliveryDto>,
    /// The sign-in link: only in the answer to a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "https://vpn.example.com/sign_in/link/…")]
    pub url: Option<String>,
    /// Whether the user was created for it: only in the answer to a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_created: Option<bool>,
    pub inserted_at: Time,
}

/// The delivery of an invitation's email.
#[derive(Serialize, ToSchema)]
pub struct DeliveryDto {
    /// `queued`, `sent` or `failed` (given up).
    #[schema(example = "sent")]
    pub status: &'static str,
    /// Failed attempts so far.
    pub attempts: i64,
    pub sent_at: Option<Time>,
    /// The SMTP server's last error, while retrying or once given up.
    pub last_error: Option<String>,
}

impl InvitationDto {
    fn new(link: SignInLink, email: String, delivery: Option<DeliveryDto>, now: Timestamp) -> Self {
        Self {
            id: link.id,
            user_id: link.user_id,
            email,
            status: link.status(now).as_str(),
            created_by: link.created_by,
            expires_at: Time(link.expires_at),
            used_at: link.used_at.map(Time),
            revoked_at: link.revoked_at.map(Time),
            email_delivery: delivery,
            url: None,
            user_created: None,
            inserted_at: Time(link.inserted_at),
        }
    }
}

impl From<ListedLink> for InvitationDto {
    fn from(listed: ListedLink) -> Self {
        let now = Timestamp::now();
        let status = listed.status(now).as_str();
        let delivery = listed.delivery.map(|d| DeliveryDto {
            status: if d.sent_at.is_some() {
                "sent"
            } else if d.gave_up_at.is_some() {
                "failed"
            } else {
                "queued"
            },
            attempts: d.attempts,
            sent_at: d.sent_at.map(Time),
            last_error: d.last_error,
        });
        Self { status, ..Self::new(listed.link, listed.email, delivery, now) }
    }
}

impl From<Invitation> for InvitationDto {
    fn from(created: Invitation) -> Self {
        let delivery =
            created.emailed.then_some(DeliveryDto { status: "queued", attempts: 0, sent_at: None, last_error: None });
        Self {
            url: Some(created.url.as_str().to_owned()),
            user_created: Some(created.user_created),
            ..Self::new(created.link, created.email, delivery, Timestamp::now())
        }
    }
}

/// `{"data": invitation}`
#[derive(Serialize, ToSchema)]
pub struct InvitationData {
    pub data: InvitationDto,
}

/// `{"data": [invitations…]}`, newest first.
#[derive(Serialize, ToSchema)]
pub struct InvitationList {
    pub data: Vec<InvitationDto>,
}

/// List invitations
///
/// The newest 500, newest first, whatever their status.
#[utoipa::path(get, path = "/v0/invitations", tag = "invitations",
    responses(
        (status = 200, body = InvitationList),
        crate::responses::AdminErrors,
    ))]
async fn list_invitations(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let listed = app.domain.list_invitations(&actor).await?;
    Ok(reply::json(StatusCode::OK, &InvitationList { data: listed.into_iter().map(InvitationDto::from).collect() }))
}

/// Invite someone
///
/// Creates the user (unprivileged unless `role` says otherwise), or reuses the one with
/// that email, and a single-use sign-in link that expires; the link is emailed when an SMTP
/// server is configured (unless `send_email` is `false`). The answer carries the link
/// (`url`): no later answer shows it. Following it, the person sets a password (or signs in
/// with an identity provider) and lands on "Add a device".
#[utoipa::path(post, path = "/v0/invitations", tag = "invitations",
    request_body = crate::wire::InvitationEnvelope,
    responses(
        (status = 201, body = InvitationData, headers(("location" = String, description = "/v0/invitations"))),
        crate::responses::BodyErrors,
    ))]
async fn create_invitation(
    State(app): State<AppState>,
    Auth(actor): Auth,
    body: JsonObject,
) -> Result<Response, ApiError> {
    // Authorization before validation: an unprivileged caller gets 403 whatever it sent.
    actor.require_admin()?;
    let input: NewInvitation = body.read()?;
    let created = app.domain.invite(&actor, &input, &app.web.external_url).await?;
    Ok(reply::created("/v0/invitations".to_owned(), &InvitationData { data: created.into() }))
}

/// Revoke an invitation
///
/// Its link stops working at once. Only a pending invitation can be revoked: any other
/// answers 404.
#[utoipa::path(delete, path = "/v0/invitations/{id}", tag = "invitations",
    params(("id" = String, Path, description = "Invitation UUID")),
    responses(
        (status = 204, description = "Revoked"),
        crate::responses::ItemErrors,
    ))]
async fn revoke_invitation(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<StatusCode, ApiError> {
    actor.require_admin()?;
    let id = uuid_path(id)?;
    app.domain.revoke_invitation(&actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
