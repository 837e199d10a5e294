//! Two-factor sign-in (TOTP) through the API (docs/design/sign-in.md, "Two-factor sign-in"):
//! `/v0/me/totp` for the caller's own authenticator, `/v0/users/{id}/totp` for an admin's
//! view and reset. The same use cases as the account page; codes sent here count against
//! the account's sign-in throttle, as on the page.

use std::net::IpAddr;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrozone_domain::service::totp::{RecoveryCodes, TotpStatus, WRONG_CODE};
use ferrozone_domain::{DomainError, Errors, Principal};
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::Time;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, ClientAddr, JsonObject, PathId};
use ferrozone_http::throttled::throttled;
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(my_totp, start_totp, turn_off_totp))
        .routes(routes!(confirm_totp))
        .routes(routes!(new_recovery_codes))
        .routes(routes!(user_totp, reset_user_totp))
}

/// A user's two-factor sign-in.
#[derive(Serialize, ToSchema)]
pub struct TotpStatusDto {
    /// An authenticator is set up and confirmed (a pending set-up does not count).
    pub enrolled: bool,
    /// When it was confirmed; `null` when not enrolled.
    pub since: Option<Time>,
    /// Unused recovery codes.
    pub recovery_codes_left: u32,
    /// Whether the server requires it of this user (`require_totp`).
    pub required: bool,
}

impl From<TotpStatus> for TotpStatusDto {
    fn from(s: TotpStatus) -> Self {
        Self {
            enrolled: s.enrolled,
            since: s.since.map(Time),
            recovery_codes_left: s.recovery_codes_left,
            required: s.required,
        }
    }
}

/// `{"data": status}`
#[derive(Serialize, ToSchema)]
pub struct TotpStatusData {
    pub data: TotpStatusDto,
}

/// An authenticator being set up: shown this once.
#[derive(Serialize, ToSchema)]
pub struct TotpEnrolmentDto {
    /// The secret in base32, to type into an app.
    #[schema(example = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")]
    pub secret: String,
    /// The `otpauth://totp/...` URI, for a QR code.
    pub uri: String,
}

/// `{"data": enrolment}`
#[derive(Serialize, ToSchema)]
pub struct TotpEnrolmentData {
    pub data: TotpEnrolmentDto,
}

/// Fresh recovery codes: shown this once.
#[derive(Serialize, ToSchema)]
pub struct RecoveryCodesDto {
    #[schema(example = json!(["abcde-fghij"]))]
    pub recovery_codes: Vec<String>,
}

/// `{"data": {"recovery_codes": [...]}}`
#[derive(Serialize, ToSchema)]
pub struct RecoveryCodesData {
    pub data: RecoveryCodesDto,
}

/// A current code from the authenticator app.
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only: the body is read as a JSON object
pub struct TotpCode {
    #[schema(example = "123456")]
    code: String,
}

/// A current code (or a recovery code), or the password.
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only
pub struct TotpProof {
    code: Option<String>,
    password: Option<String>,
}

/// Show my two-factor sign-in
#[utoipa::path(get, path = "/v0/me/totp", tag = "totp",
    responses(
        (status = 200, body = TotpStatusData),
        crate::responses::ItemErrors,
    ))]
async fn my_totp(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let user = app.domain.acting_user(&actor).await?;
    let status = app.domain.totp_status(&user).await?;
    Ok(reply::json(StatusCode::OK, &TotpStatusData { data: status.into() }))
}

/// Start setting up an authenticator
///
/// Makes a new secret (replacing a set-up never confirmed) and answers it, this once; it
/// counts only once `POST /v0/me/totp/confirm` sees a code from it. 422 when one is set up.
#[utoipa::path(post, path = "/v0/me/totp", tag = "totp",
    responses(
        (status = 201, body = TotpEnrolmentData),
        crate::responses::BodyErrors,
    ))]
async fn start_totp(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let user = app.domain.acting_user(&actor).await?;
    let enrolment = app.domain.start_totp(&user).await?;
    let data = TotpEnrolmentDto { secret: enrolment.secret.to_string(), uri: enrolment.uri.to_string() };
    Ok(reply::json(StatusCode::CREATED, &TotpEnrolmentData { data }))
}

/// Confirm the authenticator
///
/// With a current `code` from it; answers the 10 recovery codes, this once. A wrong code
/// is 422, too many wrong codes 429.
#[utoipa::path(post, path = "/v0/me/totp/confirm", tag = "totp",
    request_body = TotpCode,
    responses(
        (status = 200, body = RecoveryCodesData),
        (status = 429, description = "Too many wrong codes; see `Retry-After`", body = crate::dto::ErrorBody),
        crate::responses::BodyErrors,
    ))]
async fn confirm_totp(
    State(app): State<AppState>,
    Auth(actor): Auth,
    ClientAddr(address): ClientAddr,
    body: JsonObject,
) -> Result<Response, ApiError> {
    with_code(&app, &actor, address, body, CodeStep::Confirm).await
}

/// Make new recovery codes
///
/// With a current `code`; the new codes replace all the old ones and are answered this once.
#[utoipa::path(post, path = "/v0/me/totp/recovery_codes", tag = "totp",
    request_body = TotpCode,
    responses(
        (status = 200, body = RecoveryCodesData),
        (status = 429, description = "Too many wrong codes; see `Retry-After`", body = crate::dto::ErrorBody),
        crate::responses::BodyErrors,
    ))]
