//! What every provider sign-in shares (docs/api.md section 8, "Provider sign-in"): the
//! one-time flow bound to the browser that started it, and the end of the sign-in once a
//! provider vouched for an email. The protocols (OpenID Connect, SAML) sit on top.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use ferrozone_domain::service::providers::{ProviderSignIn, ReturningFlow, FLOW_SECS};
use zeroize::Zeroizing;

use super::{cookies, html, local_path, redirect, same_secret};
use crate::error::ApiError;
use crate::AppState;

/// A flow just started: its `state` (to send to the provider) and the cookie that binds
/// it to this browser (to set on the response that leaves for the provider).
pub struct Started {
    pub state: Zeroizing<String>,
    pub cookie: HeaderValue,
}

/// Starts a sign-in with `provider_id`, remembering `secrets` (sealed) and where to go
/// afterwards (`return_to`, kept only if it is a local path).
pub async fn begin(app: &AppState, provider_id: &str, secrets: &[u8], return_to: &str) -> Result<Started, ApiError> {
    let state = app.domain.begin_sign_in_flow(provider_id, secrets, local_path(return_to)).await?;
    let max_age = u64::try_from(FLOW_SECS).unwrap_or(600);
    let cookie = cookies::set(cookies::FLOW, &state, cookies::FLOW_PATH, max_age, app.web.secure_cookies);
    Ok(Started { state, cookie })
}

/// The flow named by `state`, if this browser started it (its flow cookie holds the same
/// `state`) and it is still pending. Taking it ends it, whatever follows.
pub async fn take(
    app: &AppState,
    headers: &HeaderMap,
    provider_id: &str,
    state: &str,
) -> Result<Option<ReturningFlow>, ApiError> {
    if !same_secret(cookies::get(headers, cookies::FLOW), state) {
        return Ok(None);
    }
    Ok(app.domain.take_sign_in_flow(provider_id, state).await?)
}

/// Signs in the user with `email`, which the provider `provider_id` proved, and answers the
/// browser: to `return_to` with a session cookie, or a 403 page saying why not.
pub async fn finish(
    app: &AppState,
    headers: &HeaderMap,
    provider_id: &str,
    auto_create: bool,
    email: &str,
    return_to: &str,
) -> Result<Response, ApiError> {
    let outcome = app.domain.sign_in_with_provider(provider_id, email, auto_create).await?;
    respond(app, headers, outcome, email, return_to).await
}

/// The answer to a provider sign-in that came to `outcome` (see [`finish`]), for a protocol
/// that needs the outcome itself first (OpenID Connect keeps the user's refresh token).
pub async fn respond(
    app: &AppState,
    headers: &HeaderMap,
    outcome: ProviderSignIn,
    email: &str,
    return_to: &str,
) -> Result<Response, ApiError> {
    let secure = app.web.secure_cookies;
    let mut response = match outcome {
        ProviderSignIn::SignedIn(session) => {
            if let Some(previous) = cookies::get_host(headers, cookies::SESSION, secure) {
                app.domain.sign_out(previous).await?;
            }
            let max_age = u64::from(app.domain.settings().session_hours) * 3600;
            let mut response = redirect(local_path(return_to));
            let cookie = cookies::set(cookies::SESSION, &session.secret, "/", max_age, secure);
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }
        ProviderSignIn::NotAllowed => refused(
            "Not allowed",
            &format!(
                "{email} has no account here, and this sign-in provider may not create accounts. \
                 Ask an administrator to add you."
            ),
        ),
        ProviderSignIn::Disabled => {
            refused("Account disabled", "This account is disabled. Ask an administrator to enable it.")
        }
    };
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::FLOW, cookies::FLOW_PATH, secure));
    Ok(response)
}

/// A 403 page: the provider sign-in cannot go on (`title`), and why (`text`).
pub fn refused(title: &str, text: &str) -> Response {
    html::response(StatusCode::FORBIDDEN, html::message(title, text))
}

/// 303 See Other to the identity provider at `url`, carrying `cookie` (the flow's);
/// `None` when `url` cannot be a `Location` header.
pub fn to_provider(url: &str, cookie: HeaderValue) -> Option<Response> {
    let location = HeaderValue::from_str(url).ok()?;
    let mut response = html::response(StatusCode::SEE_OTHER, String::new());
    response.headers_mut().insert(header::LOCATION, location);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Some(response)
}

/// The page for a provider id that is not configured (404).
pub fn unknown_provider() -> Response {
    html::response(StatusCode::NOT_FOUND, html::message("Unknown sign-in provider", "No such sign-in provider."))
}

/// The page for a provider sign-in that came back without a usable flow: never started
/// here, already used, expired, or started in another browser.
pub fn unknown_flow() -> Response {
    let text = "This sign-in is not pending in this browser (it expired, was already used, or was \
                started elsewhere). Please sign in again.";
    html::response(StatusCode::BAD_REQUEST, html::message("Sign-in expired", text))
}
