//! `/v0/me`: the caller's own account, for any signed-in caller or token, whatever its
//! role (docs/api.md, "The caller's own account"): who it is, changing its password,
//! ending its sessions. The account page (`/account`) offers the same actions.

use std::borrow::Cow;

use axum::extract::State;
use axum::http::header::AUTHORIZATION;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrozone_domain::input::PasswordChange;
use ferrozone_domain::DomainError;
use serde_json::json;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::dto::UserData;
use crate::wire::{Attr, Reader};
use ferrozone_domain::service::throttle::Refused;
use ferrozone_http::cookies;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::{Auth, ClientAddr, JsonObject};
use ferrozone_http::throttled::throttled_message;
use ferrozone_http::{reply, AppState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_me)).routes(routes!(change_password)).routes(routes!(sign_out_everywhere))
}

/// Show the caller's user
///
/// The user behind the token or session, in the shape of `/v0/users`.
#[utoipa::path(get, path = "/v0/me", tag = "me",
    responses(
        (status = 200, body = UserData),
        (status = 401, body = crate::dto::AuthErrors),
        (status = 403, description = "A caller without a user", body = crate::dto::ErrorBody),
    ))]
async fn get_me(State(app): State<AppState>, Auth(actor): Auth) -> Result<Response, ApiError> {
    let user = app.domain.own_user(&actor).await?;
    Ok(reply::json(StatusCode::OK, &UserData { data: user.into() }))
}

/// Change the caller's password
///
/// With the current password. Every browser session of the user then ends, but the one
/// making the request (when it is made through a session); API tokens stay. A wrong
/// current password counts as a failed sign-in of the account: too many, and the answer is
/// 429 with `Retry-After`, as on the sign-in page. A user of an identity provider has no
/// password here: 403.
#[utoipa::path(post, path = "/v0/me/password", tag = "me",
    request_body = PasswordChangeBody,
    responses(
        (status = 204, description = "Changed"),
        (status = 400, description = "Not a JSON object", body = crate::dto::ErrorBody),
        (status = 401, body = crate::dto::AuthErrors),
        (status = 403, description = "A user without a password here, or a caller without a user", body = crate::dto::ErrorBody),
        (status = 413, body = crate::dto::ErrorBody), (status = 415, body = crate::dto::ErrorBody),
        (status = 422, description = "Invalid fields; a wrong current password is `current_password: [\"is not correct\"]`",
            body = crate::dto::ValidationErrors),
        (status = 429, description = "Too many failed attempts for this account", body = crate::dto::ErrorBody,
            headers(("retry-after" = u64, description = "Seconds to wait"))),
        (status = 503, description = "Password checks are at capacity", body = crate::dto::ErrorBody),
    ))]
async fn change_password(
    State(app): State<AppState>,
    Auth(actor): Auth,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let input = Reader::parse(body.object()?, read_password_change);
    let keep = caller_session(&app, &headers).await?;
    match app.domain.change_own_password_throttled(&actor, address, &input, keep).await? {
        Ok(()) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(refused) => Ok(throttled(refused)),
    }
}

/// Sign out everywhere
///
/// Ends every browser session of the caller's user, the caller's own included (its cookie
/// is cleared). API tokens stay.
#[utoipa::path(delete, path = "/v0/me/sessions", tag = "me",
    responses(
        (status = 204, description = "Every session ended"),
        (status = 401, body = crate::dto::AuthErrors),
        (status = 403, description = "A caller without a user", body = crate::dto::ErrorBody),
    ))]
async fn sign_out_everywhere(
    State(app): State<AppState>,
    Auth(actor): Auth,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    app.domain.sign_out_everywhere_as(&actor).await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    if !headers.contains_key(AUTHORIZATION) {
        let cleared = cookies::clear(cookies::SESSION, "/", app.web.secure_cookies);
        response.headers_mut().append(header::SET_COOKIE, cleared);
    }
    Ok(response)
}

/// 429 with `Retry-After`.
fn throttled(refused: Refused) -> Response {
    let body = json!({"error": "too_many_requests", "message": throttled_message(refused)});
    let mut response = reply::json(StatusCode::TOO_MANY_REQUESTS, &body);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(refused.retry_after_secs()));
    response
}

/// The id of the session making the request, when it is made through one (no
/// `Authorization` header): the session a password change keeps.
async fn caller_session(app: &AppState, headers: &HeaderMap) -> Result<Option<Uuid>, DomainError> {
    if headers.contains_key(AUTHORIZATION) {
        return Ok(None);
    }
    let Some(secret) = cookies::get_host(headers, cookies::SESSION, app.web.secure_cookies) else {
        return Ok(None);
    };
    Ok(app.domain.authenticate_session(secret).await?.ok().map(|session| session.id))
}

const CURRENT_PASSWORD: Attr = Attr::new("current_password").doc("The caller's password now.");
const PASSWORD: Attr = Attr::new("password").doc("The new password, 12–64 characters.");
const PASSWORD_CONFIRMATION: Attr = Attr::new("password_confirmation").doc("The new password again.");

fn read_password_change(r: &mut Reader) -> PasswordChange {
    PasswordChange {
        current_password: r.secret(&CURRENT_PASSWORD).into_value(),
        password: r.secret(&PASSWORD).into_value(),
        password_confirmation: r.secret(&PASSWORD_CONFIRMATION).into_value(),
        wrong_types: r.wrong_types(),
    }
}

/// The body of `POST /v0/me/password`, a plain object (no envelope); its schema is what
/// [`read_password_change`] reads.
pub struct PasswordChangeBody;

impl PartialSchema for PasswordChangeBody {
    fn schema() -> RefOr<Schema> {
        RefOr::T(Reader::describe("A change of the caller's own password.", read_password_change))
    }
}

impl ToSchema for PasswordChangeBody {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("PasswordChange")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_body_is_read_without_an_envelope() {
        let body = json!({"current_password": "old", "password": 5, "password_confirmation": null});
        let input = Reader::parse(body.as_object().unwrap().clone(), read_password_change);
        assert_eq!(input.current_password.as_deref().map(String::as_str), Some("old"));
        assert!(input.password.is_none() && input.password_confirmation.is_none());
        assert!(input.wrong_types.has("password") && !input.wrong_types.has("password_confirmation"));
        let schema = serde_json::to_value(PasswordChangeBody::schema()).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["current_password", "password", "password_confirmation"]);
    }
}