async fn new_recovery_codes(
    State(app): State<AppState>,
    Auth(actor): Auth,
    ClientAddr(address): ClientAddr,
    body: JsonObject,
) -> Result<Response, ApiError> {
    with_code(&app, &actor, address, body, CodeStep::NewRecoveryCodes).await
}

/// What a current `code` proves on the caller's own authenticator; either way the answer
/// is a fresh set of recovery codes.
#[derive(Clone, Copy)]
enum CodeStep {
    /// The authenticator being set up is the caller's: it now counts.
    Confirm,
    /// The old recovery codes are replaced.
    NewRecoveryCodes,
}

/// `step` proven by the `code` in `body`, counted against the account's sign-in throttle:
/// the new recovery codes, a wrong code 422, too many wrong codes 429.
async fn with_code(
    app: &AppState,
    actor: &Principal,
    address: IpAddr,
    body: JsonObject,
    step: CodeStep,
) -> Result<Response, ApiError> {
    let code = text(&body.object()?, "code");
    let user = app.domain.acting_user(actor).await?;
    let check = async {
        match step {
            CodeStep::Confirm => app.domain.confirm_totp(user.id, &code).await,
            CodeStep::NewRecoveryCodes => app.domain.new_recovery_codes(user.id, &code).await,
        }
    };
    match throttled(app, &user, address, check).await? {
        Ok(Some(codes)) => Ok(codes_reply(codes)),
        Ok(None) => Err(wrong_code()),
        Err(refused) => Ok(too_many(refused.retry_after_secs())),
    }
}

/// Turn my two-factor sign-in off
///
/// Proven by a current `code` (or a recovery code) or the `password`; 422 when neither is
/// right, 403 while the server requires two-factor sign-in of the caller.
#[utoipa::path(delete, path = "/v0/me/totp", tag = "totp",
    request_body = TotpProof,
    responses(
        (status = 204, description = "Turned off"),
        (status = 429, description = "Too many wrong codes; see `Retry-After`", body = crate::dto::ErrorBody),
        crate::responses::BodyErrors,
    ))]
async fn turn_off_totp(
    State(app): State<AppState>,
    Auth(actor): Auth,
    ClientAddr(address): ClientAddr,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let sent = body.object()?;
    let (code, password) = (text(&sent, "code"), text(&sent, "password"));
    let user = app.domain.acting_user(&actor).await?;
    let nonempty = |s: &str| -> Option<String> { (!s.is_empty()).then(|| s.to_owned()) };
    let (code, password) = (nonempty(&code), nonempty(&password));
    let proof = async {
        let proven = app.domain.turn_off_totp(&user, code.as_deref(), password.as_deref()).await?;
        Ok::<_, DomainError>(proven.then_some(()))
    };
    match throttled(&app, &user, address, proof).await? {
        Ok(Some(())) => Ok(StatusCode::NO_CONTENT.into_response()),
        Ok(None) => Err(ApiError::Invalid(Errors::one("code", "or password is incorrect"))),
        Err(refused) => Ok(too_many(refused.retry_after_secs())),
    }
}

/// Show a user's two-factor sign-in
///
/// Admins only.
#[utoipa::path(get, path = "/v0/users/{id}/totp", tag = "totp",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 200, body = TotpStatusData),
        crate::responses::ItemErrors,
    ))]
async fn user_totp(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    let user = app.domain.get_user(&actor, &user_key(id)?).await?;
    let status = app.domain.totp_status_of(&actor, user.id).await?;
    Ok(reply::json(StatusCode::OK, &TotpStatusData { data: status.into() }))
}

/// Reset a user's two-factor sign-in
///
/// Admins only: removes the authenticator and recovery codes of a user who lost them. The
/// user's sessions go on; their next password sign-in needs no code (or, when the server
/// requires one, sets a new authenticator up).
#[utoipa::path(delete, path = "/v0/users/{id}/totp", tag = "totp",
    params(("id" = String, Path, description = "User UUID or email")),
    responses(
        (status = 204, description = "Reset"),
        crate::responses::ItemErrors,
    ))]
async fn reset_user_totp(State(app): State<AppState>, Auth(actor): Auth, id: PathId) -> Result<Response, ApiError> {
    let user = app.domain.get_user(&actor, &user_key(id)?).await?;
    app.domain.reset_totp(&actor, user.id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn user_key(id: PathId) -> Result<String, ApiError> {
    id.map(|Path(key)| key).map_err(|_| ApiError::NotFound)
}

/// The string under `key`, or `""` (a missing or non-string value is a wrong code).
fn text(sent: &Map<String, Value>, key: &str) -> String {
    sent.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn wrong_code() -> ApiError {
    ApiError::Invalid(Errors::one("code", WRONG_CODE))
}

fn codes_reply(codes: RecoveryCodes) -> Response {
    let recovery_codes = codes.0.iter().map(|c| c.to_string()).collect();
    reply::json(StatusCode::OK, &RecoveryCodesData { data: RecoveryCodesDto { recovery_codes } })
}

/// 429 with `Retry-After`: the account used its attempts for now.
fn too_many(retry_after: u64) -> Response {
    let body = json!({"error": "too_many_requests", "message": "too many wrong codes; try again later"});
    let mut response = reply::json(StatusCode::TOO_MANY_REQUESTS, &body);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}
